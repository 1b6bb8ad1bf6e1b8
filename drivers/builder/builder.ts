// The classic builder: the context is unpacked, the Dockerfile parsed into stages, and each
// instruction dispatched in order, printing the reference's "Step n/m : ..." lines. Config
// instructions commit an empty layer, RUN runs a container through the backend and commits its
// changes, COPY/ADD write into a scratch rootfs that becomes a layer. Each step looks in the
// cache first. The backend (images, containers) is the daemon's; the layer work is here.
import type { IdMap } from '../../lib/idmap.ts';
import { shortId } from '../../lib/ids.ts';
import type { Readable } from 'node:stream';
import type { Logger } from 'pino';
import type { BuildBackend, BuildImage, BuilderPort, BuildOptions, BuildOutput } from '../../lib/ports/build.ts';
import { EngineError, invalidArgument } from '../../lib/errors.ts';
import { parsePlatform, platformMatches, type Platform } from '../../lib/platform.ts';
import { parseConfig } from './image.ts';
import type { LayerStore } from '../storage/types.ts';
import { BuildArgs } from './build-args.ts';
import { StepCache } from './cache.ts';
import { openContext, type OpenedContext } from './context.ts';
import { dispatchMeta, type MetaInstruction } from './dispatch.ts';
import { parseInstruction, parseStages, type Instruction, type Stage } from './dockerfile/instructions.ts';
import { ShellLex } from './dockerfile/lex.ts';
import { parseDockerfile, type Node } from './dockerfile/parse.ts';
import { initialRunConfig, type StageState } from './state.ts';
import { Steps } from './steps.ts';

export interface BuilderDeps {
  layers: LayerStore;
  log: Logger;
  platform: Platform;
  /** Where build contexts are unpacked. */
  tmpDir: string;
  /** --userns-remap: COPY/ADD's owners are container ids, written as the host ids they are. */
  idMap?: IdMap;
}

export function createBuilder(deps: BuilderDeps): BuilderPort {
  return {
    async build(context, opts, backend, out, signal) {
      const ctx = await openContext(context, { dockerfile: opts.dockerfile || 'Dockerfile', tmpDir: deps.tmpDir, signal });
      try {
        return await new Build(deps, opts, backend, out, signal, ctx).run();
      } finally {
        await ctx.close();
      }
    },
  };
}

class Build {
  private readonly steps: Steps;
  private readonly cache: StepCache;
  private readonly lex: ShellLex;
  /** Finished stages by name and by index, for FROM <stage> and COPY --from. */
  private readonly stages = new Map<string, BuildImage | null>();
  private readonly deps: BuilderDeps;
  private readonly opts: BuildOptions;
  private readonly backend: BuildBackend;
  private readonly out: BuildOutput;
  private readonly signal: AbortSignal;
  private readonly ctx: OpenedContext;
  private readonly parsed: ReturnType<typeof parseDockerfile>;

  constructor(deps: BuilderDeps, opts: BuildOptions, backend: BuildBackend, out: BuildOutput, signal: AbortSignal, ctx: OpenedContext) {
    this.deps = deps;
    this.opts = opts;
    this.backend = backend;
    this.out = out;
    this.signal = signal;
    this.ctx = ctx;
    this.parsed = parseDockerfile(ctx.dockerfile);
    this.lex = new ShellLex(this.parsed.directives.escape);
    // As the reference: a cache source that is not here (or not a valid name) is skipped.
    const sources = opts.cacheFrom.flatMap((ref) => {
      try {
        return backend.findImage(ref) ?? [];
      } catch {
        return [];
      }
    });
    this.cache = new StepCache({
      backend,
      chainIdOf: (parent, diffId) => deps.layers.chainIdOf(parent, diffId),
      addImage: (li, parent) => this.steps.addRestored(li, parent),
    }, opts.noCache, sources, opts.cacheFrom.length > 0);
    this.steps = new Steps({ ...deps, backend, out, signal, opts, cache: this.cache, contextRoot: ctx.root, stageImage: (ref) => this.stageImage(ref) });
  }

  async run(): Promise<string> {
    const { metaArgs, stages: all } = parseStages(this.parsed.instructions);
    let stages = all;
    if (this.opts.target) {
      const i = all.findIndex((s) => s.name === this.opts.target.toLowerCase());
      if (i < 0) throw invalidArgument(`failed to reach build target ${this.opts.target} in Dockerfile`);
      stages = all.slice(0, i + 1);
    }
    if (stages.length === 0) throw invalidArgument('No image was generated. Is your Dockerfile empty?');
    addLabelOptions(stages.at(-1)!, this.opts.labels);
    for (const w of this.parsed.warnings) this.out.stream(`${w}\n`);

    const args = new BuildArgs(this.opts.buildArgs);
    const total = metaArgs.length + stages.reduce((n, s) => n + 1 + s.instructions.length, 0);
    let step = 1;
    const print = (original: string) => this.out.stream(`Step ${step++}/${total} : ${original}\n`);
    for (const meta of metaArgs) {
      print(meta.default === undefined ? `ARG ${meta.name}` : `ARG ${meta.name}=${meta.default}`);
      const metaEnv = args.metaValues();
      const value = meta.default === undefined ? undefined : this.lex.processWord(meta.default, (k) => metaEnv.get(k));
      args.addMeta(meta.name, value);
    }

    let state: StageState | undefined;
    for (const [index, stage] of stages.entries()) {
      if (stage.name && this.stages.has(stage.name)) throw invalidArgument(`duplicate name ${stage.name}`);
      print(stage.node.original);
      args.resetAllowed();
      const base = await this.baseImage(stage, args);
      state = { name: stage.name ?? '', image: base, runConfig: initialRunConfig(base), maintainer: '', cmdSet: false, args };
      this.cache.reset();
      await this.onBuildTriggers(state);
      this.out.stream(` ---> ${state.image ? shortId(state.image.id) : ''}\n`);
      for (const ins of stage.instructions) {
        if (this.signal.aborted) {
          this.out.stream('Build cancelled\n');
          throw new EngineError('Canceled', 'Build cancelled');
        }
        print(ins.node.original);
        await this.dispatch(state, ins);
        this.out.stream(` ---> ${state.image ? shortId(state.image.id) : ''}\n`);
      }
      if (state.image) this.out.aux({ ID: state.image.id });
      this.stages.set(String(index), state.image);
      if (stage.name) this.stages.set(stage.name, state.image);
    }
    const unused = args.unused();
    if (unused.length) this.out.stream(`[Warning] One or more build-args [${unused.join(' ')}] were not consumed\n`);
    if (!state?.image) throw invalidArgument('No image was generated. Is your Dockerfile empty?');
    return state.image.id;
  }

  private async dispatch(state: StageState, ins: Instruction): Promise<void> {
    switch (ins.kind) {
      case 'run':
        return this.steps.run(state, ins);
      case 'copy':
      case 'add':
        return this.steps.copy(state, ins, this.lex);
      default: {
        const comment = dispatchMeta(state, ins as MetaInstruction, this.lex, (s) => this.out.stream(s));
        return this.steps.commitMeta(state, comment, ins.kind === 'workdir');
      }
    }
  }

  /** FROM: an earlier stage, scratch, a local image, or one pulled now. */
  private async baseImage(stage: Stage, args: BuildArgs): Promise<BuildImage | null> {
    const meta = args.metaValues();
    const name = this.lex.processWord(stage.base, (k) => meta.get(k));
    if (name === '') throw invalidArgument(`base name (${stage.base}) should not be blank`);
    const fromStage = this.stages.get(name.toLowerCase());
    if (fromStage !== undefined) return fromStage;
    if (name === 'scratch') return null;
    const platform = stage.platform ? this.lex.processWord(stage.platform, (k) => meta.get(k)) : this.opts.platform;
    const want = platform ? parsePlatform(platform, this.deps.platform) : undefined;
    if (want && want.os !== this.deps.platform.os) throw invalidArgument(`"${platform}": operating system is not supported: ${want.os}`);
    if (!this.opts.pull) {
      // A local image of another platform than the one asked for is pulled for that platform.
      const local = this.backend.findImage(name);
      if (local && (!want || platformMatches(parseConfig(local.rawConfig), want))) return local;
    }
    return this.backend.pullImage(name, platform, this.out, this.signal);
  }

  /** An image or stage named by COPY --from. */
  private async stageImage(ref: string): Promise<BuildImage | null> {
    const st = this.stages.get(ref.toLowerCase());
    if (st !== undefined) return st;
    const local = this.backend.findImage(ref);
    if (local) return local;
    return this.backend.pullImage(ref, this.opts.platform, this.out, this.signal);
  }

  /** The base image's ONBUILD instructions run first, as if written after FROM. */
  private async onBuildTriggers(state: StageState): Promise<void> {
    const triggers = (state.runConfig.OnBuild as string[] | null | undefined) ?? [];
    state.runConfig.OnBuild = null;
    if (triggers.length === 0) return;
    this.out.stream(`# Executing ${triggers.length} build trigger${triggers.length === 1 ? '' : 's'}\n`);
    for (const text of triggers) {
      const nodes = parseDockerfile(text).instructions;
      for (const node of nodes) {
        const ins = parseTrigger(node);
        await this.dispatch(state, ins);
      }
    }
  }
}

function parseTrigger(node: Node): Instruction {
  const parsed = parseInstruction(node);
  if ('base' in parsed) throw invalidArgument("FROM isn't allowed as an ONBUILD trigger");
  return parsed;
}

/** The `labels` option: LABEL instructions added to the last stage, in key order. */
function addLabelOptions(stage: Stage, labels: Record<string, string>): void {
  for (const key of Object.keys(labels).sort()) {
    const value = labels[key];
    const original = `LABEL ${JSON.stringify(key)}=${JSON.stringify(value)}`;
    const node: Node = { ...stage.node, cmd: 'label', name: 'LABEL', original, flags: [], args: [], json: false };
    // Already final values: quoted so the expansion step leaves them as they are.
    stage.instructions.push({ kind: 'label', pairs: [{ key: quoteWord(key), value: quoteWord(value) }], node });
  }
}

const quoteWord = (s: string): string => `'${s.replace(/'/g, `'"'"'`)}'`;

export type { Readable };

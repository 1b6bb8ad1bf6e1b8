// The steps that make an image: a config instruction's empty layer, RUN (a container run through
// the backend, its changes committed) and COPY/ADD (files written into a scratch rootfs on top of
// the current image, its changes committed). Each looks in the cache first.
import type { IdMap } from '../../lib/idmap.ts';
import { shortId } from '../../lib/ids.ts';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { BuildBackend, BuildImage, BuildOptions, BuildOutput } from '../../lib/ports/build.ts';
import { EngineError, invalidArgument } from '../../lib/errors.ts';
import { commitLayer } from '../image/commit.ts';
import type { Platform } from '../../lib/platform.ts';
import type { LayerInfo, LayerStore } from '../storage/types.ts';
import type { LoadedImageLike, StepCache } from './cache.ts';
import { imageIdOf } from '../image/load-plan.ts';
import type { LoadedImage } from '../../lib/ports/images.ts';
import { copyInto, resolveSources, sourcesChecksum } from './copy.ts';
import type { Instruction } from './dockerfile/instructions.ts';
import { downloadSources, isUrl } from './fetch-url.ts';
import type { ShellLex } from './dockerfile/lex.ts';
import { stepImage } from './image.ts';
import { SCRATCH_PREFIX } from './scratch.ts';
import { buildArgsEnv, expansionEnv, shellOf, type Config, type StageState } from './state.ts';
import type { BuildArgs } from './build-args.ts';

type RunInstruction = Extract<Instruction, { kind: 'run' }>;
type CopyInstruction = Extract<Instruction, { kind: 'copy' | 'add' }>;

export interface StepDeps {
  layers: LayerStore;
  /** --userns-remap (BuilderDeps.idMap). */
  idMap?: IdMap;
  log: Logger;
  platform: Platform;
  backend: BuildBackend;
  out: BuildOutput;
  signal: AbortSignal;
  opts: BuildOptions;
  cache: StepCache;
  contextRoot: string;
  /** Where ADD downloads go. */
  tmpDir: string;
  /** The image of a stage (by name or index) or an image by reference, for COPY --from. */
  stageImage(ref: string): Promise<BuildImage | null>;
}

/** A RUN that failed: its exit code travels in the error line, and the CLI exits with it. */
export class RunFailedError extends EngineError {
  readonly exitCode: number;
  constructor(message: string, exitCode: number) {
    super('InvalidArgument', message);
    this.exitCode = exitCode;
  }
}

export class Steps {
  private readonly d: StepDeps;
  constructor(d: StepDeps) {
    this.d = d;
  }

  /** A config instruction: an image with no new layer (unless the cache has it). */
  async commitMeta(state: StageState, comment: string, oneArg: boolean): Promise<void> {
    const shell = shellOf(state.runConfig);
    const cc: Config = { ...state.runConfig, Cmd: oneArg ? [...shell, `#(nop) ${comment}`] : [...shell, '#(nop) ', comment] };
    if (await this.fromCache(state, cc)) return;
    await this.commit(state, null, cc, '');
  }

  async run(state: StageState, ins: RunInstruction): Promise<void> {
    if (!state.image) throw invalidArgument('Please provide a source image with `from` prior to run');
    const cfg = state.runConfig;
    const cmd = ins.shell ? [...shellOf(cfg), ...ins.cmd] : ins.cmd;
    const buildEnv = buildArgsEnv(state);
    const saveCmd = buildEnv.length ? prependEnv(state.args, buildEnv, cmd) : cmd;
    const cc: Config = { ...cfg, Cmd: saveCmd };
    if (await this.fromCache(state, cc)) return;

    const { backend, out, signal, opts } = this.d;
    const runConfig: Config = {
      ...cfg, Cmd: cmd, Env: [...((cfg.Env as string[] | undefined) ?? []), ...buildEnv],
      Entrypoint: cmd.length ? [] : cfg.Entrypoint, Healthcheck: { Test: ['NONE'] }, Image: state.image.id,
      AttachStdout: true, AttachStderr: true, ArgsEscaped: true, Labels: {},
    };
    const id = await backend.createContainer(runConfig, { ...opts.hostConfig }, signal);
    out.stream(` ---> Running in ${shortId(id)}\n`);
    let code: number;
    try {
      code = await backend.runContainer(id, (stream, chunk) => {
        // As the reference: stderr in red.
        out.stream(stream === 'stderr' ? `\u001b[91m${chunk.toString()}\u001b[0m` : chunk.toString());
      }, signal);
    } catch (err) {
      if (opts.forceRemove) await backend.removeContainer(id).catch(() => {});
      throw err;
    }
    if (code !== 0) {
      if (opts.forceRemove) await backend.removeContainer(id).catch(() => {});
      throw new RunFailedError(`The command '${cmd.join(' ')}' returned a non-zero code: ${code}`, code);
    }
    try {
      const layer = await commitLayer(this.d.layers, id, state.image.chainId, signal);
      await this.commit(state, layer, cc, id);
    } finally {
      if (opts.remove || opts.forceRemove) {
        out.stream(`Removing intermediate container ${shortId(id)}\n`);
        await backend.removeContainer(id).catch((err) => this.d.log.warn({ err, container: id }, 'intermediate container not removed'));
      }
    }
  }

  async copy(state: StageState, ins: CopyInstruction, lex: ShellLex): Promise<void> {
    const name = ins.kind === 'copy' ? 'COPY' : 'ADD';
    const env = expansionEnv(state);
    const sources = ins.sources.map((s) => lex.processWord(s, env));
    const dest = lex.processWord(ins.dest, env);
    const chown = ins.chown ? lex.processWord(ins.chown, env) : undefined;
    const from = ins.kind === 'copy' && ins.from ? lex.processWord(ins.from, env) : undefined;
    const urls = sources.filter(isUrl);
    if (urls.length && name === 'COPY') throw invalidArgument("source can't be a URL for COPY");
    if (urls.length && urls.length !== sources.length) throw invalidArgument('ADD of URLs and local files together is not supported: use two ADD instructions');

    await this.withSourceRoot(from, urls, async (srcRoot, names) => {
      const resolved = await resolveSources({ instruction: name, srcRoot, sources: names ?? sources });
      const checksum = await sourcesChecksum(resolved);
      const shell = shellOf(state.runConfig);
      // The owner and mode options are part of what the step does, so part of its cache key.
      const opts = `${chown ? `--chown=${chown} ` : ''}${ins.chmod ? `--chmod=${ins.chmod} ` : ''}`;
      const cc: Config = { ...state.runConfig, Cmd: [...shell, `#(nop) ${name} ${opts}${checksum} in ${dest} `] };
      if (await this.fromCache(state, cc)) return;
      const layer = await this.withRootfs(state.image?.chainId ?? null, (destRoot) => copyInto({
        instruction: name, srcRoot, sources: names ?? sources, dest, workdir: String(state.runConfig.WorkingDir ?? ''), destRoot,
        chown, chmod: ins.chmod, unpack: ins.kind === 'add' && !names, signal: this.d.signal, ...(this.d.idMap ? { idMap: this.d.idMap } : {}),
      }, resolved));
      await this.commit(state, layer, cc, '');
    });
  }

  /**
   * The directory COPY reads from: the context, the rootfs of a stage or image (--from), or the
   * files ADD downloaded (then `fn` gets their names).
   */
  private async withSourceRoot(from: string | undefined, urls: string[], fn: (root: string, names?: string[]) => Promise<void>): Promise<void> {
    if (urls.length) {
      const dir = await mkdtemp(join(this.d.tmpDir, 'build-add-'));
      try {
        return await fn(dir, await downloadSources(urls, dir, this.d.signal));
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    }
    if (from === undefined) return fn(this.d.contextRoot);
    const img = await this.d.stageImage(from);
    const { layers } = this.d;
    const id = `${SCRATCH_PREFIX}src-${randomBytes(8).toString('hex')}`;
    await layers.createRW(id, img?.chainId ?? null);
    try {
      await fn(await layers.mountRW(id));
    } finally {
      await layers.removeRW(id).catch((err) => this.d.log.warn({ err, layer: id }, 'build source rootfs not removed'));
    }
  }

  /** A writable rootfs on top of `parentChain`; what `fn` changes in it becomes a layer (null: nothing). */
  private async withRootfs(parentChain: string | null, fn: (root: string) => Promise<void>): Promise<LayerInfo | null> {
    const { layers } = this.d;
    const id = `${SCRATCH_PREFIX}${randomBytes(8).toString('hex')}`;
    await layers.createRW(id, parentChain);
    try {
      await fn(await layers.mountRW(id));
      await layers.unmountRW(id);
      return await commitLayer(layers, id, parentChain, this.d.signal);
    } finally {
      await layers.removeRW(id).catch((err) => this.d.log.warn({ err, layer: id }, 'build rootfs not removed'));
    }
  }

  private async fromCache(state: StageState, cc: Config): Promise<boolean> {
    const hit = await this.d.cache.probe(state.image, cc, state.runConfig);
    if (!hit) return false;
    this.d.out.stream(' ---> Using cache\n');
    state.image = hit;
    return true;
  }

  /** An image the cache restored from a cache-from source, recorded like a built one. */
  async addRestored(li: LoadedImageLike, parent: BuildImage | null): Promise<BuildImage> {
    const layer = li.chainId && li.chainId !== (parent?.chainId ?? null) ? this.d.layers.get(li.chainId) : undefined;
    const img: LoadedImage = { id: imageIdOf(li.rawConfig), ...li, size: (parent?.size ?? 0) + (layer?.size ?? 0), repoTags: [] };
    await this.d.backend.addImage(img, parent?.id ?? '', this.d.signal);
    return { id: img.id, rawConfig: img.rawConfig, diffIds: img.diffIds, chainId: img.chainId, size: img.size, parent: parent?.id ?? '' };
  }

  private async commit(state: StageState, layer: LayerInfo | null, cc: Config, containerId: string): Promise<void> {
    const li = stepImage({
      parent: state.image, layer, config: state.runConfig, containerConfig: cc, containerId,
      author: state.maintainer, platform: this.d.platform,
    });
    await this.d.backend.addImage(li, state.image?.id ?? '', this.d.signal);
    state.image = { id: li.id, rawConfig: li.rawConfig, diffIds: li.diffIds, chainId: li.chainId, size: li.size, parent: state.image?.id ?? '' };
  }
}

/** RUN's cache key carries the build args it ran with: `|N k=v ... cmd` (sorted, builtins left out). */
function prependEnv(args: BuildArgs, env: string[], cmd: string[]): string[] {
  const kept = env.filter((e) => !args.isUnreferencedBuiltin(e.split('=')[0])).sort();
  return [`|${kept.length}`, ...kept, ...cmd];
}

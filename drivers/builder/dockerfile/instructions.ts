// Nodes → typed instructions and build stages, with the reference's (instructions.Parse) checks
// and messages. An error in one instruction reads "dockerfile parse error on line N: <why>".
import { DockerfileError, withSuggestion } from './errors.ts';
import { parseGoDuration } from '../../../lib/units.ts';
import { parseFlags, type FlagKind } from './flags.ts';
import type { Node } from './parse.ts';

export type KeyValue = { key: string; value: string };
export type ArgDef = { name: string; default?: string };
export type Healthcheck = { test: string[]; interval: number; timeout: number; startPeriod: number; startInterval: number; retries: number };
type CopyFields = { sources: string[]; dest: string; chown?: string; chmod?: string; link: boolean; exclude: string[] };

// `node` keeps the location and original text for progress output and ONBUILD.
export type Instruction = { node: Node } & (
  | { kind: 'run'; cmd: string[]; shell: boolean; flagsUsed: string[]; mounts: string[]; network?: string; security?: string }
  | { kind: 'cmd' | 'entrypoint'; cmd: string[]; shell: boolean }
  | { kind: 'shell'; shell: string[] }
  | ({ kind: 'copy'; from?: string; parents: boolean } & CopyFields)
  | ({ kind: 'add'; checksum?: string; keepGitDir?: boolean; unpack?: boolean } & CopyFields)
  | { kind: 'env' | 'label'; pairs: KeyValue[] }
  | { kind: 'arg'; args: ArgDef[] }
  | { kind: 'workdir' | 'user' | 'maintainer' | 'stopsignal'; value: string }
  | { kind: 'expose'; ports: string[] }
  | { kind: 'volume'; volumes: string[] }
  | { kind: 'healthcheck'; health: Healthcheck | { test: ['NONE'] } }
  | { kind: 'onbuild'; expression: string }
);

export interface Stage { name?: string; base: string; platform?: string; node: Node; instructions: Instruction[] }
export interface ParsedStages { metaArgs: ArgDef[]; stages: Stage[] }

const NAMES = ['add', 'arg', 'cmd', 'copy', 'entrypoint', 'env', 'expose', 'from', 'healthcheck', 'label',
  'maintainer', 'onbuild', 'run', 'shell', 'stopsignal', 'user', 'volume', 'workdir'];
const VALID_STAGE_NAME = /^[a-z][a-z0-9-_.]*$/;

export function parseStages(nodes: Node[]): ParsedStages {
  const out: ParsedStages = { metaArgs: [], stages: [] };
  for (const node of nodes) {
    let parsed: Stage | Instruction;
    try {
      parsed = parseInstruction(node);
    } catch (err) {
      throw new DockerfileError(`dockerfile parse error on line ${node.startLine}: ${(err as Error).message}`, node.startLine, node.endLine);
    }
    if ('base' in parsed) {
      out.stages.push(parsed);
    } else if (out.stages.length === 0 && parsed.kind === 'arg') {
      out.metaArgs.push(...parsed.args);
    } else {
      const stage = out.stages.at(-1);
      // Not prefixed with the line: the reference attaches the location without rewording.
      if (!stage) throw new DockerfileError('no build stage in current context', node.startLine, node.endLine);
      stage.instructions.push(parsed);
    }
  }
  return out;
}

export function parseInstruction(node: Node): Stage | Instruction {
  const { args } = node;
  const flags = (spec: Record<string, FlagKind> = {}) => parseFlags(node.flags, spec);
  switch (node.cmd) {
    case 'from': {
      const name = stageName(args);
      const f = flags({ platform: 'string' });
      return { base: args[0], name, platform: f.strings.platform || undefined, node, instructions: [] };
    }
    case 'env':
    case 'label': {
      flags();
      return { kind: node.cmd, pairs: keyValues(args, node.cmd.toUpperCase()), node };
    }
    case 'maintainer':
    case 'workdir':
    case 'user': {
      if (args.length !== 1) throw new Error(`${node.cmd.toUpperCase()} requires exactly one argument`);
      flags();
      return { kind: node.cmd, value: args[0], node };
    }
    case 'stopsignal':
      // The reference does not look at STOPSIGNAL's flags at all.
      if (args.length !== 1) throw new Error('STOPSIGNAL requires exactly one argument');
      return { kind: 'stopsignal', value: args[0], node };
    case 'copy':
    case 'add':
      return copyOrAdd(node);
    case 'run': {
      const f = flags({ mount: 'strings', network: 'string', security: 'string', device: 'strings' });
      return {
        kind: 'run', ...cmdLine(node), node, flagsUsed: f.used, mounts: f.lists.mount ?? [],
        network: f.strings.network, security: f.strings.security,
      };
    }
    case 'cmd':
    case 'entrypoint':
      flags();
      return { kind: node.cmd, ...cmdLine(node), node };
    case 'shell': {
      flags();
      const { cmd } = cmdLine(node);
      if (cmd.length === 0) throw new Error('SHELL requires at least one argument');
      if (!node.json) throw new Error('SHELL requires the arguments to be in JSON form');
      return { kind: 'shell', shell: cmd, node };
    }
    case 'expose':
      if (args.length === 0) throw new Error('EXPOSE requires at least one argument');
      flags();
      return { kind: 'expose', ports: [...args].sort(), node };
    case 'volume': {
      if (args.length === 0) throw new Error('VOLUME requires at least one argument');
      flags();
      const volumes = args.map((v) => v.trim());
      if (volumes.includes('')) throw new Error('VOLUME specified can not be an empty string');
      return { kind: 'volume', volumes, node };
    }
    case 'arg':
      return { kind: 'arg', args: argDefs(args), node };
    case 'healthcheck':
      return { kind: 'healthcheck', health: healthcheck(node), node };
    case 'onbuild':
      return { kind: 'onbuild', expression: onbuild(node), node };
  }
  throw new Error(withSuggestion(`unknown instruction: ${node.name}`, node.name, NAMES.map((n) => n.toUpperCase()), false));
}

function stageName(args: string[]): string | undefined {
  if (args.length === 3 && args[1].toLowerCase() === 'as') {
    const name = args[2].toLowerCase();
    if (!VALID_STAGE_NAME.test(name)) {
      throw new Error(`invalid name for build stage: ${JSON.stringify(args[2])}, name can't start with a number or contain symbols`);
    }
    return name;
  }
  if (args.length !== 1) throw new Error('FROM requires either one or three arguments');
  return undefined;
}

function keyValues(args: string[], cmd: string): KeyValue[] {
  if (args.length === 0) throw new Error(`${cmd} requires at least one argument`);
  if (args.length % 3 !== 0) throw new Error(`Bad input to ${cmd}, too many arguments`);
  const pairs: KeyValue[] = [];
  for (let i = 0; i < args.length; i += 3) {
    if (args[i] === '') throw new Error(`${cmd} names can not be blank`);
    pairs.push({ key: args[i], value: args[i + 1] });
  }
  return pairs;
}

function argDefs(args: string[]): ArgDef[] {
  if (args.length === 0) throw new Error('ARG requires at least one argument');
  return args.map((arg) => {
    const eq = arg.indexOf('=');
    if (eq < 0) return { name: arg };
    if (eq === 0) throw new Error('ARG names can not be blank');
    return { name: arg.slice(0, eq), default: arg.slice(eq + 1) };
  });
}

// Shell form is one string the builder hands to the SHELL; exec form is kept as written.
function cmdLine(node: Node): { cmd: string[]; shell: boolean } {
  if (node.args.length === 0) return { cmd: [], shell: !node.json };
  return { cmd: node.json ? node.args : [node.args.join(' ')], shell: !node.json };
}

function copyOrAdd(node: Node): Instruction {
  const NAME = node.cmd.toUpperCase();
  if (node.args.length < 2) {
    throw new Error(`${NAME} requires at least two arguments, but only one was provided. Destination could not be determined`);
  }
  const common: Record<string, FlagKind> = { chown: 'string', chmod: 'string', link: 'bool', exclude: 'strings' };
  const f = node.cmd === 'copy'
    ? parseFlags(node.flags, { ...common, from: 'string', parents: 'bool' })
    : parseFlags(node.flags, { ...common, 'keep-git-dir': 'bool', checksum: 'string', unpack: 'bool' });
  const fields: CopyFields = {
    sources: node.args.slice(0, -1), dest: node.args.at(-1) ?? '',
    chown: f.strings.chown || undefined, chmod: f.strings.chmod || undefined,
    link: f.bools.link ?? false, exclude: f.lists.exclude ?? [],
  };
  if (node.cmd === 'copy') return { kind: 'copy', ...fields, from: f.strings.from || undefined, parents: f.bools.parents ?? false, node };
  return {
    kind: 'add', ...fields, checksum: f.strings.checksum || undefined,
    keepGitDir: f.bools['keep-git-dir'], unpack: f.bools.unpack, node,
  };
}

function healthcheck(node: Node): Healthcheck | { test: ['NONE'] } {
  if (node.args.length === 0) throw new Error('HEALTHCHECK requires at least one argument');
  const type = node.args[0].toUpperCase();
  const rest = node.args.slice(1);
  if (type === 'NONE') {
    if (rest.length !== 0) throw new Error('HEALTHCHECK NONE takes no arguments');
    return { test: ['NONE'] };
  }
  const f = parseFlags(node.flags, { interval: 'string', timeout: 'string', 'start-period': 'string', 'start-interval': 'string', retries: 'string' });
  if (type !== 'CMD') throw new Error(`Unknown type ${JSON.stringify(type)} in HEALTHCHECK (try CMD)`);
  const cmd = rest.length === 0 ? [] : node.json ? rest : [rest.join(' ')];
  if (cmd.length === 0) throw new Error('Missing command after HEALTHCHECK CMD');
  const interval = (name: string) => {
    const v = f.strings[name] ?? '';
    if (v === '') return 0;
    const ns = parseGoDuration(v);
    if (ns !== 0 && ns < 1e6) throw new Error(`Interval ${JSON.stringify(name)} cannot be less than 1ms`);
    return ns;
  };
  let retries = 0;
  if (f.strings.retries) {
    const r = f.strings.retries;
    if (!/^[+-]?\d+$/.test(r)) throw new Error(`strconv.ParseInt: parsing ${JSON.stringify(r)}: invalid syntax`);
    retries = Number(r);
    if (retries < 0) throw new Error(`--retries cannot be negative (${retries})`);
  }
  return {
    test: [node.json ? 'CMD' : 'CMD-SHELL', ...cmd],
    interval: interval('interval'), timeout: interval('timeout'),
    startPeriod: interval('start-period'), startInterval: interval('start-interval'), retries,
  };
}

function onbuild(node: Node): string {
  if (node.args.length === 0) throw new Error('ONBUILD requires at least one argument');
  parseFlags(node.flags, {});
  const trigger = node.args[0].trim().toUpperCase();
  if (trigger === 'ONBUILD') throw new Error('Chaining ONBUILD via `ONBUILD ONBUILD` isn\'t allowed');
  if (trigger === 'MAINTAINER' || trigger === 'FROM') throw new Error(`${trigger} isn't allowed as an ONBUILD trigger`);
  return node.original.replace(/^\s*ONBUILD\s*/i, '');
}

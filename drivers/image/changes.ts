// Dockerfile instructions applied to an image config, as `docker import --change` and
// `docker commit --change` allow. The set of instructions and the error texts follow the
// reference daemon's BuildFromConfig.
import { invalidArgument } from '../../lib/errors.ts';
import { processWord, splitRawWords, type EnvLookup } from './shell-words.ts';

const VALID = new Set(['cmd', 'entrypoint', 'env', 'expose', 'label', 'onbuild', 'stopsignal', 'user', 'volume', 'workdir']);

type Config = Record<string, unknown>;

/**
 * Apply `changes` (one instruction per entry) to a copy of `config` (the Docker `Config` object).
 * Throws InvalidArgument for an instruction that is not allowed or malformed.
 */
export function applyChanges(config: Config, changes: string[]): Config {
  const lines = changes.map((c) => c.trim()).filter((c) => c !== '' && !c.startsWith('#'));
  const parsed = lines.map((line) => {
    const m = /^(\S+)\s*(.*)$/s.exec(line)!;
    return { instr: m[1]!.toLowerCase(), args: m[2]!.trim() };
  });
  // The reference daemon checks every instruction before applying any.
  for (const p of parsed) {
    if (!VALID.has(p.instr)) throw invalidArgument(`${p.instr} is not a valid change command`);
  }
  const out: Config = structuredClone(config);
  const state = { cmdSet: false };
  for (const p of parsed) apply(out, p.instr, p.args, state);
  return out;
}

function apply(cfg: Config, instr: string, args: string, state: { cmdSet: boolean }): void {
  const env = envLookup(cfg);
  switch (instr) {
    case 'cmd':
      cfg.Cmd = commandForm(args);
      state.cmdSet = true;
      return;
    case 'entrypoint':
      cfg.Entrypoint = commandForm(args);
      // As in a Dockerfile, ENTRYPOINT drops an inherited CMD unless CMD was set alongside it.
      if (!state.cmdSet) cfg.Cmd = null;
      return;
    case 'env':
      for (const [k, v] of nameValues('ENV', args, env)) setEnv(cfg, k, v);
      return;
    case 'label': {
      const labels = { ...((cfg.Labels as Record<string, string> | null | undefined) ?? {}) };
      for (const [k, v] of nameValues('LABEL', args, env)) labels[k] = v;
      cfg.Labels = labels;
      return;
    }
    case 'expose': {
      const ports = { ...((cfg.ExposedPorts as Record<string, object> | null | undefined) ?? {}) };
      const words = splitRawWords(args).map((w) => processWord(w, env));
      if (words.length === 0) throw invalidArgument('EXPOSE requires at least one argument');
      for (const w of words) for (const p of exposedPorts(w)) ports[p] = {};
      cfg.ExposedPorts = ports;
      return;
    }
    case 'user':
      cfg.User = singleArg('USER', args, env);
      return;
    case 'workdir': {
      const dir = singleArg('WORKDIR', args, env);
      const base = typeof cfg.WorkingDir === 'string' ? cfg.WorkingDir : '';
      cfg.WorkingDir = cleanPath(dir.startsWith('/') ? dir : `/${base}/${dir}`);
      return;
    }
    case 'volume': {
      const vols = { ...((cfg.Volumes as Record<string, object> | null | undefined) ?? {}) };
      const list = jsonArray(args) ?? splitRawWords(args).map((w) => processWord(w, env));
      if (list.length === 0) throw invalidArgument('VOLUME requires at least one argument');
      for (const v of list) {
        if (v.trim() === '') throw invalidArgument('VOLUME specified can not be an empty string');
        vols[v.trim()] = {};
      }
      cfg.Volumes = vols;
      return;
    }
    case 'stopsignal': {
      const sig = singleArg('STOPSIGNAL', args, env);
      if (!/^(?:\d+|(?:SIG)?[A-Z][A-Z0-9]*(?:[+-]\d+)?)$/i.test(sig)) throw invalidArgument(`Invalid signal: ${sig}`);
      cfg.StopSignal = sig;
      return;
    }
    case 'onbuild': {
      const trigger = /^\S+/.exec(args)?.[0]?.toUpperCase();
      if (!trigger) throw invalidArgument('ONBUILD requires at least one argument');
      if (trigger === 'ONBUILD') throw invalidArgument("Chaining ONBUILD via `ONBUILD ONBUILD` isn't allowed");
      if (trigger === 'FROM' || trigger === 'MAINTAINER') throw invalidArgument(`${trigger} isn't allowed as an ONBUILD trigger`);
      cfg.OnBuild = [...((cfg.OnBuild as string[] | null | undefined) ?? []), args];
      return;
    }
  }
}

/** JSON (exec) form when the text is a JSON array of strings, else shell form under /bin/sh -c. */
function commandForm(args: string): string[] {
  return jsonArray(args) ?? ['/bin/sh', '-c', args];
}

function jsonArray(args: string): string[] | null {
  if (!args.startsWith('[')) return null;
  try {
    const v: unknown = JSON.parse(args);
    if (Array.isArray(v) && v.every((x) => typeof x === 'string')) return v as string[];
  } catch {
    // not JSON: the reference daemon falls back to the shell form too
  }
  return null;
}

/** `NAME a=b c=d` or the legacy `NAME a b c` (one pair, value = the rest of the line). */
function nameValues(instr: string, args: string, env: EnvLookup): Array<[string, string]> {
  const words = splitRawWords(args);
  if (words.length === 0) throw invalidArgument(`${instr} requires at least one argument`);
  if (!words[0]!.includes('=')) {
    const m = /^(\S+)\s+(.*)$/s.exec(args);
    if (!m) throw invalidArgument(`${instr} must have two arguments`);
    return [[m[1]!, processWord(m[2]!.trim(), env)]];
  }
  return words.map((w) => {
    const eq = w.indexOf('=');
    if (eq < 0) throw invalidArgument(`Syntax error - can't find = in "${w}". Must be of the form: name=value`);
    const key = processWord(w.slice(0, eq), env);
    if (key === '') throw invalidArgument(`${instr} names can not be blank`);
    return [key, processWord(w.slice(eq + 1), env)];
  });
}

function singleArg(instr: string, args: string, env: EnvLookup): string {
  const v = processWord(args, env).trim();
  if (v === '') throw invalidArgument(`${instr} requires exactly one argument`);
  return v;
}

function envLookup(cfg: Config): EnvLookup {
  const list = Array.isArray(cfg.Env) ? (cfg.Env as string[]) : [];
  return (name) => {
    for (let i = list.length - 1; i >= 0; i--) {
      const e = list[i]!;
      if (e.startsWith(`${name}=`)) return e.slice(name.length + 1);
    }
    return undefined;
  };
}

function setEnv(cfg: Config, key: string, value: string): void {
  const list = Array.isArray(cfg.Env) ? [...(cfg.Env as string[])] : [];
  const entry = `${key}=${value}`;
  const i = list.findIndex((e) => e === key || e.startsWith(`${key}=`));
  if (i >= 0) list[i] = entry;
  else list.push(entry);
  cfg.Env = list;
}

/** `80`, `80/tcp`, `53/udp`, `8000-8002/tcp` -> the nat.Port keys the daemon stores. */
function exposedPorts(spec: string): string[] {
  const m = /^(\d+)(?:-(\d+))?(?:\/(tcp|udp|sctp))?$/i.exec(spec);
  if (!m) throw invalidArgument(`Invalid containerPort: ${spec}`);
  const proto = (m[3] ?? 'tcp').toLowerCase();
  const start = Number(m[1]);
  const end = m[2] === undefined ? start : Number(m[2]);
  if (start > 65535 || end > 65535 || end < start) throw invalidArgument(`Invalid containerPort: ${spec}`);
  const out: string[] = [];
  for (let p = start; p <= end; p++) out.push(`${p}/${proto}`);
  return out;
}

function cleanPath(p: string): string {
  const parts: string[] = [];
  for (const seg of p.split('/')) {
    if (seg === '' || seg === '.') continue;
    if (seg === '..') parts.pop();
    else parts.push(seg);
  }
  return `/${parts.join('/')}`;
}

// The instructions that change only the image's config (ENV, LABEL, CMD, ...): each updates the
// stage's run config and answers the comment the reference records for it (the `#(nop)` text
// of the step's container config and history). RUN, COPY and ADD are the builder's, not here.
import { invalidArgument } from '../../lib/errors.ts';
import { formatGoDuration } from '../../lib/units.ts';
import type { Instruction } from './dockerfile/instructions.ts';
import { ShellLex } from './dockerfile/lex.ts';
import { expansionEnv, setEnv, shellOf, type Config, type StageState } from './state.ts';

export type MetaInstruction = Exclude<Instruction, { kind: 'run' | 'copy' | 'add' }>;

/** Go's %q of a string slice: ["a" "b"]. */
export const goQuoteList = (l: string[]): string => `[${l.map((s) => JSON.stringify(s)).join(' ')}]`;
/** Go's %v of a string slice: [a b]. */
const goList = (l: string[]): string => `[${l.join(' ')}]`;

const SIGNAL = /^(?:\d+|(?:SIG)?[A-Z][A-Z0-9]*(?:[+-]\d+)?)$/i;

/**
 * Apply one config instruction to `state`; the comment to commit (an empty layer), and lines
 * to print (a HEALTHCHECK that overrides another says so).
 */
export function dispatchMeta(state: StageState, ins: MetaInstruction, lex: ShellLex, print: (s: string) => void): string {
  const cfg = state.runConfig;
  // Every word of an instruction is expanded with what was set before it, not by itself.
  const env = expansionEnv(state);
  const word = (w: string) => lex.processWord(w, env);
  switch (ins.kind) {
    case 'env': {
      const parts: string[] = [];
      for (const p of ins.pairs) {
        const key = word(p.key);
        const value = word(p.value);
        if (key === '') throw invalidArgument('ENV names can not be blank');
        setEnv(cfg, key, value);
        parts.push(`${key}=${value}`);
      }
      return `ENV ${parts.join(' ')}`;
    }
    case 'label': {
      const labels = { ...((cfg.Labels as Record<string, string> | null | undefined) ?? {}) };
      const parts: string[] = [];
      for (const p of ins.pairs) {
        const key = word(p.key);
        const value = word(p.value);
        labels[key] = value;
        parts.push(`${key}=${value}`);
      }
      cfg.Labels = labels;
      return `LABEL ${parts.join(' ')}`;
    }
    case 'maintainer':
      state.maintainer = ins.value;
      return `MAINTAINER ${ins.value}`;
    case 'workdir': {
      cfg.WorkingDir = normaliseWorkdir(String(cfg.WorkingDir ?? ''), word(ins.value));
      return `WORKDIR ${cfg.WorkingDir as string}`;
    }
    case 'user':
      cfg.User = word(ins.value);
      return `USER ${cfg.User as string}`;
    case 'expose': {
      const ports = { ...((cfg.ExposedPorts as Record<string, object> | null | undefined) ?? {}) };
      const written = ins.ports.map(word);
      for (const w of written) for (const p of exposedPorts(w)) ports[p] = {};
      cfg.ExposedPorts = ports;
      return `EXPOSE ${written.join(' ')}`;
    }
    case 'volume': {
      const vols = { ...((cfg.Volumes as Record<string, object> | null | undefined) ?? {}) };
      const list = ins.volumes.map(word);
      for (const v of list) {
        if (v.trim() === '') throw invalidArgument('VOLUME specified can not be an empty string');
        vols[v] = {};
      }
      cfg.Volumes = vols;
      return `VOLUME ${goList(list)}`;
    }
    case 'stopsignal': {
      const sig = word(ins.value);
      if (!SIGNAL.test(sig)) throw invalidArgument(`Invalid signal: ${sig}`);
      cfg.StopSignal = sig;
      return `STOPSIGNAL ${sig}`;
    }
    case 'cmd': {
      const cmd = ins.shell ? [...shellOf(cfg), ...ins.cmd] : ins.cmd;
      cfg.Cmd = cmd;
      cfg.ArgsEscaped = true;
      if (ins.cmd.length) state.cmdSet = true;
      return `CMD ${goQuoteList(cmd)}`;
    }
    case 'entrypoint': {
      const ep = ins.shell ? (ins.cmd.length ? [...shellOf(cfg), ...ins.cmd] : shellOf(cfg)) : ins.cmd;
      cfg.Entrypoint = ep;
      // An inherited CMD goes with a new ENTRYPOINT, unless this stage set one.
      if (!state.cmdSet) cfg.Cmd = null;
      return `ENTRYPOINT ${goQuoteList(ep)}`;
    }
    case 'shell':
      cfg.Shell = ins.shell;
      return `SHELL ${goList(ins.shell)}`;
    case 'healthcheck': {
      const old = (cfg.Healthcheck as { Test?: string[] } | undefined)?.Test;
      if (ins.health.test[0] !== 'NONE' && old?.length && old[0] !== 'NONE') print(`Note: overriding previous HEALTHCHECK: ${goList(old)}\n`);
      cfg.Healthcheck = healthConfig(ins.health);
      return `HEALTHCHECK ${healthComment(cfg.Healthcheck as HealthJSON)}`;
    }
    case 'onbuild':
      cfg.OnBuild = [...((cfg.OnBuild as string[] | null | undefined) ?? []), ins.expression];
      return `ONBUILD ${ins.expression}`;
    case 'arg': {
      const parts: string[] = [];
      for (const a of ins.args) {
        const dflt = a.default === undefined ? undefined : word(a.default);
        state.args.declare(a.name, dflt);
        parts.push(dflt === undefined ? a.name : `${a.name}=${dflt}`);
      }
      return `ARG ${parts.join(' ')}`;
    }
  }
}

type HealthJSON = { Test: string[]; Interval?: number; Timeout?: number; StartPeriod?: number; StartInterval?: number; Retries?: number };

function healthConfig(h: Extract<Instruction, { kind: 'healthcheck' }>['health']): HealthJSON {
  if (h.test[0] === 'NONE') return { Test: ['NONE'] };
  const full = h as Exclude<typeof h, { test: ['NONE'] }>;
  const out: HealthJSON = { Test: full.test };
  // Zero values are left out, as the reference's omitempty fields.
  if (full.interval) out.Interval = full.interval;
  if (full.timeout) out.Timeout = full.timeout;
  if (full.startPeriod) out.StartPeriod = full.startPeriod;
  if (full.startInterval) out.StartInterval = full.startInterval;
  if (full.retries) out.Retries = full.retries;
  return out;
}

/** The reference's `%q` of a *HealthConfig: &{["CMD-SHELL" "x"] "30s" "0s" "0s" '\x03'}. */
function healthComment(h: HealthJSON): string {
  const d = (ns: number | undefined) => JSON.stringify(formatGoDuration(ns ?? 0));
  const r = h.Retries ?? 0;
  const retries = r >= 32 && r < 127 ? `'${String.fromCharCode(r)}'` : `'\\x${r.toString(16).padStart(2, '0')}'`;
  return `&{${goQuoteList(h.Test)} ${d(h.Interval)} ${d(h.Timeout)} ${d(h.StartPeriod)} ${retries}}`;
}

/** WORKDIR: relative paths extend the current one; the result is clean and absolute. */
export function normaliseWorkdir(current: string, requested: string): string {
  if (requested === '') throw invalidArgument('cannot normalize nothing');
  const joined = requested.startsWith('/') ? requested : `${current || '/'}/${requested}`;
  const parts: string[] = [];
  for (const seg of joined.split('/')) {
    if (seg === '' || seg === '.') continue;
    if (seg === '..') parts.pop();
    else parts.push(seg);
  }
  return `/${parts.join('/')}`;
}

/** `80`, `80/tcp`, `53/udp`, `8000-8002` -> the port keys of ExposedPorts. */
export function exposedPorts(spec: string): string[] {
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

export type { Config };

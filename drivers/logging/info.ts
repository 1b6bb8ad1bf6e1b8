// What the log drivers know about the container they log for, and the helpers they share:
// the `tag` template (a Go text/template over the container, as the reference's log_tag.go),
// the labels/env extra attributes (loginfo.go ExtraAttributes) and Go-like parsing of the
// option values (url.Parse, net.SplitHostPort, time.ParseDuration, strconv) so the messages
// match the reference's.
import { goBool, goBoolSyntax, parseGoDuration } from '../../lib/units.ts';

import type { ContainerLogInfo } from '../../lib/ports/logs.ts';
export type { ContainerLogInfo };

export const DEFAULT_TAG = '{{.ID}}';

/** The info for a container id alone (callers that do not pass one). */
export function minimalInfo(id: string): ContainerLogInfo {
  return { id, name: '', imageId: '', imageName: '', path: '', args: [], created: '', env: [], labels: {} };
}

// ---- the tag template -----------------------------------------------------------------------

function fields(info: ContainerLogInfo): Record<string, string> {
  return {
    ID: info.id.slice(0, 12),
    FullID: info.id,
    Name: info.name.replace(/^\//, ''),
    ImageID: info.imageId.slice(0, 12),
    ImageFullID: info.imageId,
    ImageName: info.imageName,
    DaemonName: 'docker',
    ContainerID: info.id,
    ContainerName: info.name,
    ContainerImageID: info.imageId,
    ContainerImageName: info.imageName,
    ContainerEntrypoint: info.path,
    Command: [info.path, ...info.args].join(' '),
  };
}

const FUNCS: Record<string, (...a: string[]) => string> = {
  lower: (s) => s.toLowerCase(),
  upper: (s) => s.toUpperCase(),
  title: (s) => s.replace(/(^|[^\p{L}\p{N}_'])(\p{L})/gu, (_m, a: string, b: string) => a + b.toUpperCase()),
  truncate: (s, n) => (s.length < Number(n) ? s : s.slice(0, Number(n))),
  pad: (s, p, q) => (s === '' ? s : ' '.repeat(Number(p)) + s + ' '.repeat(Number(q))),
  json: (s) => JSON.stringify(s),
};

function tokens(expr: string): string[] {
  return expr.match(/"(?:[^"\\]|\\.)*"|[^\s]+/g) ?? [];
}

/**
 * Renders the `tag` option (default `{{.ID}}`). Supports fields, string/number literals, the
 * reference's functions (lower, upper, title, truncate, pad, json) and pipelines; throws with a
 * Go-like message for what it cannot evaluate.
 */
export function parseLogTag(info: ContainerLogInfo, config: Record<string, string>, defaultTemplate = DEFAULT_TAG): string {
  const tmpl = config.tag || defaultTemplate;
  const f = fields(info);
  let out = '';
  let pos = 0;
  for (;;) {
    const open = tmpl.indexOf('{{', pos);
    if (open < 0) {
      out += tmpl.slice(pos);
      break;
    }
    out += tmpl.slice(pos, open);
    const close = tmpl.indexOf('}}', open + 2);
    if (close < 0) throw new Error(`template: log-tag:1: unclosed action`);
    let expr = tmpl.slice(open + 2, close);
    if (expr.startsWith('-')) {
      expr = expr.slice(1);
      out = out.replace(/\s+$/, '');
    }
    let trimRight = false;
    if (expr.endsWith('-')) {
      expr = expr.slice(0, -1);
      trimRight = true;
    }
    pos = close + 2;
    if (trimRight) while (pos < tmpl.length && /\s/.test(tmpl[pos]!)) pos++;
    const stages = expr.split('|').map((s) => tokens(s.trim()));
    let value: string | undefined;
    const arg = (t: string): string => {
      if (t.startsWith('.')) {
        const v = f[t.slice(1)];
        if (v === undefined) throw new Error(`template: log-tag:1:${open + 3}: executing "log-tag" at <${t}>: can't evaluate field ${t.slice(1)} in type *logger.Info`);
        return v;
      }
      if (t.startsWith('"')) return JSON.parse(t) as string;
      if (/^-?\d+$/.test(t)) return t;
      throw new Error(`template: log-tag:1: function "${t}" not defined`);
    };
    for (const st of stages) {
      if (!st.length) throw new Error('template: log-tag:1: missing value for command');
      const [head, ...rest] = st;
      const fn = FUNCS[head!];
      if (fn) {
        const args = rest.map(arg);
        if (value !== undefined) args.push(value);
        value = fn(...args);
      } else {
        value = arg(head!);
      }
    }
    out += value ?? '';
  }
  return out;
}

// ---- labels and env -------------------------------------------------------------------------

/** labels, labels-regex, env, env-regex as extra attributes; keyMod renames the keys (gelf: "_"). */
export function extraAttributes(info: ContainerLogInfo, config: Record<string, string>, keyMod?: (k: string) => string): Record<string, string> {
  const extra: Record<string, string> = {};
  const mod = keyMod ?? ((k: string) => k);
  const labels = info.labels ?? {};
  if (config.labels) {
    for (const l of config.labels.split(',')) if (Object.hasOwn(labels, l)) extra[mod(l)] = labels[l]!;
  }
  if (config['labels-regex']) {
    const re = goRegexp(config['labels-regex']);
    for (const [k, v] of Object.entries(labels)) if (re.test(k)) extra[mod(k)] = v;
  }
  const env = new Map<string, string>();
  for (const e of info.env ?? []) {
    const i = e.indexOf('=');
    if (i >= 0) env.set(e.slice(0, i), e.slice(i + 1));
  }
  if (config.env) {
    for (const l of config.env.split(',')) if (env.has(l)) extra[mod(l)] = env.get(l)!;
  }
  if (config['env-regex']) {
    const re = goRegexp(config['env-regex']);
    for (const [k, v] of env) if (re.test(k)) extra[mod(k)] = v;
  }
  return extra;
}

export function goRegexp(s: string): RegExp {
  try {
    return new RegExp(s, 'u');
  } catch {
    throw new Error(`error parsing regexp: invalid syntax: \`${s}\``);
  }
}

// ---- Go-like parsing ------------------------------------------------------------------------

export interface GoUrl {
  scheme: string;
  host: string;
  path: string;
}

/** url.Parse, enough for the addresses of the log drivers. */
export function goUrlParse(raw: string): GoUrl {
  const m = /^([a-zA-Z][a-zA-Z0-9+.-]*):(.*)$/s.exec(raw);
  let rest = raw;
  let scheme = '';
  if (m) {
    scheme = m[1]!.toLowerCase();
    rest = m[2]!;
  } else {
    if (raw.startsWith(':')) throw new Error(`parse "${raw}": missing protocol scheme`);
    if (raw.split('/')[0]!.includes(':')) throw new Error(`parse "${raw}": first path segment in URL cannot contain colon`);
  }
  let host = '';
  let path = rest;
  if (rest.startsWith('//')) {
    const after = rest.slice(2);
    const slash = after.search(/[/?#]/);
    host = slash < 0 ? after : after.slice(0, slash);
    path = slash < 0 ? '' : after.slice(slash);
  }
  path = path.replace(/[?#].*$/s, '');
  return { scheme, host, path };
}

/** net.SplitHostPort; throws with Go's messages. */
export function splitHostPort(hostport: string): { host: string; port: string } {
  const err = (why: string) => new Error(`address ${hostport}: ${why}`);
  const i = hostport.lastIndexOf(':');
  if (i < 0) throw err('missing port in address');
  let host: string;
  if (hostport.startsWith('[')) {
    const end = hostport.indexOf(']');
    if (end < 0) throw err("missing ']' in address");
    if (end + 1 === hostport.length) throw err('missing port in address');
    if (end + 1 !== i) throw err(hostport[end + 1] === ':' ? 'too many colons in address' : 'missing port in address');
    host = hostport.slice(1, end);
  } else {
    host = hostport.slice(0, i);
    if (host.includes(':')) throw err('too many colons in address');
  }
  return { host, port: hostport.slice(i + 1) };
}

export function goParseBool(s: string): boolean {
  const b = goBool(s);
  if (b === undefined) throw new Error(goBoolSyntax(s));
  return b;
}

export function goAtoi(s: string): number {
  if (!/^[+-]?\d+$/.test(s)) throw new Error(`strconv.Atoi: parsing "${s}": invalid syntax`);
  return Number.parseInt(s, 10);
}

export function goParseUint(s: string, bits: number): number {
  if (!/^\d+$/.test(s)) throw new Error(`strconv.ParseUint: parsing "${s}": invalid syntax`);
  const n = BigInt(s);
  if (n >= 1n << BigInt(bits)) throw new Error(`strconv.ParseUint: parsing "${s}": value out of range`);
  return Number(n);
}

/** time.ParseDuration, in milliseconds (lib/units.ts parses it). */
export function goParseDuration(s: string): number {
  return parseGoDuration(s) / 1e6;
}

/** Go's time.Time JSON form of an RFC 3339 nano time: trailing zeros of the fraction trimmed. */
export function goTimeJson(t: string): string {
  if (!t) return '0001-01-01T00:00:00Z';
  return t.replace(/\.(\d*?)0+(Z|[+-]\d\d:\d\d)$/, (_m, d: string, z: string) => (d ? `.${d}${z}` : z));
}

/** The message of a failed connect, as Go's net.Dial writes it. */
export function dialError(network: string, addr: string, err: NodeJS.ErrnoException): Error {
  const why: Record<string, string> = {
    ECONNREFUSED: 'connect: connection refused',
    ENOENT: 'connect: no such file or directory',
    EACCES: 'connect: permission denied',
    ETIMEDOUT: 'i/o timeout',
    EHOSTUNREACH: 'connect: no route to host',
    ENETUNREACH: 'connect: network is unreachable',
    ECONNRESET: 'connection reset by peer',
    ENOTFOUND: 'no such host',
    EAI_AGAIN: 'server misbehaving',
  };
  const w = why[err.code ?? ''] ?? err.message;
  return new Error(`dial ${network} ${addr}: ${w}`);
}

// ---- Go's encodings -------------------------------------------------------------------------

const byUtf8 = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));

/** A Go string as encoding/json writes it: HTML characters and U+2028/U+2029 escaped. */
export function goJsonString(s: string): string {
  return JSON.stringify(s.toWellFormed()).replace(/[<>&\u2028\u2029\b\f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** json.Marshal of a map[string]string: keys sorted by their bytes. */
export function goJsonStringMap(m: Record<string, string>): string {
  return `{${Object.keys(m).sort(byUtf8).map((k) => `${goJsonString(k)}:${goJsonString(m[k]!)}`).join(',')}}`;
}

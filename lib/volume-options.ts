// The local volume driver's rules, with no I/O: which DriverOpts it takes (type, o, device, size),
// which names it accepts, and what mount(8) is given for a volume with options. Messages are the
// reference daemon's local driver's (daemon/volume/local/local.go, local_unix.go).
import { internal, invalidArgument } from './errors.ts';

const VALID_OPTS = new Set(['type', 'o', 'device', 'size']);
/** Option -> the options it needs beside it. Checked in this order (the reference's map order is random). */
const MANDATORY_OPTS: Array<[string, string[]]> = [
  ['device', ['type']],
  ['type', ['device']],
  ['o', ['device', 'type']],
];

const NAME_CHARS = '[a-zA-Z0-9][a-zA-Z0-9_.-]';
const NAME_PATTERN = /^[a-zA-Z0-9][a-zA-Z0-9_.-]+$/;

/** Throw InvalidArgument when `opts` are not DriverOpts the local driver takes. Empty opts are valid. */
export function validateLocalOptions(opts: Record<string, string>): void {
  const keys = Object.keys(opts);
  if (keys.length === 0) return;
  for (const k of keys) {
    if (!VALID_OPTS.has(k)) throw invalidArgument(`invalid option: ${goQuote(k)}`);
  }
  if (opts.type === 'cifs' && opts.device) checkCifsDevice(opts.device);
  if ('size' in opts) {
    // No quota support here: any positive size is refused, as the reference does without quota.
    if (parseRamSize(opts.size) > 0) throw invalidArgument('quota size requested but no quota support');
  }
  for (const [opt, required] of MANDATORY_OPTS) {
    if (!(opt in opts)) continue;
    for (const r of required) {
      if (!(r in opts)) throw invalidArgument(`missing required option: ${goQuote(r)}`);
    }
  }
}

/** The local driver's complaint about a volume name, or undefined when it is acceptable. */
export function volumeNameError(name: string): string | undefined {
  if (Buffer.byteLength(name) === 1) {
    return 'volume name is too short, names should be at least two alphanumeric characters';
  }
  if (!NAME_PATTERN.test(name)) {
    return `${goQuote(name)} includes invalid characters for a local volume name, only ${goQuote(NAME_CHARS)} are allowed. If you intended to pass a host directory, use absolute path`;
  }
  return undefined;
}

export interface MountArgs {
  /** -t for mount(8); empty lets mount(8) probe. `none` with o=bind is a bind mount of `device`. */
  type: string;
  device: string;
  /** -o for mount(8), comma-separated; empty for none. */
  options: string;
}

/**
 * What mount(8) gets for a volume's options, or null when the volume has nothing to mount (no
 * type and no device: a plain directory). Options go through as given: mount(8) turns `bind`,
 * `ro`, ... into flags itself, so `type=none o=bind device=/x` stays a bind mount. NFS/CIFS
 * `addr=<host>` is left to mount(8)'s helpers to resolve (the reference resolves it to an IP first).
 */
export function mountArgs(opts: Record<string, string>): MountArgs | null {
  const type = opts.type ?? '';
  const device = opts.device ?? '';
  if (type === '' && device === '') return null;
  if (device === '') throw internal('missing device in volume options');
  return { type, device, options: opts.o ?? '' };
}

/** The reference hides a CIFS password in mount errors. */
export function redactMountError(msg: string, options: string): string {
  for (const opt of options.split(',')) {
    if (opt.startsWith('password=') && opt.length > 'password='.length) {
      return msg.replace(opt, 'password=********');
    }
  }
  return msg;
}

// CIFS devices are URLs (//server/share); a port belongs in o=port=..., not in the URL.
function checkCifsDevice(device: string): void {
  const m = /^(?:[a-zA-Z][a-zA-Z0-9+.-]*:)?\/\/([^/?#]*)/.exec(device);
  if (!m) return;
  const authority = m[1];
  const host = authority.slice(authority.lastIndexOf('@') + 1);
  const colon = host.lastIndexOf(':');
  if (colon === -1 || (host.startsWith('[') && colon < host.indexOf(']'))) return;
  const port = host.slice(colon + 1);
  if (port === '') return;
  if (!/^[0-9]+$/.test(port)) {
    throw invalidArgument(`error parsing mount device url: parse ${goQuote(device)}: invalid port ${goQuote(':' + port)} after host`);
  }
  throw invalidArgument("port not allowed in CIFS device URL, include 'port' in 'o='");
}

/** docker/go-units RAMInBytes: "512", "1.5g", "10 MiB"; binary multiples. */
export function parseRamSize(s: string): number {
  const bad = () => invalidArgument(`invalid size: '${s}'`);
  let sep = -1;
  for (let i = s.length - 1; i >= 0; i--) {
    if ('0123456789. '.includes(s[i])) {
      sep = i;
      break;
    }
  }
  if (sep === -1) throw bad();
  const num = s[sep] === ' ' ? s.slice(0, sep) : s.slice(0, sep + 1);
  const rawSfx = s.slice(sep + 1);
  const sfx = rawSfx.toLowerCase();
  if (!/^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i.test(num)) {
    throw invalidArgument(`strconv.ParseFloat: parsing ${goQuote(num)}: invalid syntax`);
  }
  const size = Number(num);
  if (size < 0) throw bad();
  if (sfx === '' || sfx === 'b') return Math.trunc(size);
  if (sfx.length > 3) throw invalidArgument(`invalid suffix: '${rawSfx}'`);
  const mul = { k: 2 ** 10, m: 2 ** 20, g: 2 ** 30, t: 2 ** 40, p: 2 ** 50 }[sfx[0]];
  if (mul === undefined || (sfx.length === 2 && sfx[1] !== 'b') || (sfx.length === 3 && sfx.slice(1) !== 'ib')) {
    throw invalidArgument(`invalid suffix: '${sfx}'`);
  }
  return Math.trunc(size * mul);
}

/** Go's %q for the strings these messages quote. */
function goQuote(s: string): string {
  const esc: Record<string, string> = { '"': '\\"', '\\': '\\\\', '\n': '\\n', '\r': '\\r', '\t': '\\t', '\x07': '\\a', '\b': '\\b', '\f': '\\f', '\v': '\\v' };
  let out = '"';
  for (const ch of s) {
    const c = ch.codePointAt(0)!;
    if (esc[ch]) out += esc[ch];
    else if (c < 0x20 || c === 0x7f) out += `\\x${c.toString(16).padStart(2, '0')}`;
    else out += ch;
  }
  return out + '"';
}

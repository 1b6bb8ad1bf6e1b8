// User mounts: HostConfig.Binds ("src:dst[:opts]"), HostConfig.Mounts (bind/tmpfs/volume) and
// HostConfig.Tmpfs, validated with the reference daemon's messages and turned into OCI mounts.
import { mkdirSync, statSync } from 'node:fs';
import { posix } from 'node:path';
import { invalidArgument } from '../../lib/errors.ts';
import { cleanPath, parseBind, PROPAGATION_MODES } from '../../lib/mount-spec.ts';
export { parseBind, type ParsedBind } from '../../lib/mount-spec.ts';
import type { OciMount, ResolvedMount } from './types.ts';

/** Create-time check of one `Binds` entry. */
export function validateBind(raw: string): void {
  parseBind(raw);
}

const TMPFS_DATA_KEYS = new Set(['size', 'mode', 'uid', 'gid', 'nr_inodes', 'nr_blocks', 'mpol']);
/** Flags that cancel each other: the last one given wins. */
const TMPFS_FLAG_GROUPS: Record<string, string> = {
  ro: 'rdonly', rw: 'rdonly', exec: 'noexec', noexec: 'noexec', suid: 'nosuid', nosuid: 'nosuid', dev: 'nodev', nodev: 'nodev',
  sync: 'sync', async: 'sync', atime: 'noatime', noatime: 'noatime', diratime: 'nodiratime', nodiratime: 'nodiratime',
  relatime: 'relatime', norelatime: 'relatime', strictatime: 'strictatime', nostrictatime: 'strictatime',
  mand: 'mand', nomand: 'mand', dirsync: 'dirsync', remount: 'remount', bind: 'bind', rbind: 'bind',
  shared: 'prop', rshared: 'prop', slave: 'prop', rslave: 'prop', private: 'prop', rprivate: 'prop', unbindable: 'prop', runbindable: 'prop',
};

/** Merge tmpfs options right to left so later options win, keeping each group once. */
export function mergeTmpfsOptions(options: string[]): string[] {
  const seenFlags = new Set<string>();
  const seenData = new Set<string>();
  const out: string[] = [];
  for (let i = options.length - 1; i >= 0; i--) {
    const o = options[i]!;
    if (o === 'defaults' || o === '') continue;
    const group = TMPFS_FLAG_GROUPS[o];
    if (group) {
      if (!seenFlags.has(group)) {
        seenFlags.add(group);
        out.unshift(o);
      }
      continue;
    }
    const eq = o.indexOf('=');
    const key = eq < 0 ? o : o.slice(0, eq);
    if (eq < 0 || !TMPFS_DATA_KEYS.has(key)) throw invalidArgument(`invalid tmpfs option ["${eq < 0 ? o : `${key}" "${o.slice(eq + 1)}`}"]`);
    if (!seenData.has(key)) {
      seenData.add(key);
      out.unshift(o);
    }
  }
  return out;
}

function tmpfsMount(destination: string, data: string): OciMount {
  const opts = ['noexec', 'nosuid', 'nodev', 'rprivate', ...(data ? data.split(',') : [])];
  return { destination, type: 'tmpfs', source: 'tmpfs', options: mergeTmpfsOptions(opts) };
}

function sizeOption(bytes: number): string {
  for (const [suffix, div] of [['g', 1 << 30], ['m', 1 << 20], ['k', 1 << 10]] as const) {
    if (bytes % div === 0) return `size=${bytes / div}${suffix}`;
  }
  return `size=${bytes}`;
}

function bindMount(source: string, destination: string, readOnly: boolean, propagation: string, recursive = true): OciMount {
  const options = [recursive ? 'rbind' : 'bind'];
  if (readOnly) options.push('ro');
  options.push(propagation || 'rprivate');
  return { destination, type: 'bind', source, options };
}

export interface UserMountsResult {
  mounts: OciMount[];
  /** "rshared" / "rslave" when a bind asks for shared/slave propagation. */
  rootfsPropagation?: string;
}

export interface UserMountOptions {
  /** Volume mounts resolved to host paths by the caller; Binds and Mounts entries naming volumes are skipped here. */
  volumeMounts?: ResolvedMount[];
}

/** Every user-requested mount of a container, in request order (sorting happens later). */
export function userMounts(h: Record<string, unknown>, opts: UserMountOptions): UserMountsResult {
  const mounts: OciMount[] = [];
  const seen = new Set<string>();
  const add = (m: OciMount) => {
    if (seen.has(m.destination)) throw invalidArgument(`Duplicate mount point: ${m.destination}`);
    seen.add(m.destination);
    mounts.push(m);
  };

  const binds = Array.isArray(h.Binds) ? (h.Binds as unknown[]).filter((x): x is string => typeof x === 'string') : [];
  for (const raw of binds) {
    const b = parseBind(raw);
    if (b.volume) continue; // named or anonymous volume: resolved by the caller (volumeMounts)
    mkdirSync(b.source, { recursive: true, mode: 0o755 }); // the reference creates a missing host path for Binds
    add(bindMount(b.source, b.destination, b.readOnly, b.propagation));
  }

  for (const m of Array.isArray(h.Mounts) ? (h.Mounts as Record<string, unknown>[]) : []) {
    if (!m || typeof m !== 'object') continue;
    const type = typeof m.Type === 'string' ? m.Type : '';
    const target = typeof m.Target === 'string' ? m.Target : '';
    const source = typeof m.Source === 'string' ? m.Source : '';
    const readOnly = m.ReadOnly === true;
    const bad = (msg: string) => invalidArgument(`invalid mount config for type "${type}": ${msg}`);
    if (!target) throw bad('field Target must not be empty');
    if (!target.startsWith('/')) throw bad(`invalid mount path: '${target}' mount path must be absolute`);
    const dest = cleanPath(target);
    if (dest === '/') throw invalidArgument(`invalid specification: destination can't be '/'`);
    if (type === 'bind') {
      if (!source) throw bad('field Source must not be empty');
      if (!source.startsWith('/')) throw bad(`invalid mount path: '${source}' mount path must be absolute`);
      const bo = (m.BindOptions && typeof m.BindOptions === 'object' ? m.BindOptions : {}) as Record<string, unknown>;
      try {
        statSync(source);
      } catch {
        if (bo.CreateMountpoint === true) mkdirSync(source, { recursive: true, mode: 0o755 });
        else throw bad(`bind source path does not exist: ${source}`);
      }
      const prop = typeof bo.Propagation === 'string' && bo.Propagation ? bo.Propagation : 'rprivate';
      if (!PROPAGATION_MODES.has(prop)) throw bad(`invalid propagation mode: ${prop}`);
      add(bindMount(cleanPath(source), dest, readOnly, prop, bo.NonRecursive !== true));
    } else if (type === 'tmpfs') {
      if (source) throw bad('field Source must not be specified');
      const to = (m.TmpfsOptions && typeof m.TmpfsOptions === 'object' ? m.TmpfsOptions : {}) as Record<string, unknown>;
      const data: string[] = [];
      if (typeof to.SizeBytes === 'number' && to.SizeBytes > 0) data.push(sizeOption(to.SizeBytes));
      if (typeof to.Mode === 'number' && to.Mode > 0) data.push(`mode=${to.Mode.toString(8)}`);
      if (readOnly) data.push('ro');
      add(tmpfsMount(dest, data.join(',')));
    } else if (type === 'volume') {
      continue; // resolved by the caller (volumeMounts)
    } else {
      throw invalidArgument(`mount type unknown: "${type}"`);
    }
  }

  const tmpfs = h.Tmpfs && typeof h.Tmpfs === 'object' ? (h.Tmpfs as Record<string, unknown>) : {};
  for (const [dest, data] of Object.entries(tmpfs)) {
    if (!dest.startsWith('/')) throw invalidArgument(`invalid mount config for type "tmpfs": invalid mount path: '${dest}' mount path must be absolute`);
    add(tmpfsMount(cleanPath(dest), typeof data === 'string' ? data : ''));
  }

  for (const v of opts.volumeMounts ?? []) add(bindMount(v.source, v.destination, v.readOnly, v.propagation || 'rprivate'));

  let rootfsPropagation: string | undefined;
  for (const m of mounts) {
    if (m.type !== 'bind') continue;
    const p = m.options[m.options.length - 1]!;
    if (p === 'shared' || p === 'rshared') rootfsPropagation = 'rshared';
    else if ((p === 'slave' || p === 'rslave') && rootfsPropagation !== 'rshared') rootfsPropagation = 'rslave';
  }
  return { mounts, rootfsPropagation };
}

/** Mounts sorted so parents come before children (stable by path depth), as the runtime needs. */
export function sortByDepth(mounts: OciMount[]): OciMount[] {
  const depth = (p: string) => posix.normalize(p).split('/').length;
  return mounts
    .map((m, i) => ({ m, i, d: depth(m.destination) }))
    .sort((a, b) => a.d - b.d || a.i - b.i)
    .map((x) => x.m);
}

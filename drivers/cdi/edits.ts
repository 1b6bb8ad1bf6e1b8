// CDI container edits applied to an OCI runtime spec, as the reference library's
// ContainerEdits.Apply does it: the same replace-or-append rules, the same device facts taken
// from the host node, the same mount order. The spec is a plain object (drivers/oci builds it).
import fs from 'node:fs';
import { invalidArgument } from '../../lib/errors.ts';
import type { CdiHook, CdiMount, ContainerEdits, DeviceNode } from './spec.ts';

interface OciDevice { path: string; type: string; major: number; minor: number; fileMode?: number; uid?: number; gid?: number }
interface OciDeviceRule { allow: boolean; type?: string; major?: number; minor?: number; access?: string }
interface OciMount { destination: string; type?: string; source?: string; options?: string[] }
interface OciHook { path: string; args?: string[]; env?: string[]; timeout?: number }
interface OciUser { uid?: number; gid?: number; additionalGids?: number[] }
interface OciProcess { env?: string[]; user?: OciUser }
interface OciLinux { devices?: OciDevice[]; resources?: { devices?: OciDeviceRule[] } }
interface OciSpecView { process?: OciProcess; mounts?: OciMount[]; linux?: OciLinux; hooks?: Record<string, OciHook[]> }

/** What applyEdits needs of a stat result (fs.Stats has it; tests pass their own). */
export type DeviceStat = Pick<fs.Stats, 'isBlockDevice' | 'isCharacterDevice' | 'isFIFO' | 'rdev' | 'mode'>;
export type StatFn = (path: string) => DeviceStat;

/** Apply the edits to the OCI spec in place. Throws InvalidArgument when a device node can't be completed. */
export function applyEdits(spec: Record<string, unknown>, edits: ContainerEdits, statFn: StatFn = fs.statSync): void {
  const s = spec as OciSpecView;
  if (edits.env?.length) addEnv(proc(s), edits.env);
  for (const node of edits.deviceNodes ?? []) addDevice(s, node, statFn);
  if (edits.mounts?.length) addMounts(s, edits.mounts);
  for (const h of edits.hooks ?? []) addHook(s, h);
  for (const gid of edits.additionalGids ?? []) addGid(proc(s), gid);
}

function proc(s: OciSpecView): OciProcess {
  return (s.process ??= {});
}

/** An entry whose key is already set replaces it in place (the image's or user's value loses). */
function addEnv(p: OciProcess, env: string[]): void {
  const list = (p.env ??= []);
  for (const kv of env) {
    const key = kv.slice(0, kv.indexOf('='));
    const i = list.findIndex((e) => e === key || e.startsWith(`${key}=`));
    if (i >= 0) list[i] = kv;
    else list.push(kv);
  }
}

// ---- device nodes ----

/** Linux's dev_t split (glibc's major()/minor()): rdev may exceed 32 bits, so no bitwise ops on it whole. */
function majorMinor(rdev: number): { major: number; minor: number } {
  const hi = Math.floor(rdev / 2 ** 32);
  const lo = rdev >>> 0;
  return {
    major: ((lo >>> 8) & 0xfff) | ((hi & 0xfffff000) >>> 0),
    minor: ((lo & 0xff) | (((lo >>> 12) | ((hi & 0xfff) << 20)) & ~0xff)) >>> 0,
  };
}

function nodeType(st: DeviceStat): 'b' | 'c' | 'p' | undefined {
  if (st.isBlockDevice()) return 'b';
  if (st.isCharacterDevice()) return 'c';
  if (st.isFIFO()) return 'p';
  return undefined;
}

/** Go's bare errno text ("no such file or directory"), as the library's message carries it. */
function errnoText(err: unknown): string {
  const msg = (err as Error).message ?? String(err);
  return /^[A-Z0-9_]+: ([^,]+)/.exec(msg)?.[1] ?? msg;
}

/**
 * The node's type and numbers, taken from the host node when the spec leaves them out (the
 * library's fillMissingInfo). A node with a type and a major (or a fifo) is taken as written,
 * so no stat happens for it; when a stat does happen the host's permission bits fill fileMode.
 */
function completeNode(n: DeviceNode, statFn: StatFn): OciDevice {
  const given: OciDevice = { path: n.path, type: n.type ?? '', major: n.major ?? 0, minor: n.minor ?? 0 };
  if (n.fileMode !== undefined) given.fileMode = n.fileMode;
  if (n.type && (given.major !== 0 || n.type === 'p')) return given;
  const hostPath = n.hostPath || n.path;
  let st: DeviceStat;
  try {
    st = statFn(hostPath);
  } catch (err) {
    throw invalidArgument(`failed to stat CDI host device "${hostPath}": ${errnoText(err)}`, err);
  }
  const hostType = nodeType(st);
  if (!hostType) throw invalidArgument(`failed to stat CDI host device "${hostPath}": not a device node`);
  if (n.type && n.type !== hostType) throw invalidArgument(`CDI device ("${n.path}", "${hostPath}"), host type mismatch (${n.type}, ${hostType})`);
  const dev: OciDevice = { ...given, type: hostType };
  if (dev.major === 0 && hostType !== 'p') Object.assign(dev, majorMinor(st.rdev));
  dev.fileMode ??= st.mode & 0o777;
  return dev;
}

function addDevice(s: OciSpecView, n: DeviceNode, statFn: StatFn): void {
  const dev = completeNode(n, statFn);
  const uid = n.uid ?? positive(s.process?.user?.uid);
  const gid = n.gid ?? positive(s.process?.user?.gid);
  if (uid !== undefined) dev.uid = uid;
  if (gid !== undefined) dev.gid = gid;
  const linux = (s.linux ??= {});
  linux.devices = (linux.devices ?? []).filter((d) => d.path !== dev.path);
  linux.devices.push(dev);
  // Only block and char devices have a cgroup rule; "none" asks for the node without access.
  if (dev.type !== 'b' && dev.type !== 'c') return;
  const access = !n.permissions ? 'rwm' : n.permissions === 'none' ? '' : n.permissions;
  const resources = (linux.resources ??= {});
  (resources.devices ??= []).push({ allow: true, type: dev.type, major: dev.major, minor: dev.minor, access });
}

const positive = (n: number | undefined) => (n !== undefined && n > 0 ? n : undefined);

// ---- mounts ----

/**
 * A CDI mount as an OCI mount. The library copies type and options verbatim and leaves a typeless
 * mount to runc's reading of its options; here a mount with no type is a bind mount outright and
 * a bind mount always carries "bind" (or "rbind"), so whatever runtime reads the spec agrees.
 */
function ociMount(m: CdiMount): OciMount {
  const type = m.type || 'bind';
  const options = [...(m.options ?? [])];
  if (type === 'bind' && !options.includes('bind') && !options.includes('rbind')) options.push('bind');
  return { destination: m.containerPath, type, source: m.hostPath, options };
}

/** Path depth as the library counts it: separators in the cleaned path ("/" is 1, "/a/b" is 2). */
function depth(p: string): number {
  const clean = p.replace(/\/+/g, '/').replace(/(.)\/$/, '$1');
  return clean.split('/').length - 1;
}

/** A mount at the same destination is replaced; then all mounts are ordered parents first (stable). */
function addMounts(s: OciSpecView, mounts: CdiMount[]): void {
  let list = s.mounts ?? [];
  for (const m of mounts) {
    list = list.filter((x) => x.destination !== m.containerPath);
    list.push(ociMount(m));
  }
  s.mounts = list
    .map((m, i) => ({ m, i, d: depth(m.destination) }))
    .sort((a, b) => a.d - b.d || a.i - b.i)
    .map((x) => x.m);
}

// ---- hooks and groups ----

function addHook(s: OciSpecView, h: CdiHook): void {
  const hook: OciHook = { path: h.path };
  if (h.args) hook.args = h.args;
  if (h.env) hook.env = h.env;
  if (h.timeout !== undefined) hook.timeout = h.timeout;
  ((s.hooks ??= {})[h.hookName] ??= []).push(hook);
}

/** Group 0 is never added (the library skips it: root is no supplementary group to grant). */
function addGid(p: OciProcess, gid: number): void {
  if (gid === 0) return;
  const user = (p.user ??= {});
  const gids = (user.additionalGids ??= []);
  if (!gids.includes(gid)) gids.push(gid);
}

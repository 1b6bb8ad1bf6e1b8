// A CDI spec file (github.com/cncf-tags/container-device-interface, SPEC.md) read and checked the
// way the reference library (tags.cncf.io/container-device-interface) checks it on load: a file
// it refuses is refused here too, with the same reasons, so `--device vendor.com/class=name` sees
// the same set of devices under this daemon as under the reference's.
import { extname } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { invalidArgument } from '../../lib/errors.ts';

export interface DeviceNode {
  path: string;
  hostPath?: string;
  type?: 'c' | 'b' | 'u' | 'p';
  major?: number;
  minor?: number;
  fileMode?: number;
  permissions?: string;
  uid?: number;
  gid?: number;
}

export interface CdiMount {
  hostPath: string;
  containerPath: string;
  type?: string;
  options?: string[];
}

export type HookName = 'prestart' | 'createRuntime' | 'createContainer' | 'startContainer' | 'poststart' | 'poststop';

export interface CdiHook {
  hookName: HookName;
  path: string;
  args?: string[];
  env?: string[];
  timeout?: number;
}

export interface ContainerEdits {
  env?: string[];
  deviceNodes?: DeviceNode[];
  mounts?: CdiMount[];
  hooks?: CdiHook[];
  additionalGids?: number[];
}

export interface CdiDevice {
  name: string;
  annotations?: Record<string, string>;
  containerEdits: ContainerEdits;
}

export interface CdiSpec {
  cdiVersion: string;
  kind: string;
  annotations?: Record<string, string>;
  devices: CdiDevice[];
  containerEdits?: ContainerEdits;
}

/** The spec versions the reference library still loads (it dropped 0.1.0 and 0.2.0 in practice). */
export const CDI_VERSIONS = ['0.3.0', '0.4.0', '0.5.0', '0.6.0', '0.7.0', '0.8.0'] as const;
const HOOK_NAMES = new Set<string>(['prestart', 'createRuntime', 'createContainer', 'startContainer', 'poststart', 'poststop']);
const NODE_TYPES = new Set<string>(['c', 'b', 'u', 'p']);

// The fields each object may carry: the library unmarshals strictly, so an unknown one is an error.
// intelRdt and netDevices are known (accepted) though nothing here applies them.
const SPEC_KEYS = ['cdiVersion', 'kind', 'annotations', 'devices', 'containerEdits'];
const DEVICE_KEYS = ['name', 'annotations', 'containerEdits'];
const EDIT_KEYS = ['env', 'deviceNodes', 'mounts', 'hooks', 'additionalGids', 'intelRdt', 'netDevices'];
const NODE_KEYS = ['path', 'hostPath', 'type', 'major', 'minor', 'fileMode', 'permissions', 'uid', 'gid'];
const MOUNT_KEYS = ['hostPath', 'containerPath', 'type', 'options'];
const HOOK_KEYS = ['hookName', 'path', 'args', 'env', 'timeout'];

export const qualifiedName = (kind: string, name: string): string => `${kind}=${name}`;

const isLetter = (c: string) => /^[A-Za-z]$/.test(c);
const isAlnum = (c: string) => /^[A-Za-z0-9]$/.test(c);

/** The library's vendor/class rule: a letter first, alphanumeric last, `_ - .` allowed between. */
function vendorOrClassError(what: string, s: string): string | undefined {
  if (s === '') return `invalid ${what}. empty name`;
  if (!isLetter(s[0]!)) return `invalid ${what}. "${s}", should start with letter`;
  for (const c of s.slice(1, -1)) if (!isAlnum(c) && !'_-.'.includes(c)) return `invalid ${what}. invalid character '${c}' in name "${s}"`;
  if (!isAlnum(s[s.length - 1]!)) return `invalid ${what}. "${s}", should end with a letter or digit`;
  return undefined;
}

/** The library's device name rule: alphanumeric at both ends, `_ - . :` allowed between. */
function deviceNameError(s: string): string | undefined {
  if (s === '') return 'invalid (empty) device name';
  if (!isAlnum(s[0]!)) return `invalid class "${s}", should start with a letter or digit`;
  for (const c of s.slice(1, -1)) if (!isAlnum(c) && !'_-.:'.includes(c)) return `invalid character '${c}' in device name "${s}"`;
  if (!isAlnum(s[s.length - 1]!)) return `invalid name "${s}", should end with a letter or digit`;
  return undefined;
}

/** `vendor/class` split at the first slash; undefined when either half is empty. */
function splitKind(kind: string): { vendor: string; class: string } | undefined {
  const i = kind.indexOf('/');
  if (i <= 0 || i === kind.length - 1) return undefined;
  return { vendor: kind.slice(0, i), class: kind.slice(i + 1) };
}


// ---- structural checks: each throws a plain message; parseSpec adds the file's name ----

type Obj = Record<string, unknown>;
const fail = (msg: string): never => { throw new Error(msg); };

function obj(v: unknown, where: string, keys: string[]): Obj {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) fail(`${where}: expected an object`);
  for (const k of Object.keys(v as Obj)) if (!keys.includes(k)) fail(`${where}: unknown field "${k}"`);
  return v as Obj;
}
// In a YAML file an unquoted `name: 0` is a number; the library's reader (sigs.k8s.io/yaml) turns
// such scalars into the string its field wants, so they are strings here too. JSON stays strict.
let scalarsAsStrings = false;

function str(v: unknown, where: string): string {
  if (typeof v === 'string') return v;
  if (scalarsAsStrings && (typeof v === 'number' || typeof v === 'boolean')) return String(v);
  return fail(`${where}: expected a string`);
}
function optStr(v: unknown, where: string): string | undefined {
  return v === undefined || v === null ? undefined : str(v, where);
}
function optUint(v: unknown, where: string): number | undefined {
  if (v === undefined || v === null) return undefined;
  return Number.isSafeInteger(v) && (v as number) >= 0 ? (v as number) : fail(`${where}: expected a non-negative integer`);
}
function optList<T>(v: unknown, where: string, item: (x: unknown, w: string) => T): T[] | undefined {
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v)) fail(`${where}: expected a list`);
  return (v as unknown[]).map((x, i) => item(x, `${where}[${i}]`));
}
function absolute(p: string, where: string): string {
  return p.startsWith('/') ? p : fail(`${where}: "${p}" is not an absolute path`);
}
function envList(v: unknown, where: string): string[] | undefined {
  const env = optList(v, where, str);
  for (const e of env ?? []) if (e.indexOf('=') <= 0) fail(`invalid environment variable "${e}"`);
  return env;
}
function annotations(v: unknown, where: string): Record<string, string> | undefined {
  if (v === undefined || v === null) return undefined;
  const o = obj(v, where, v && typeof v === 'object' ? Object.keys(v) : []);
  for (const [k, val] of Object.entries(o)) str(val, `${where}.${k}`);
  return o as Record<string, string>;
}

/** The object without its undefined fields, so parsed specs compare and serialize cleanly. */
function compact<T extends object>(o: T): T {
  for (const [k, v] of Object.entries(o)) if (v === undefined) delete (o as Obj)[k];
  return o;
}

function deviceNode(v: unknown, where: string): DeviceNode {
  const o = obj(v, where, NODE_KEYS);
  const path = str(o.path ?? '', `${where}.path`);
  if (path === '') fail('invalid (empty) device path');
  const type = optStr(o.type, `${where}.type`) || undefined;
  if (type !== undefined && !NODE_TYPES.has(type)) fail(`device "${path}": invalid type "${type}"`);
  const permissions = optStr(o.permissions, `${where}.permissions`) || undefined;
  // "none" is the library's way to ask for a device with no cgroup access at all.
  if (permissions !== undefined && permissions !== 'none' && !/^[rwm]+$/.test(permissions)) fail(`device "${path}": invalid permissions "${permissions}"`);
  const num = (k: string) => optUint(o[k], `${where}.${k}`);
  return compact({
    path: absolute(path, `${where}.path`), hostPath: optStr(o.hostPath, `${where}.hostPath`) || undefined, type: type as DeviceNode['type'],
    major: num('major'), minor: num('minor'), fileMode: num('fileMode'), permissions, uid: num('uid'), gid: num('gid'),
  });
}

function mount(v: unknown, where: string): CdiMount {
  const o = obj(v, where, MOUNT_KEYS);
  const hostPath = str(o.hostPath ?? '', `${where}.hostPath`);
  const containerPath = str(o.containerPath ?? '', `${where}.containerPath`);
  if (hostPath === '') fail('invalid mount, empty host path');
  if (containerPath === '') fail('invalid mount, empty container path');
  return compact({
    hostPath, containerPath: absolute(containerPath, `${where}.containerPath`),
    type: optStr(o.type, `${where}.type`) || undefined, options: optList(o.options, `${where}.options`, str),
  });
}

function hook(v: unknown, where: string): CdiHook {
  const o = obj(v, where, HOOK_KEYS);
  const hookName = str(o.hookName ?? '', `${where}.hookName`);
  if (!HOOK_NAMES.has(hookName)) fail(`invalid hook name "${hookName}"`);
  const path = str(o.path ?? '', `${where}.path`);
  if (path === '') fail(`invalid hook "${hookName}" with empty path`);
  return compact({
    hookName: hookName as HookName, path: absolute(path, `${where}.path`), args: optList(o.args, `${where}.args`, str),
    env: envList(o.env, `${where}.env`), timeout: optUint(o.timeout, `${where}.timeout`),
  });
}

function containerEdits(v: unknown, where: string): ContainerEdits {
  if (v === undefined || v === null) return {};
  const o = obj(v, where, EDIT_KEYS);
  const gid = (x: unknown, w: string) => optUint(x, w) ?? fail(`${w}: expected a non-negative integer`);
  return compact({
    env: envList(o.env, `${where}.env`), deviceNodes: optList(o.deviceNodes, `${where}.deviceNodes`, deviceNode),
    mounts: optList(o.mounts, `${where}.mounts`, mount), hooks: optList(o.hooks, `${where}.hooks`, hook),
    additionalGids: optList(o.additionalGids, `${where}.additionalGids`, gid),
  });
}

function isEmptyEdits(raw: unknown, e: ContainerEdits): boolean {
  const intelRdt = raw && typeof raw === 'object' ? (raw as Obj).intelRdt : undefined;
  return !e.env?.length && !e.deviceNodes?.length && !e.mounts?.length && !e.hooks?.length && !e.additionalGids?.length && intelRdt == null;
}

function device(v: unknown, where: string): CdiDevice {
  const o = obj(v, where, DEVICE_KEYS);
  const name = str(o.name ?? '', `${where}.name`);
  const nameErr = deviceNameError(name);
  if (nameErr) fail(nameErr);
  const edits = containerEdits(o.containerEdits, `device "${name}" containerEdits`);
  if (isEmptyEdits(o.containerEdits, edits)) fail(`invalid device "${name}": empty container edits`);
  return compact({ name, annotations: annotations(o.annotations, `device "${name}" annotations`), containerEdits: edits });
}

// ---- the version a spec's features need (the library's requiresV0x0) ----

function requiredVersion(spec: CdiSpec, raw: Obj): string {
  const edits = [spec.containerEdits ?? {}, ...spec.devices.map((d) => d.containerEdits)];
  // intelRdt is not kept in the parsed spec: look for it in the file's own objects.
  const rawDevices: unknown[] = Array.isArray(raw.devices) ? raw.devices : [];
  const rawEdits = [raw.containerEdits, ...rawDevices.map((d) => (d as Obj | null)?.containerEdits)] as Array<Obj | undefined>;
  const annotated = (a: Record<string, string> | undefined) => !!a && Object.keys(a).length > 0;
  if (rawEdits.some((e) => e?.intelRdt != null) || edits.some((e) => e.additionalGids?.length)) return '0.7.0';
  if (annotated(spec.annotations) || spec.devices.some((d) => annotated(d.annotations)) || splitKind(spec.kind)?.class.includes('.')) return '0.6.0';
  if (spec.devices.some((d) => !isLetter(d.name[0]!)) || edits.some((e) => e.deviceNodes?.some((n) => n.hostPath))) return '0.5.0';
  if (edits.some((e) => e.mounts?.some((m) => m.type))) return '0.4.0';
  return '0.3.0';
}

const versionNum = (v: string) => v.split('.').reduce((n, part) => n * 1000 + Number(part), 0);

function knownVersion(version: string): void {
  if (!(CDI_VERSIONS as readonly string[]).includes(version.replace(/^v/, ''))) fail(`invalid version "${version}"`);
}

/** The features used must exist in the version declared (a 0.3.0 spec may not use mount types). */
function featuresFitVersion(spec: CdiSpec, raw: Obj): void {
  const v = spec.cdiVersion.replace(/^v/, '');
  const min = requiredVersion(spec, raw);
  if (versionNum(min) > versionNum(v)) fail(`the spec version must be at least v${min}`);
}

function decode(text: string, path: string): unknown {
  // A .json file is JSON; anything else goes through YAML (a superset of JSON). YAML 1.1, as the
  // library's sigs.k8s.io/yaml reads it: 0644 is octal there, and it is what spec writers meant.
  if (extname(path) === '.json') return JSON.parse(text);
  return parseYaml(text, { version: '1.1' });
}

/** A CDI spec file's text, checked as the reference library checks it. Throws InvalidArgument naming the file. */
export function parseSpec(text: string, path: string): CdiSpec {
  let raw: unknown;
  try {
    raw = decode(text, path);
  } catch (err) {
    throw invalidArgument(`failed to parse CDI Spec "${path}": failed to unmarshal CDI Spec: ${(err as Error).message}`, err);
  }
  if (raw === null || raw === undefined) throw invalidArgument(`failed to parse CDI Spec "${path}", no Spec data`);
  scalarsAsStrings = extname(path) !== '.json';
  try {
    return checkSpec(raw);
  } catch (err) {
    throw invalidArgument(`invalid CDI Spec "${path}": ${(err as Error).message}`, err);
  } finally {
    scalarsAsStrings = false;
  }
}

function checkSpec(raw: unknown): CdiSpec {
  const o = obj(raw, 'spec', SPEC_KEYS);
  const kind = str(o.kind ?? '', 'kind');
  const spec: CdiSpec = { cdiVersion: str(o.cdiVersion ?? '', 'cdiVersion'), kind, devices: [] };
  knownVersion(spec.cdiVersion);
  const parts = splitKind(kind) ?? { vendor: '', class: kind };
  const kindErr = vendorOrClassError('vendor', parts.vendor) ?? vendorOrClassError('class', parts.class);
  if (kindErr) fail(kindErr);
  const ann = annotations(o.annotations, 'annotations');
  if (ann) spec.annotations = ann;
  if (o.containerEdits != null) spec.containerEdits = containerEdits(o.containerEdits, 'containerEdits');
  const seen = new Set<string>();
  for (const d of optList(o.devices, 'devices', device) ?? []) {
    if (seen.has(d.name)) fail(`invalid spec, multiple device "${d.name}"`);
    seen.add(d.name);
    spec.devices.push(d);
  }
  if (spec.devices.length === 0) fail('invalid spec, no devices');
  featuresFitVersion(spec, o);
  return spec;
}

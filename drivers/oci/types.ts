// The narrow input shapes the spec builder reads. Declared here (drivers never import the store);
// structurally compatible with the store's ContainerConfig / HostConfig, whose less common fields
// (Memory, Mounts, Ulimits, ...) are read through the index signature and checked at runtime.

export interface SpecContainerConfig {
  Hostname: string;
  Domainname?: string;
  User: string;
  Tty: boolean;
  Env: string[] | null;
  WorkingDir: string;
  [key: string]: unknown;
}

export interface SpecHostConfig {
  Binds: string[] | null;
  NetworkMode: string;
  Privileged: boolean;
  ReadonlyRootfs: boolean;
  ShmSize: number;
  CapAdd: string[] | null;
  CapDrop: string[] | null;
  Dns: string[] | null;
  DnsOptions: string[] | null;
  DnsSearch: string[] | null;
  ExtraHosts: string[] | null;
  ConsoleSize?: [number, number] | null;
  [key: string]: unknown;
}

export interface EtcFiles {
  hostname: string;
  hosts: string;
  resolvConf: string;
}

export interface SpecInput {
  id: string;
  config: SpecContainerConfig;
  hostConfig: SpecHostConfig;
  path: string;
  args: string[];
  rootfs: string;
  /** Image Env; the container's Env (config.Env) overrides it key by key. Usually already merged. */
  imageEnv: string[];
  files: EtcFiles;
  cgroupsPath: string;
  /** Path of a network namespace to join (bridge networking prepared elsewhere). */
  netnsPath?: string;
  /** Volume mounts resolved to host paths by the caller (volumes, and binds VolumesFrom copied). */
  volumeMounts?: ResolvedMount[];
}

export interface ResolvedMount {
  source: string;
  destination: string;
  readOnly: boolean;
  /** "rprivate" when empty. */
  propagation: string;
}

// ---- the parts of the OCI runtime spec we emit ---------------------------------------------

export interface OciMount {
  destination: string;
  type: string;
  source: string;
  options: string[];
}

export interface OciUser {
  uid: number;
  gid: number;
  additionalGids?: number[];
}

export interface OciDevice {
  path: string;
  type: string;
  major: number;
  minor: number;
  fileMode: number;
  uid: number;
  gid: number;
}

export interface OciDeviceRule {
  allow: boolean;
  type?: string;
  major?: number;
  minor?: number;
  access: string;
}

export interface OciSeccompArg {
  index: number;
  value: number;
  valueTwo?: number;
  op: string;
}

export interface OciSeccompSyscall {
  names: string[];
  action: string;
  errnoRet?: number;
  args?: OciSeccompArg[];
}

export interface OciSeccomp {
  defaultAction: string;
  defaultErrnoRet?: number;
  architectures?: string[];
  flags?: string[];
  syscalls?: OciSeccompSyscall[];
}

// Small typed readers over the index-signature fields of the host config.
export function numField(o: Record<string, unknown>, key: string): number {
  const v = o[key];
  return typeof v === 'number' && Number.isFinite(v) ? v : 0;
}

export function strField(o: Record<string, unknown>, key: string): string {
  const v = o[key];
  return typeof v === 'string' ? v : '';
}

export function listField(o: Record<string, unknown>, key: string): string[] {
  const v = o[key];
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
}

export function objList(o: Record<string, unknown>, key: string): Record<string, unknown>[] {
  const v = o[key];
  return Array.isArray(v) ? v.filter((x): x is Record<string, unknown> => !!x && typeof x === 'object') : [];
}

export function strMap(o: Record<string, unknown>, key: string): Record<string, string> {
  const v = o[key];
  const out: Record<string, string> = {};
  if (v && typeof v === 'object' && !Array.isArray(v)) {
    for (const [k, x] of Object.entries(v)) if (typeof x === 'string') out[k] = x;
  }
  return out;
}

// Turns a create request body into the stored ContainerConfig/HostConfig: defaults filled,
// the image's config merged in the reference daemon's way, bad input refused before any write.
import { checkResources, type HostCpus } from './resource-checks.ts';
import { mergeHealthcheck, parseHealthcheck } from './healthcheck.ts';
import { invalidArgument } from '../../lib/errors.ts';
import { mergeExposedPorts, normalizeExposedPorts, normalizePortBindings } from './ports.ts';
import type { ContainerConfig, HostConfig, ImageConfigBlob, RestartPolicy } from '../../store/types.ts';

export interface CreateDefaults {
  runtime: string;
  hasRuntime: (name: string) => boolean;
  shmSize: number;
  /** --default-ipc-mode ("private" unless set): a container's IpcMode when it names none. */
  ipcMode?: string;
  /** --default-cgroupns-mode ("private" unless set): a container's CgroupnsMode when it names none. */
  cgroupnsMode?: string;
  /** Whether the kernel has blkio weights (cgroup v1 CFQ/BFQ); without them a weight is discarded with a warning. */
  blkioWeight?: boolean;
  /** The CPUs and memory nodes a cpuset may name (sysfs); unknown: only the format is checked. */
  hostCpus?: Partial<HostCpus>;
  logConfig: { Type: string; Config: Record<string, string> };
  validateLogConfig: (cfg: { Type: string; Config: Record<string, string> }) => void;
  validateBind: (bind: string) => void;
}

export interface NormalizedCreate {
  config: ContainerConfig;
  hostConfig: HostConfig;
  path: string;
  args: string[];
  warnings: string[];
}

type Obj = Record<string, unknown>;

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

function strList(v: unknown, field: string): string[] | null {
  if (v === null || v === undefined) return null;
  if (typeof v === 'string') return [v];
  if (!Array.isArray(v) || v.some((x) => typeof x !== 'string')) throw invalidArgument(`invalid ${field}: expected an array of strings`);
  return v as string[];
}

function str(v: unknown, field: string): string {
  if (v === null || v === undefined) return '';
  if (typeof v !== 'string') throw invalidArgument(`invalid ${field}: expected a string`);
  return v;
}

function bool(v: unknown): boolean {
  return v === true;
}

function strMap(v: unknown, field: string): Record<string, string> {
  if (v === null || v === undefined) return {};
  if (!isObj(v) || Object.values(v).some((x) => typeof x !== 'string')) throw invalidArgument(`invalid ${field}: expected an object of strings`);
  return { ...(v as Record<string, string>) };
}

function envKey(e: string): string {
  const i = e.indexOf('=');
  return i < 0 ? e : e.slice(0, i);
}

/** Case-insensitive key lookup, as Go's JSON decoder matches fields. */
function field(o: Obj, name: string): unknown {
  if (name in o) return o[name];
  const lower = name.toLowerCase();
  for (const k of Object.keys(o)) if (k.toLowerCase() === lower) return o[k];
  return undefined;
}

export function normalizeCreate(body: unknown, image: ImageConfigBlob, defaults: CreateDefaults): NormalizedCreate {
  const b: Obj = isObj(body) ? body : {};
  const warnings: string[] = [];
  const ic = image.config ?? {};

  const userEnv = strList(field(b, 'Env'), 'Env') ?? [];
  for (const e of userEnv) if (e === '' || e.startsWith('=')) throw invalidArgument(`invalid environment variable: ${e}`);
  const env = [...userEnv];
  for (const e of ic.Env ?? []) if (!userEnv.some((u) => envKey(u) === envKey(e))) env.push(e);

  let cmd = strList(field(b, 'Cmd'), 'Cmd');
  let entrypoint = strList(field(b, 'Entrypoint'), 'Entrypoint');
  if (!entrypoint || entrypoint.length === 0) {
    if (!cmd || cmd.length === 0) cmd = ic.Cmd ?? null;
    if (entrypoint === null) entrypoint = ic.Entrypoint ?? null;
  }
  const command = [...(entrypoint ?? []), ...(cmd ?? [])];
  if (command.length === 0) throw invalidArgument('No command specified');

  const labels = { ...(ic.Labels ?? {}), ...strMap(field(b, 'Labels'), 'Labels') };
  const stopTimeout = field(b, 'StopTimeout');
  if (stopTimeout !== undefined && stopTimeout !== null && !Number.isInteger(stopTimeout)) throw invalidArgument('invalid StopTimeout: expected an integer');

  const config: ContainerConfig = {
    Hostname: str(field(b, 'Hostname'), 'Hostname'),
    Domainname: str(field(b, 'Domainname'), 'Domainname'),
    User: str(field(b, 'User'), 'User') || ic.User || '',
    AttachStdin: bool(field(b, 'AttachStdin')),
    AttachStdout: bool(field(b, 'AttachStdout')),
    AttachStderr: bool(field(b, 'AttachStderr')),
    ExposedPorts: null, // set below, once PortBindings are known
    Tty: bool(field(b, 'Tty')),
    OpenStdin: bool(field(b, 'OpenStdin')),
    StdinOnce: bool(field(b, 'StdinOnce')),
    Env: env,
    Cmd: cmd,
    Image: str(field(b, 'Image'), 'Image'),
    // The image's VOLUME paths are added to the container's own, as the reference merges them.
    Volumes: mergeVolumes(field(b, 'Volumes'), ic.Volumes),
    WorkingDir: str(field(b, 'WorkingDir'), 'WorkingDir') || ic.WorkingDir || '',
    Entrypoint: entrypoint,
    OnBuild: null,
    Labels: labels,
  };
  const mac = str(field(b, 'MacAddress'), 'MacAddress');
  if (mac) config.MacAddress = mac;
  const healthcheck = mergeHealthcheck(parseHealthcheck(field(b, 'Healthcheck')), ic.Healthcheck);
  if (healthcheck) config.Healthcheck = healthcheck;
  const shell = strList(field(b, 'Shell'), 'Shell') ?? ic.Shell ?? null;
  if (shell?.length) config.Shell = shell;
  const stopSignal = str(field(b, 'StopSignal'), 'StopSignal') || ic.StopSignal || '';
  if (stopSignal) config.StopSignal = stopSignal;
  if (typeof stopTimeout === 'number') config.StopTimeout = stopTimeout;
  if (config.WorkingDir && !config.WorkingDir.startsWith('/')) {
    throw invalidArgument(`the working directory '${config.WorkingDir}' is invalid, it needs to be an absolute path`);
  }

  const hostConfig = normalizeHostConfig(field(b, 'HostConfig'), defaults);
  const portBindings = hostConfig.PortBindings ?? null;
  // The container's own ports, every -p'd port and the image's EXPOSE ports, as the reference merges them.
  config.ExposedPorts = mergeExposedPorts(normalizeExposedPorts(field(b, 'ExposedPorts'), portBindings), ic.ExposedPorts);
  if (hostConfig.NetworkMode === 'host' && portBindings && Object.keys(portBindings).length > 0) {
    warnings.push('Published ports are discarded when using host network mode');
  }
  if (defaults.blkioWeight === false) warnings.push(...discardBlkioWeights(hostConfig as unknown as Record<string, unknown>));
  checkResources(hostConfig as unknown as Record<string, unknown>, defaults.hostCpus);
  return { config, hostConfig, path: command[0], args: command.slice(1), warnings };
}

export const BLKIO_WEIGHT_WARNING = 'Your kernel does not support Block I/O weight or the cgroup is not mounted. Weight discarded.';
const BLKIO_WEIGHT_DEVICE_WARNING = 'Your kernel does not support Block I/O weight_device or the cgroup is not mounted. Weight-device discarded.';

/** Without kernel support, blkio weights are dropped with the reference's warnings (the runtime would refuse them). */
function discardBlkioWeights(h: Record<string, unknown>): string[] {
  const out: string[] = [];
  if (typeof h.BlkioWeight === 'number' && h.BlkioWeight > 0) {
    h.BlkioWeight = 0;
    out.push(BLKIO_WEIGHT_WARNING);
  }
  if (Array.isArray(h.BlkioWeightDevice) && h.BlkioWeightDevice.length) {
    h.BlkioWeightDevice = [];
    out.push(BLKIO_WEIGHT_DEVICE_WARNING);
  }
  return out;
}

const RESTART_NAMES = new Set(['', 'no', 'always', 'unless-stopped', 'on-failure']);

/** HostConfig fields Go decodes as integers: anything else is refused as the reference's decoder refuses it. */
const INT_FIELDS = [
  'Memory', 'MemorySwap', 'MemoryReservation', 'KernelMemory', 'KernelMemoryTCP', 'CpuShares', 'CpuPeriod', 'CpuQuota', 'NanoCpus',
  'CpuRealtimePeriod', 'CpuRealtimeRuntime', 'CpuCount', 'CpuPercent', 'PidsLimit', 'BlkioWeight', 'ShmSize', 'OomScoreAdj',
  'MemorySwappiness', 'IOMaximumIOps', 'IOMaximumBandwidth',
] as const;

function checkIntegers(h: Obj): void {
  for (const k of INT_FIELDS) {
    const v = h[k];
    if (v === undefined || v === null || Number.isSafeInteger(v)) continue;
    const what = typeof v === 'number' ? `number ${v}` : Array.isArray(v) ? 'array' : typeof v === 'object' ? 'object' : typeof v;
    throw invalidArgument(`json: cannot unmarshal ${what} into Go struct field HostConfig.HostConfig.${k} of type int64`);
  }
}

function normalizeHostConfig(raw: unknown, d: CreateDefaults): HostConfig {
  const h: Obj = isObj(raw) ? { ...raw } : {};
  checkIntegers(h);
  let networkMode = str(field(h, 'NetworkMode'), 'NetworkMode') || 'default';
  if (networkMode === 'default') networkMode = 'bridge';

  const rp = field(h, 'RestartPolicy');
  const restart: RestartPolicy = { Name: 'no', MaximumRetryCount: 0 };
  if (isObj(rp)) {
    const name = str(field(rp, 'Name'), 'RestartPolicy.Name');
    if (!RESTART_NAMES.has(name)) throw invalidArgument(`invalid restart policy '${name}'`);
    const max = field(rp, 'MaximumRetryCount') ?? 0;
    if (!Number.isInteger(max) || (max as number) < 0) throw invalidArgument('invalid restart policy: maximum retry count cannot be negative');
    if (name !== 'on-failure' && (max as number) > 0) throw invalidArgument(`invalid restart policy: maximum retry count can only be used with 'on-failure'`);
    restart.Name = (name || 'no') as RestartPolicy['Name'];
    restart.MaximumRetryCount = max as number;
  }
  const autoRemove = bool(field(h, 'AutoRemove'));
  if (autoRemove && restart.Name !== 'no') throw invalidArgument(`can't create 'AutoRemove' container with restart policy`);

  const lc = field(h, 'LogConfig');
  let logConfig = { Type: d.logConfig.Type, Config: { ...d.logConfig.Config } };
  if (isObj(lc) && (field(lc, 'Type') || field(lc, 'Config'))) {
    logConfig = { Type: str(field(lc, 'Type'), 'LogConfig.Type') || d.logConfig.Type, Config: strMap(field(lc, 'Config'), 'LogConfig.Config') };
  }
  d.validateLogConfig(logConfig);

  const runtime = str(field(h, 'Runtime'), 'Runtime') || d.runtime;
  if (!d.hasRuntime(runtime)) throw invalidArgument(`unknown or invalid runtime name: ${runtime}`);

  const binds = strList(field(h, 'Binds'), 'Binds');
  for (const b of binds ?? []) d.validateBind(b);

  const ipcMode = str(field(h, 'IpcMode'), 'IpcMode') || d.ipcMode || 'private';
  if (!['none', 'private', 'shareable', 'host'].includes(ipcMode) && !/^container:.+/.test(ipcMode)) throw invalidArgument(`invalid IPC mode: ${ipcMode}`);
  const cgroupnsMode = str(field(h, 'CgroupnsMode'), 'CgroupnsMode') || d.cgroupnsMode || 'private';
  if (cgroupnsMode !== 'host' && cgroupnsMode !== 'private') throw invalidArgument(`invalid cgroup namespace mode: ${cgroupnsMode}`);
  const pidMode = str(field(h, 'PidMode'), 'PidMode');
  if (pidMode && pidMode !== 'host' && !/^container:.+/.test(pidMode)) throw invalidArgument(`invalid PID mode: ${pidMode}`);
  const init = field(h, 'Init');
  if (init !== undefined && init !== null && typeof init !== 'boolean') throw invalidArgument('invalid Init: expected a boolean');

  const shm = field(h, 'ShmSize');
  if (shm !== undefined && shm !== null && (!Number.isInteger(shm) || (shm as number) < 0)) throw invalidArgument('SHM size can not be less than 0');

  return {
    ...h,
    Binds: binds,
    NetworkMode: networkMode,
    RestartPolicy: restart,
    AutoRemove: autoRemove,
    LogConfig: logConfig,
    Privileged: bool(field(h, 'Privileged')),
    ReadonlyRootfs: bool(field(h, 'ReadonlyRootfs')),
    ShmSize: (shm as number) || d.shmSize,
    IpcMode: ipcMode,
    PidMode: pidMode,
    CgroupnsMode: cgroupnsMode,
    Runtime: runtime,
    CapAdd: strList(field(h, 'CapAdd'), 'CapAdd'),
    CapDrop: strList(field(h, 'CapDrop'), 'CapDrop'),
    Dns: strList(field(h, 'Dns'), 'Dns') ?? [],
    DnsOptions: strList(field(h, 'DnsOptions'), 'DnsOptions') ?? [],
    DnsSearch: strList(field(h, 'DnsSearch'), 'DnsSearch') ?? [],
    ExtraHosts: strList(field(h, 'ExtraHosts'), 'ExtraHosts'),
    PortBindings: normalizePortBindings(field(h, 'PortBindings')),
    PublishAllPorts: bool(field(h, 'PublishAllPorts')),
  };
}

function mergeVolumes(own: unknown, image: Record<string, object> | undefined): Record<string, object> | null {
  const out: Record<string, object> = { ...(image ?? {}), ...(isObj(own) ? (own as Record<string, object>) : {}) };
  return Object.keys(out).length ? out : null;
}

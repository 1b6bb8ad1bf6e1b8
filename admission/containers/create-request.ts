// Turns a create request body into the stored ContainerConfig/HostConfig: defaults filled,
// the image's config merged in the reference daemon's way, bad input refused before any write.
import { cdiDevicesOf, type CdiCatalog, type DeviceRequest } from '../../lib/device-requests.ts';
import { discardLimits } from './no-cgroups.ts';
import { checkResources, type HostCpus } from './resource-checks.ts';
import { mergeHealthcheck, parseHealthcheck } from './healthcheck.ts';
import { invalidArgument } from '../../lib/errors.ts';
import { mergeExposedPorts, normalizeExposedPorts, normalizePortBindings } from './port-bindings.ts';
import type { CreateBody, CreateHostConfig } from './create-schema.ts';
import type { ContainerConfig, HostConfig, RestartPolicy } from '../../store/kinds/container.ts';
import type { ImageConfigBlob } from '../../store/kinds/image.ts';

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
  /** The CDI devices known (features.cdi on); undefined: CDI is off. */
  cdi?: () => CdiCatalog | undefined;
  /** Containers get no cgroups (rootless mode on cgroup v1): limits are discarded with the reference's warnings. */
  noCgroups?: boolean;
  /** --userns-remap is on: what cannot share the host's namespaces from a user namespace is refused. */
  usernsRemap?: boolean;
  /**
   * Where SELinux is active: a new container's labels from its HostConfig, and its SecurityOpt with
   * the label options the reference adds (label=disable for --privileged, host pid/ipc; a joined
   * container's label).
   */
  selinuxLabels?: (hostConfig: HostConfig) => { securityOpt: string[]; labels?: { processLabel: string; mountLabel: string } };
}

export interface NormalizedCreate {
  config: ContainerConfig;
  hostConfig: HostConfig;
  path: string;
  args: string[];
  warnings: string[];
}

function envKey(e: string): string {
  const i = e.indexOf('=');
  return i < 0 ? e : e.slice(0, i);
}

/** `b` is the body as parseCreateBody answers it: its types are Go's, only its meaning is checked here. */
export function normalizeCreate(b: CreateBody, image: ImageConfigBlob, defaults: CreateDefaults): NormalizedCreate {
  const warnings: string[] = [];
  const ic = image.config ?? {};

  const userEnv = b.Env ?? [];
  for (const e of userEnv) if (e === '' || e.startsWith('=')) throw invalidArgument(`invalid environment variable: ${e}`);
  const env = [...userEnv];
  for (const e of ic.Env ?? []) if (!userEnv.some((u) => envKey(u) === envKey(e))) env.push(e);

  let cmd = b.Cmd ?? null;
  let entrypoint = b.Entrypoint ?? null;
  if (!entrypoint || entrypoint.length === 0) {
    if (!cmd || cmd.length === 0) cmd = ic.Cmd ?? null;
    if (entrypoint === null) entrypoint = ic.Entrypoint ?? null;
  }
  const command = [...(entrypoint ?? []), ...(cmd ?? [])];
  if (command.length === 0) throw invalidArgument('No command specified');

  const labels = { ...(ic.Labels ?? {}), ...(b.Labels ?? {}) };

  const config: ContainerConfig = {
    Hostname: b.Hostname ?? '',
    Domainname: b.Domainname ?? '',
    User: b.User || ic.User || '',
    AttachStdin: b.AttachStdin === true,
    AttachStdout: b.AttachStdout === true,
    AttachStderr: b.AttachStderr === true,
    ExposedPorts: null, // set below, once PortBindings are known
    Tty: b.Tty === true,
    OpenStdin: b.OpenStdin === true,
    StdinOnce: b.StdinOnce === true,
    Env: env,
    Cmd: cmd,
    Image: b.Image ?? '',
    // The image's VOLUME paths are added to the container's own, as the reference merges them.
    Volumes: mergeVolumes(b.Volumes, ic.Volumes),
    WorkingDir: b.WorkingDir || ic.WorkingDir || '',
    Entrypoint: entrypoint,
    OnBuild: null,
    Labels: labels,
  };
  const mac = b.MacAddress;
  if (mac) config.MacAddress = mac;
  const healthcheck = mergeHealthcheck(parseHealthcheck(b.Healthcheck), ic.Healthcheck);
  if (healthcheck) config.Healthcheck = healthcheck;
  const shell = b.Shell ?? ic.Shell ?? null;
  if (shell?.length) config.Shell = shell;
  const stopSignal = b.StopSignal || ic.StopSignal || '';
  if (stopSignal) config.StopSignal = stopSignal;
  if (typeof b.StopTimeout === 'number') config.StopTimeout = b.StopTimeout;
  if (config.WorkingDir && !config.WorkingDir.startsWith('/')) {
    throw invalidArgument(`the working directory '${config.WorkingDir}' is invalid, it needs to be an absolute path`);
  }

  const hostConfig = normalizeHostConfig(b.HostConfig ?? {}, defaults);
  const portBindings = hostConfig.PortBindings ?? null;
  // The container's own ports, every -p'd port and the image's EXPOSE ports, as the reference merges them.
  config.ExposedPorts = mergeExposedPorts(normalizeExposedPorts(b.ExposedPorts, portBindings), ic.ExposedPorts);
  if (hostConfig.NetworkMode === 'host' && portBindings && Object.keys(portBindings).length > 0) {
    warnings.push('Published ports are discarded when using host network mode');
  }
  if (defaults.noCgroups) warnings.push(...discardLimits(hostConfig as unknown as Record<string, unknown>));
  if (defaults.blkioWeight === false) warnings.push(...discardBlkioWeights(hostConfig as unknown as Record<string, unknown>));
  checkResources(hostConfig as unknown as Record<string, unknown>, defaults.hostCpus);
  // Device requests and CDI-named devices: refused in the reference's words before anything is written.
  cdiDevicesOf(hostConfig.DeviceRequests as DeviceRequest[] | undefined, hostConfig.Devices as Array<{ PathOnHost?: string }> | undefined, defaults.cdi?.());
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

function normalizeHostConfig(h: CreateHostConfig, d: CreateDefaults): HostConfig {
  let networkMode = h.NetworkMode || 'default';
  if (networkMode === 'default') networkMode = 'bridge';

  const rp = h.RestartPolicy;
  const restart: RestartPolicy = { Name: 'no', MaximumRetryCount: 0 };
  if (rp) {
    const name = rp.Name ?? '';
    if (!RESTART_NAMES.has(name)) throw invalidArgument(`invalid restart policy '${name}'`);
    const max = rp.MaximumRetryCount ?? 0;
    if (max < 0) throw invalidArgument('invalid restart policy: maximum retry count cannot be negative');
    if (name !== 'on-failure' && max > 0) throw invalidArgument(`invalid restart policy: maximum retry count can only be used with 'on-failure'`);
    restart.Name = (name || 'no') as RestartPolicy['Name'];
    restart.MaximumRetryCount = max;
  }
  if (h.AutoRemove === true && restart.Name !== 'no') throw invalidArgument(`can't create 'AutoRemove' container with restart policy`);

  const lc = h.LogConfig;
  // As the reference's mergeAndVerifyLogConfig: the daemon's default options fill what the
  // container leaves unset when it uses the default driver; the cache-* options always do.
  const logConfig = { Type: lc?.Type || d.logConfig.Type, Config: { ...(lc?.Config ?? {}) } };
  for (const [k, v] of Object.entries(d.logConfig.Config)) {
    if ((logConfig.Type === d.logConfig.Type || /^cache-(disabled|max-file|max-size|compress)$/.test(k)) && !Object.hasOwn(logConfig.Config, k)) logConfig.Config[k] = v;
  }
  d.validateLogConfig(logConfig);

  const runtime = h.Runtime || d.runtime;
  if (!d.hasRuntime(runtime)) throw invalidArgument(`unknown or invalid runtime name: ${runtime}`);

  const binds = h.Binds ?? null;
  for (const b of binds ?? []) d.validateBind(b);

  const ipcMode = h.IpcMode || d.ipcMode || 'private';
  if (!['none', 'private', 'shareable', 'host'].includes(ipcMode) && !/^container:.+/.test(ipcMode)) throw invalidArgument(`invalid IPC mode: ${ipcMode}`);
  const cgroupnsMode = h.CgroupnsMode || d.cgroupnsMode || 'private';
  if (cgroupnsMode !== 'host' && cgroupnsMode !== 'private') throw invalidArgument(`invalid cgroup namespace mode: ${cgroupnsMode}`);
  const pidMode = h.PidMode ?? '';
  if (pidMode && pidMode !== 'host' && !/^container:.+/.test(pidMode)) throw invalidArgument(`invalid PID mode: ${pidMode}`);
  if (d.usernsRemap) checkUsernsConflicts(h.UsernsMode ?? '', h.Privileged === true, networkMode, pidMode);

  const shm = h.ShmSize;
  if (typeof shm === 'number' && shm < 0) throw invalidArgument('SHM size can not be less than 0');

  return {
    ...h,
    Binds: binds,
    NetworkMode: networkMode,
    RestartPolicy: restart,
    AutoRemove: h.AutoRemove === true,
    LogConfig: logConfig,
    Privileged: h.Privileged === true,
    ReadonlyRootfs: h.ReadonlyRootfs === true,
    ShmSize: shm || d.shmSize,
    IpcMode: ipcMode,
    PidMode: pidMode,
    CgroupnsMode: cgroupnsMode,
    Runtime: runtime,
    CapAdd: h.CapAdd ?? null,
    CapDrop: h.CapDrop ?? null,
    Dns: h.Dns ?? [],
    DnsOptions: h.DnsOptions ?? [],
    DnsSearch: h.DnsSearch ?? [],
    ExtraHosts: h.ExtraHosts ?? null,
    PortBindings: normalizePortBindings(h.PortBindings),
    PublishAllPorts: h.PublishAllPorts === true,
  };
}

/** With --userns-remap, what needs the host's user namespace (the reference's words, 20.10). */
function checkUsernsConflicts(usernsMode: string, privileged: boolean, networkMode: string, pidMode: string): void {
  if (usernsMode === 'host') return;
  if (privileged) throw invalidArgument('privileged mode is incompatible with user namespaces.  You must run the container in the host namespace when running privileged mode');
  if (networkMode === 'host') throw invalidArgument("cannot share the host's network namespace when user namespaces are enabled");
  if (pidMode === 'host') throw invalidArgument('cannot share the host PID namespace when user namespaces are enabled');
}

function mergeVolumes(own: Record<string, unknown> | null | undefined, image: Record<string, object> | undefined): Record<string, object> | null {
  const out: Record<string, object> = { ...(image ?? {}), ...((own ?? {}) as Record<string, object>) };
  return Object.keys(out).length ? out : null;
}

// The JSON shapes clients read: ContainerInspect and ContainerSummary, built from spec + status.
import { mountsView } from './mounts-view.ts';
import { portsView, summaryPorts } from './ports.ts';
import { ZERO_TIME } from '../../lib/ids.ts';
import { type ContainerSpec, type ContainerStatus, type HealthState, isRunning, type ContainerResource as CR } from '../../store/kinds/container.ts';
import { pluggedAddresses, type EndpointResource } from '../../store/kinds/endpoint.ts';

/** A container's endpoint record (on its NetworkMode network, marked primary, or another). */
export type EndpointRecord = Pick<EndpointResource, 'spec' | 'status'>;

export function stateName(s: ContainerStatus): string {
  if (s.phase === 'removing') return 'removing';
  return s.phase;
}

function liveEndpoint(status: ContainerStatus) {
  return isRunning(status) && status.endpoint ? status.endpoint : null;
}

const BUILTIN = new Set(['bridge', 'host', 'none']);

type EndpointConfig = { Aliases?: string[] | null; IPAMConfig?: unknown; Links?: string[] | null; MacAddress?: string; DriverOpts?: Record<string, string> | null } | null;

type EndpointLike = Pick<NonNullable<ContainerStatus['endpoint']>, 'MacAddress' | 'NetworkID' | 'EndpointID' | 'Gateway' | 'IPAddress' | 'IPPrefixLen' | 'GlobalIPv6Address' | 'GlobalIPv6PrefixLen' | 'IPv6Gateway'>;

/** A network's name for a reference to it (name, id or id prefix); the reference itself when unknown. */
export type NetworkNameOf = (ref: string) => string;

/**
 * One NetworkSettings.Networks entry: the client's settings for it, the live endpoint's addresses.
 * Not plugged in (created, stopped), the MAC address shown is the one asked for, as the reference shows it.
 */
function networkEntry(spec: ContainerSpec, name: string, cfg: EndpointConfig, ep: EndpointLike | null): Record<string, unknown> {
  // On a user-defined network a container answers to its name, short id and aliases (DNS).
  const user = !BUILTIN.has(name);
  const dnsNames = user && ep ? [...new Set([spec.name.replace(/^\//, ''), spec.id.slice(0, 12), ...(cfg?.Aliases ?? [])])] : null;
  return {
    IPAMConfig: cfg?.IPAMConfig ?? null, Links: cfg?.Links ?? null, Aliases: cfg?.Aliases?.length ? cfg.Aliases : null,
    MacAddress: ep?.MacAddress || cfg?.MacAddress || '', NetworkID: ep?.NetworkID ?? '',
    EndpointID: ep?.EndpointID ?? '', Gateway: ep?.Gateway ?? '', IPAddress: ep?.IPAddress ?? '',
    IPPrefixLen: ep?.IPPrefixLen ?? 0, IPv6Gateway: ep?.IPv6Gateway ?? '', GlobalIPv6Address: ep?.GlobalIPv6Address ?? '',
    GlobalIPv6PrefixLen: ep?.GlobalIPv6PrefixLen ?? 0, DriverOpts: cfg?.DriverOpts ?? null, DNSNames: dnsNames,
  };
}

/** NetworkSettings.Networks, keyed by network name as the reference keys it (also when the client gave an id). */
function networks(spec: ContainerSpec, status: ContainerStatus, nameOf: NetworkNameOf, records: readonly EndpointRecord[] | undefined, isBridge: (ref: string) => boolean): Record<string, unknown> {
  const mode = spec.hostConfig.NetworkMode;
  const ref = mode.startsWith('container:') ? '' : mode === 'default' ? 'bridge' : mode;
  if (!ref) return {};
  const primary = BUILTIN.has(ref) ? ref : nameOf(ref);
  const out: Record<string, unknown> = {};
  const own = records?.find((e) => e.spec.primary && e.spec.desired === 'present');
  if (own) {
    // Plugged by the start step (status.endpoint), or connected again while running (the record's).
    const plugged = pluggedAddresses(own.status, status.pid);
    out[primary] = networkEntry(spec, primary, own.spec.config, liveEndpoint(status) ?? (plugged && { ...plugged, NetworkID: own.spec.networkId }));
  } else if (!records || !isBridge(ref)) {
    // No records (host, none, the default mode without a default bridge): its settings are the spec's.
    const eps = (spec.networkingConfig as { EndpointsConfig?: Record<string, EndpointConfig> | null } | null)?.EndpointsConfig ?? {};
    const named = Object.entries(eps).map(([key, cfg]) => ({ name: key === 'default' ? 'bridge' : BUILTIN.has(key) ? key : nameOf(key), cfg }));
    const cfg = named.find((e) => e.name === primary || (BUILTIN.has(e.name) && BUILTIN.has(primary)));
    out[primary] = networkEntry(spec, primary, cfg?.cfg ?? null, liveEndpoint(status));
  }
  // (A bridge network without its primary record: the container was disconnected from it.)
  // The other networks it is connected to: its endpoint records, with addresses while plugged into this run.
  const running = isRunning(status);
  for (const e of records ?? []) {
    if (e.spec.desired !== 'present' || e.spec.primary) continue;
    const name = nameOf(e.spec.networkId) === e.spec.networkId ? e.spec.networkName : nameOf(e.spec.networkId);
    if (name === primary) continue;
    const plugged = running ? pluggedAddresses(e.status, status.pid) : null;
    out[name] = networkEntry(spec, name, e.spec.config, plugged && { ...plugged, NetworkID: e.spec.networkId });
  }
  return out;
}

/** The Id clients see of an image record (api/images/resolve.ts shownImageId). */
type ShownImageId = (name: string) => string;

export function inspectView(
  r: CR,
  opts: { apiVersion: number; graphDriverData: Record<string, string>; size?: { rw: number; rootFs: number }; volumeSource?: (name: string) => string; networkName?: NetworkNameOf; endpoints?: readonly EndpointRecord[]; isBridgeNetwork?: (ref: string) => boolean; execIds?: readonly string[]; imageId?: ShownImageId },
): Record<string, unknown> {
  const { spec, status } = r;
  const running = status.phase === 'running' || status.phase === 'paused';
  const out: Record<string, unknown> = {
    Id: spec.id,
    Created: spec.created,
    Path: spec.path,
    Args: spec.args,
    State: {
      Status: stateName(status),
      Running: running,
      Paused: status.phase === 'paused',
      Restarting: status.phase === 'restarting',
      OOMKilled: status.oomKilled,
      Dead: status.phase === 'dead',
      Pid: status.pid,
      ExitCode: status.exitCode,
      Error: status.error,
      StartedAt: status.startedAt || ZERO_TIME,
      FinishedAt: status.finishedAt || ZERO_TIME,
      ...(healthOf(r) ? { Health: healthOf(r) } : {}),
    },
    Image: opts.imageId ? opts.imageId(spec.imageId) : spec.imageId,
    ResolvConfPath: status.resolvConfPath,
    HostnamePath: status.hostnamePath,
    HostsPath: status.hostsPath,
    LogPath: inspectLogPath(spec.hostConfig.LogConfig.Type, status.logPath),
    Name: spec.name,
    RestartCount: status.restartCount,
    Driver: status.driver,
    Platform: 'linux',
    MountLabel: spec.labels?.mountLabel ?? '',
    ProcessLabel: spec.labels?.processLabel ?? '',
    AppArmorProfile: '',
    // Its execs not yet ended (created or running), as the reference lists them; null when none.
    ExecIDs: opts.execIds?.length ? [...opts.execIds] : null,
    HostConfig: spec.hostConfig,
    GraphDriver: { Name: status.driver, Data: Object.keys(opts.graphDriverData).length ? opts.graphDriverData : null },
    Mounts: mountsView(spec, opts.volumeSource ?? (() => '')),
    Config: spec.config,
    NetworkSettings: {
      Bridge: '', SandboxID: running ? spec.id : '', SandboxKey: running ? (status.sandboxKey ?? '') : '', HairpinMode: false, LinkLocalIPv6Address: '',
      LinkLocalIPv6PrefixLen: 0, Ports: portsView(spec, status), SecondaryIPAddresses: null, SecondaryIPv6Addresses: null,
      EndpointID: liveEndpoint(status)?.EndpointID ?? '', Gateway: liveEndpoint(status)?.Gateway ?? '',
      GlobalIPv6Address: liveEndpoint(status)?.GlobalIPv6Address ?? '', GlobalIPv6PrefixLen: liveEndpoint(status)?.GlobalIPv6PrefixLen ?? 0,
      IPAddress: liveEndpoint(status)?.IPAddress ?? '', IPPrefixLen: liveEndpoint(status)?.IPPrefixLen ?? 0, IPv6Gateway: liveEndpoint(status)?.IPv6Gateway ?? '',
      MacAddress: liveEndpoint(status)?.MacAddress ?? '',
      Networks: networks(spec, status, opts.networkName ?? ((ref) => ref), opts.endpoints, opts.isBridgeNetwork ?? (() => false)),
    },
  };
  if (opts.size) {
    out.SizeRw = opts.size.rw;
    out.SizeRootFs = opts.size.rootFs;
  }
  return out;
}

export function summaryView(
  r: CR,
  opts: {
    now: number; size?: { rw: number; rootFs: number }; volumeSource?: (name: string) => string; networkName?: NetworkNameOf; endpoints?: readonly EndpointRecord[];
    isBridgeNetwork?: (ref: string) => boolean; imageId?: ShownImageId;
    /** API 1.48, with the feature: the descriptor of the image's platform manifest. */
    manifestDescriptor?: (imageId: string) => Record<string, unknown> | undefined;
  },
): Record<string, unknown> {
  const { spec, status } = r;
  const out: Record<string, unknown> = {
    Id: spec.id,
    Names: [spec.name],
    Image: spec.config.Image,
    ImageID: opts.imageId ? opts.imageId(spec.imageId) : spec.imageId,
    ImageManifestDescriptor: opts.manifestDescriptor?.(spec.imageId),
    Command: [spec.path, ...spec.args].map(quoteArg).join(' '),
    Created: Math.floor(Date.parse(spec.created) / 1000),
    Ports: summaryPorts(spec, status),
    Labels: spec.config.Labels ?? {},
    State: stateName(status),
    Status: statusText(status, opts.now, healthOf(r)?.Status),
    HostConfig: { NetworkMode: spec.hostConfig.NetworkMode },
    NetworkSettings: { Networks: networks(spec, status, opts.networkName ?? ((ref) => ref), opts.endpoints, opts.isBridgeNetwork ?? (() => false)) },
    Mounts: mountsView(spec, opts.volumeSource ?? (() => '')),
  };
  if (opts.size) {
    out.SizeRw = opts.size.rw;
    out.SizeRootFs = opts.size.rootFs;
  }
  return out;
}

function quoteArg(a: string): string {
  return /\s/.test(a) ? `"${a}"` : a;
}

/**
 * State.Health for a container with a healthcheck: its state for the current (or last) run, or
 * "starting" before the first probe; undefined without a healthcheck.
 */
export function healthOf(r: CR): HealthState | undefined {
  const test = (r.spec.config.Healthcheck as { Test?: string[] } | undefined)?.Test;
  if (!test?.length || test[0] === 'NONE') return undefined;
  const s = r.status;
  if (s.health && s.healthRun === s.startedAt) return s.health;
  return { Status: 'starting', FailingStreak: 0, Log: [] };
}

/** "Up 5 seconds", "Exited (0) 3 seconds ago", "Created", ... as `docker ps` prints them; a health verdict after Up. */
export function statusText(s: ContainerStatus, now: number, health?: HealthState['Status']): string {
  const since = (t: string) => humanDuration(now - Date.parse(t));
  switch (s.phase) {
    case 'running':
      if (health === 'starting') return `Up ${since(s.startedAt)} (health: starting)`;
      return health ? `Up ${since(s.startedAt)} (${health})` : `Up ${since(s.startedAt)}`;
    case 'paused':
      return `Up ${since(s.startedAt)} (Paused)`;
    case 'restarting':
      return `Restarting (${s.exitCode}) ${since(s.finishedAt)} ago`;
    case 'removing':
      return 'Removal In Progress';
    case 'dead':
      return 'Dead';
    case 'exited':
      return `Exited (${s.exitCode}) ${since(s.finishedAt)} ago`;
    default:
      return 'Created';
  }
}

/** The reference daemon's human duration wording. */
export function humanDuration(ms: number): string {
  const seconds = Math.round(ms / 1000);
  if (seconds < 1) return 'Less than a second';
  if (seconds === 1) return '1 second';
  if (seconds < 60) return `${seconds} seconds`;
  const minutes = Math.round(ms / 60_000);
  if (minutes === 1) return 'About a minute';
  if (minutes < 60) return `${minutes} minutes`;
  const hours = Math.round(ms / 3_600_000);
  if (hours === 1) return 'About an hour';
  if (hours < 48) return `${hours} hours`;
  if (hours < 24 * 7 * 2) return `${Math.floor(hours / 24)} days`;
  if (hours < 24 * 30 * 2) return `${Math.floor(hours / 24 / 7)} weeks`;
  if (hours < 24 * 365 * 2) return `${Math.floor(hours / 24 / 30)} months`;
  return `${Math.floor(hours / 24 / 365)} years`;
}

/** Inspect's LogPath: the json-file log only (local and the remote drivers' cache are not an API). */
export function inspectLogPath(type: string, logPath: string): string {
  return (type || 'json-file') === 'json-file' ? logPath : '';
}

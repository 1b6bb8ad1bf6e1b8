// The container kind: name = 64-hex id. The API writes ContainerSpec (what the client asked for,
// merged with the image's defaults, and the level it wants: `desired`, `runGeneration`); the
// container reconciler writes ContainerStatus (what it observed). The zod schema and the migrations
// of older records are in container-schema.ts.
import { invalidArgument, notFound } from '../../lib/errors.ts';
import { defineKind } from '../kind.ts';
import type { Store } from '../store.ts';
import type { IndexDef, Resource } from '../types.ts';
import { ownerKeys, type OwnerRef } from '../owner.ts';
import { containerSpecSchema, containerStatusSchema, levelsFromCounters } from './container-schema.ts';

/** The Docker `Config` object as clients send it and as inspect returns it (merged with image defaults). */
export interface ContainerConfig {
  Hostname: string;
  Domainname: string;
  User: string;
  AttachStdin: boolean;
  AttachStdout: boolean;
  AttachStderr: boolean;
  ExposedPorts?: Record<string, object> | null;
  Tty: boolean;
  OpenStdin: boolean;
  StdinOnce: boolean;
  Env: string[] | null;
  Cmd: string[] | null;
  Healthcheck?: unknown;
  ArgsEscaped?: boolean;
  Image: string;
  Volumes?: Record<string, object> | null;
  WorkingDir: string;
  Entrypoint: string[] | null;
  NetworkDisabled?: boolean;
  MacAddress?: string;
  OnBuild?: string[] | null;
  Labels: Record<string, string>;
  StopSignal?: string;
  StopTimeout?: number | null;
  Shell?: string[] | null;
  [key: string]: unknown;
}

export interface RestartPolicy {
  Name: '' | 'no' | 'always' | 'unless-stopped' | 'on-failure';
  MaximumRetryCount: number;
}

export interface LogConfig {
  Type: string;
  Config: Record<string, string>;
}

/** The Docker `HostConfig` object, normalised (defaults filled) at create time. */
export interface HostConfig {
  Binds: string[] | null;
  NetworkMode: string;
  RestartPolicy: RestartPolicy;
  AutoRemove: boolean;
  LogConfig: LogConfig;
  Privileged: boolean;
  ReadonlyRootfs: boolean;
  ShmSize: number;
  Runtime: string;
  CapAdd: string[] | null;
  CapDrop: string[] | null;
  Dns: string[] | null;
  DnsOptions: string[] | null;
  DnsSearch: string[] | null;
  ExtraHosts: string[] | null;
  Init?: boolean | null;
  ConsoleSize?: [number, number] | null;
  PortBindings?: Record<string, Array<{ HostIp: string; HostPort: string }> | null> | null;
  PublishAllPorts?: boolean;
  /** Legacy links, stored as "/child:/parent/alias" (as given on user-defined networks). */
  Links?: string[] | null;
  /** --storage-opt: the container's layer options (a size), done or refused by the storage driver. */
  StorageOpt?: Record<string, string> | null;
  [key: string]: unknown;
}

export type ContainerDesired = 'created' | 'running' | 'paused' | 'stopped' | 'removed';

export interface ContainerSpec {
  id: string;
  /** With the leading slash, e.g. "/web". Unique among containers. */
  name: string;
  /** The object that made it (a stack), found by the `owner` index (store/owner.ts). */
  ownerRef?: OwnerRef;
  /** RFC 3339 nano creation time. */
  created: string;
  /** The image the container runs: content id `sha256:...`. */
  imageId: string;
  config: ContainerConfig;
  hostConfig: HostConfig;
  networkingConfig?: unknown;
  /** Executable and arguments actually run (Entrypoint + Cmd resolved at create). */
  path: string;
  args: string[];
  /**
   * Where the container should be: a level, never a count of requests. `removed`: tear down, then
   * the reconciler deletes the record.
   */
  desired: ContainerDesired;
  /**
   * Which run is wanted: `docker start` and `docker restart` bump it. A live run started for a
   * lower generation is stopped and replaced (restart); a run that ended is started again (start).
   * Whether the container is up at all follows from `desired`.
   */
  runGeneration: number;
  /** How to stop when asked to (`docker stop/restart -t -s`): signal and grace period in seconds. */
  stopOptions?: { signal?: string; timeout?: number | null };
  /**
   * The container's volume mounts, resolved at create: named and anonymous volumes from Binds,
   * Mounts and the image's VOLUME paths, and what VolumesFrom copied from other containers (which
   * may be host paths). Binds and tmpfs of its own stay in hostConfig.
   */
  mountPoints?: MountPoint[];
  /**
   * Its SELinux labels, chosen at create where SELinux is active (the daemon's --selinux-enabled
   * on a host that has it); the MCS level of the process label is this container's while it exists.
   */
  labels?: { processLabel: string; mountLabel: string };
  /** Set with desired = 'removed'. */
  remove?: { force: boolean; volumes: boolean };
  /** Set when the user stopped the container explicitly (restart policies must not restart it). */
  manuallyStopped: boolean;
}

export interface MountPoint {
  type: 'volume' | 'bind';
  /** The volume's name (type volume). */
  name: string;
  /** Host path (type bind: a bind copied by VolumesFrom). */
  source: string;
  destination: string;
  readOnly: boolean;
  /** The mode as written ("ro,z"), shown by inspect. */
  mode: string;
  propagation: string;
  /** Do not copy the image's content at the destination into an empty volume. */
  noCopy: boolean;
  /** A directory inside the volume to mount instead of its root. */
  subpath?: string;
}

export interface ContainerEndpoint {
  NetworkID: string;
  EndpointID: string;
  Gateway: string;
  IPAddress: string;
  IPPrefixLen: number;
  MacAddress: string;
  /** On an IPv6 network: the address, its prefix length and the default route. */
  GlobalIPv6Address?: string;
  GlobalIPv6PrefixLen?: number;
  IPv6Gateway?: string;
  /** Host bridge the endpoint is attached to. */
  Bridge?: string;
}

/** One published port of a running container: what `docker port`, inspect and ps show. */
export interface PublishedPort {
  containerPort: number;
  proto: 'tcp' | 'udp' | 'sctp';
  /** "0.0.0.0" unless a host address was asked for (or the daemon's --ip). */
  hostIp: string;
  hostPort: number;
}

/** One probe's result, as State.Health.Log shows it. */
export interface HealthLogEntry {
  /** RFC 3339 nano. */
  Start: string;
  End: string;
  ExitCode: number;
  Output: string;
}

/** State.Health: the healthcheck's verdict, its failing streak and the last five probes. */
export interface HealthState {
  Status: 'starting' | 'healthy' | 'unhealthy';
  FailingStreak: number;
  Log: HealthLogEntry[];
}

export type ContainerPhase = 'created' | 'running' | 'paused' | 'restarting' | 'removing' | 'exited' | 'dead';


export interface ContainerStatus {
  observedGeneration: number;
  phase: ContainerPhase;
  pid: number;
  exitCode: number;
  /** Last error (start failure), "" when none. */
  error: string;
  /** Error class of `error` (lib/errors ErrorCode), "" when none. Lets the API map a start failure to HTTP. */
  errorCode: string;
  startedAt: string;
  finishedAt: string;
  oomKilled: boolean;
  restartCount: number;
  /** The spec's runGeneration the current (or last) run was started for. */
  runGeneration: number;
  /**
   * While a stop is under way: when its grace period ends (epoch ms; -1: no end). Cleared once the
   * run is collected. A fact, so a stop survives a daemon crash and a worker never waits on it.
   */
  stopDeadline?: number | null;
  /** SIGKILL was sent for the stop (or removal) under way. */
  stopKilled?: boolean;
  /** While phase is `restarting`: when the restart policy's next start is due (epoch ms). */
  restartAt?: number | null;
  /** The back-off delay the last policy restart used (doubles while runs stay short). */
  restartDelayMs?: number;
  /** Delayed events of the lifecycle machine in a settled state (the restart back-off), due at `at`. */
  timers?: Array<{ id: string; event: { type: string }; at: number }>;
  /** Increments on every exit; `wait?condition=next-exit` waits for it to move. */
  exitSeq: number;
  /** Paths (host side) kept for inspect. */
  logPath: string;
  hostnamePath: string;
  hostsPath: string;
  resolvConfPath: string;
  /** Storage driver name and the mounted rootfs (when mounted). */
  driver: string;
  rootfs: string;
  /** True once the create step (directory, /etc files, read-write layer) is done. */
  prepared: boolean;
  /** The container's endpoint on its network while it runs (bridge mode), for inspect. */
  endpoint?: ContainerEndpoint | null;
  /** Host ports published for the current run (cleared when it ends). */
  ports?: PublishedPort[];
  /** The daemon stopped this running container (shutdown or crash): its restart policy applies at the next start. */
  restartOnBoot?: boolean;
  /** Network namespace path of the running container (SandboxKey). */
  sandboxKey?: string;
  /** Set once the reconciler has finished teardown for desired=removed (the record is deleted right after). */
  removed?: boolean;
  /** With a healthcheck: its state for the run started at `healthRun` (reset to starting by each start). */
  health?: HealthState;
  /** The startedAt of the run `health` belongs to. */
  healthRun?: string;
  /** When the next probe is due (epoch ms). A fact, so the timer is a requeue, never a sleeping worker. */
  healthNextAt?: number;
  /** The cgroup limits the running task has (JSON of the update resources), so a changed HostConfig is applied once. */
  appliedResources?: string;
  /** Why the last `docker update` of the running task failed, "" when it did not. */
  updateError?: string;
}

export type ContainerResource = Resource<ContainerSpec, ContainerStatus>;

export const Containers = defineKind<ContainerSpec, ContainerStatus>({
  name: 'container',
  version: 1,
  schema: { spec: containerSpecSchema, status: containerStatusSchema },
  migrations: { 0: levelsFromCounters },
  indexes: { name: (r) => [r.spec.name], owner: (r) => ownerKeys(r.spec) },
});

/** The container has a task: running, paused, or between a restart policy's runs (the reference's State.Running). */
export const isRunning = (s: Pick<ContainerStatus, 'phase'>): boolean => s.phase === 'running' || s.phase === 'paused' || s.phase === 'restarting';

/** Containers by name ("/web"): names are unique, so a key holds one container. */
export const CONTAINERS_BY_NAME = Containers.indexes.name!;

/** The container named `name` ("web" or "/web"), by the name index. */
export function containerByName(
  store: { byIndex<S, T>(def: IndexDef<S, T>, key: string): Resource<S, T>[] },
  name: string,
): Resource<ContainerSpec, ContainerStatus> | undefined {
  return store.byIndex(CONTAINERS_BY_NAME, name.startsWith('/') ? name : `/${name}`)[0];
}

/** A container named in a request: full id, then name, then a unique id prefix, as the reference looks one up. */
export function findContainer(store: Pick<Store, 'get' | 'list' | 'byIndex'>, ref: string): ContainerResource {
  if (!ref) throw invalidArgument('invalid name or ID supplied: ""');
  const exact = store.get(Containers, ref);
  if (exact) return exact;
  const byName = containerByName(store, ref);
  if (byName) return byName;
  if (/^[0-9a-f]+$/.test(ref)) {
    const matches = store.list(Containers).filter((c) => c.name.startsWith(ref));
    if (matches.length === 1) return matches[0]!;
    if (matches.length > 1) throw invalidArgument(`multiple IDs found with provided prefix: ${ref}`);
  }
  throw notFound(`No such container: ${ref}`);
}

/** The owner of a swarm task's container (reconcilers/node/task-runner.ts). */
export const swarmTaskOwner = (taskId: string): OwnerRef => ({ kind: 'swarm-task', name: taskId });

/** The containers that run swarm tasks on this node (the fence's and the fencer's walk too). */
export function swarmTaskContainers(store: Pick<Store, 'list'>): ContainerResource[] {
  return store.list(Containers).filter((c) => c.spec.ownerRef?.kind === 'swarm-task');
}

// What the container reconciler needs from the world. `cmd` fills these with the real drivers;
// tests may substitute fakes. Kept narrow so the reconciler reads as the lifecycle, not plumbing.
import type { Logger } from 'pino';
import type { ProbePort } from './health.ts';
import type { ContainerConfig, ContainerEndpoint, HostConfig, PublishedPort } from '../../store/kinds/container.ts';
import type { ContainerLogInfo } from '../../lib/ports/logs.ts';
import type { SupervisorTasks, TaskState } from '../../lib/ports/supervisor.ts';
import type { ProcessIO, StdioHub, StdioPort } from '../../lib/ports/stdio.ts';

/** The supervisor calls the run path makes (lib/ports/supervisor.ts). */
export interface SupervisorPort extends SupervisorTasks {
  /** Ids of the containers with a shim started before this daemon process (one the supervisor lost included). */
  staleShimIds?(): Promise<string[]>;
  /** Kills a shim the supervisor lost for container `id` (one with no task); true when there was one. */
  reapShim?(id: string): Promise<boolean>;
}

export type { TaskState };

/** A process's stdio (lib/ports/stdio.ts). */
export type ProcessIOLike = ProcessIO;
export type HubLike = StdioHub;
export type { StdioPort };

export interface LoggerLike {
  /** A Promise asks the caller to wait before the next chunk (the writer is behind). */
  log(stream: 'stdout' | 'stderr', chunk: Buffer): void | Promise<void>;
  close(): Promise<void>;
  /** log() keeps no reference to the chunk once it returns (drivers/logging's LogSink). */
  readonly copiesChunks?: boolean;
}

export interface LoggingPort {
  /** null for the `none` driver. */
  open(containerId: string, path: string, config: { Type: string; Config: Record<string, string> }, info?: ContainerLogInfo): LoggerLike | null | Promise<LoggerLike | null>;
}

export type { ContainerLogInfo };

export function containerLogInfo(spec: { id: string; name: string; imageId: string; created: string; path: string; args: string[]; config: { Image?: string; Env?: string[] | null; Labels?: Record<string, string> | null } }): ContainerLogInfo {
  return { id: spec.id, name: spec.name, imageId: spec.imageId, imageName: spec.config.Image ?? '', path: spec.path, args: spec.args, created: spec.created, env: spec.config.Env ?? [], labels: spec.config.Labels ?? {} };
}

export interface LayersPort {
  readonly driverName: string;
  /** `storageOpt`: the container's --storage-opt, done or refused by the driver. */
  createRW(id: string, parentChainId: string | null, storageOpt?: Readonly<Record<string, string>>): Promise<void>;
  mountRW(id: string): Promise<string>;
  unmountRW(id: string): Promise<void>;
  removeRW(id: string): Promise<void>;
  hasRW(id: string): boolean;
}

export interface SpecPort {
  /** Build the OCI spec for one run. */
  build(input: {
    id: string;
    config: ContainerConfig;
    hostConfig: HostConfig;
    path: string;
    args: string[];
    rootfs: string;
    imageEnv: string[];
    files: { hostname: string; hosts: string; resolvConf: string };
    cgroupsPath: string;
    /** The container's volume mounts as host paths. */
    volumeMounts?: Array<{ source: string; destination: string; readOnly: boolean; propagation: string }>;
    /** Its own network namespace, made by the daemon (absent: the runtime makes one). */
    netnsPath?: string;
    /** Its SELinux labels (ContainerSpec.labels), where SELinux is active. */
    selinux?: { processLabel: string; mountLabel: string };
  }): Promise<object>;
  /** The cgroup limits of a HostConfig, as `updateTask` takes them. */
  updateResources(hostConfig: HostConfig): object;
  /** `nameserver`: the embedded DNS of the container's user-defined network, instead of the host's servers. */
  writeEtcFiles(dir: string, config: ContainerConfig, hostConfig: HostConfig, opts?: { nameserver?: string }): Promise<{ hostname: string; hosts: string; resolvConf: string }>;
}

export interface RuntimePort {
  /** Supervisor runtime for a runtime name ('stdrt', drop-ins, shims); InvalidArgument when unknown. */
  resolve(name: string): { name: string; options?: object };
}

/** Container networking (bridge endpoints). Absent: only none/host/container: modes work. */
export interface NetworkPort {
  /** The container's endpoint for `networkMode` (durable address), or null when it needs none. */
  /** `ipv4`: the address the client asked for (--ip), on a user-defined network. */
  allocate(containerId: string, networkMode: string, opts?: { ipv4?: string; ipv6?: string; mac?: string }): Promise<ContainerEndpoint | null>;
  /** Wire the endpoint into a network namespace: of `pid` (a task created, not yet started), or mounted at a path. */
  attach(containerId: string, pid: number | string, ep: ContainerEndpoint): Promise<void>;
  detach(containerId: string): Promise<void>;
  /** Free the address (container removed). */
  release(containerId: string): Promise<void>;
  /** The embedded DNS server of the endpoint's network (its gateway), or undefined (the default bridge). */
  nameserverFor(ep: ContainerEndpoint): string | undefined;
}

/** Volumes a container mounts (reconcilers/volume/mounter.ts). Absent: a container with volume mounts cannot start. */
export interface VolumePort {
  /** Host path to bind for a mount of the volume by the run of `containerId` (a subpath inside it when given). */
  source(containerId: string, name: string, subpath?: string): Promise<string>;
  /** The run of `containerId` ended: a volume with mount options no other run uses is unmounted. */
  releaseRun(containerId: string): Promise<void>;
  /** Copy `src` (the image's content at the mount's destination) into the volume when it is empty. */
  copyUp(name: string, src: string): Promise<boolean>;
  /** The container is gone: mark the anonymous volumes it owns removed when `removeAnonymous`. */
  releaseOwned(containerId: string, removeAnonymous: boolean): void;
}

/** Published ports (reconcilers/network/ports.ts). Absent: port bindings are ignored. */
export interface PublishPort {
  publish(req: {
    containerId: string;
    containerName: string;
    endpoint: ContainerEndpoint;
    portBindings: HostConfig['PortBindings'];
    publishAll: boolean;
    exposedPorts: ContainerConfig['ExposedPorts'];
  }): Promise<PublishedPort[]>;
  unpublish(containerId: string): Promise<void>;
  /** Live restore: the ports a run of the last life published (rules and claims kept) proxied again. */
  adopt?(containerId: string): Promise<PublishedPort[]>;
}

/** The --icc=false exceptions of legacy links (reconcilers/network/link-rules.ts). */
export interface LinkFirewallPort {
  allow(containerId: string, networkId: string, parentIp: string, links: Array<{ ip: string; ports: Array<{ port: number; proto: string }> }>): Promise<void>;
  revoke(containerId: string): Promise<void>;
}

/** A run's network namespace, made on a file before its task (drivers/network/netns.ts). */
export interface NetnsPort {
  create(path: string, signal?: AbortSignal): Promise<void>;
  /** Unmount and delete; a namespace that is not there is fine. */
  remove(path: string): Promise<void>;
}

/** Host-side /dev/shm tmpfs of IPC-shareable containers (drivers/sys/shm.ts). */
export interface ShmPort {
  ensure(path: string, sizeBytes: number): Promise<void>;
  release(path: string): Promise<void>;
}

export interface ContainerReconcilerDeps {
  /** The shim group a run joins (its spec's group annotation), or undefined for a shim of its own. */
  shimGroup?: (id: string, runtime: string) => { annotation: string; group: string } | undefined;
  /** Live restore (reloadable): a live task of the last life is adopted, not stopped. */
  liveRestore?: () => boolean;
  network?: NetworkPort;
  shm?: ShmPort;
  /** Network namespaces made before the task (drivers/network/netns.ts); without it the task makes its own. */
  netns?: NetnsPort;
  /** Runs healthcheck probes in running containers; without it healthchecks are not run. */
  probes?: ProbePort;
  links?: LinkFirewallPort;
  ports?: PublishPort;
  volumes?: VolumePort;
  supervisor: SupervisorPort;
  stdio: StdioPort;
  logging: LoggingPort;
  layers: LayersPort;
  spec: SpecPort;
  runtimes: RuntimePort;
  /** Image facts the reconciler needs (read from the store's image records by cmd). */
  dataRoot: string;
  execRoot: string;
  cgroupParent: string;
  log: Logger;
  /** --userns-remap: the host ids of the containers' root, who must reach and own a container's files. */
  remapRoot?: { uid: number; gid: number };
}

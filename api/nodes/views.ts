// What the cluster's node records look like through the Engine API, in the shapes the reference
// (dockerd 20.10 in swarm mode, every node a manager) answers: the `Node` object of
// GET /nodes and GET /nodes/{id}, the `Swarm` section of GET /info, and the `Swarm` header of
// /_ping. Pure functions: the routes gather the records, the leader and the local state.
//
// Keys follow Go's encoding of moby's api/types/swarm structs: a field tagged omitempty is left
// out when it is the zero value (empty string, 0, false, empty map or slice, nil pointer), while
// nested structs are always present (omitempty never drops a struct).
import type { NodeRecord } from '../../lib/cluster/node-record.ts';
import { byteOrder } from '../../lib/compare.ts';
import { renderNodeSpec, type NodeSpec } from '../../lib/swarm/node-spec.ts';
import { joinHostPort } from '../../lib/host-port.ts';

/** The port swarm managers listen on; ManagerStatus.Addr and RemoteManagers[].Addr carry it. */
export const MANAGER_PORT = 2377;

/** The plugin lists of GET /info's `Plugins` (per type), from which a node's Engine.Plugins is made. */
export interface InfoPlugins {
  Volume?: string[] | null;
  Network?: string[] | null;
  Authorization?: string[] | null;
  Log?: string[] | null;
}

/**
 * What every engined registers (its GET /info `Plugins`), used for nodes whose own list is not
 * known: node records do not carry one, and all members run the same engine.
 */
export const DEFAULT_INFO_PLUGINS: InfoPlugins = {
  Volume: ['local'],
  Network: ['bridge', 'host', 'null'],
  Authorization: null,
  Log: ['fluentd', 'gelf', 'journald', 'json-file', 'local', 'syslog'],
};

export interface PluginDescription {
  Type: string;
  Name: string;
}

/**
 * A node's Description.Engine.Plugins from its /info plugin lists, as the reference's swarm
 * executor builds it (daemon/cluster/executor/container/executor.go Describe): Volume, Network,
 * Authorization and Log entries, de-duplicated, sorted by Type then Name. (The reference also adds
 * the builtin "overlay" network driver; pass it in Network if the engine has one.)
 */
export function enginePlugins(p: InfoPlugins = DEFAULT_INFO_PLUGINS): PluginDescription[] {
  const seen = new Set<string>();
  const out: PluginDescription[] = [];
  const add = (Type: string, names: string[] | null | undefined) => {
    for (const Name of names ?? []) {
      const k = `${Type}\0${Name}`;
      if (seen.has(k)) continue;
      seen.add(k);
      out.push({ Type, Name });
    }
  };
  add('Volume', p.Volume);
  add('Network', p.Network);
  add('Authorization', p.Authorization);
  add('Log', p.Log);
  return out.sort((a, b) => byteOrder(a.Type, b.Type) || byteOrder(a.Name, b.Name));
}

const TLS_INFO = () => ({ TrustRoot: '', CertIssuerSubject: '', CertIssuerPublicKey: '' });

/** A manager's address as ManagerStatus.Addr and RemoteManagers show it: its advertise host and port. */
const managerAddr = (r: NodeRecord) => joinHostPort(r.addr, r.port ?? MANAGER_PORT);

/** Go's `Version{Index uint64 \`json:",omitempty"\`}`. */
const version = (index: number) => (index ? { Index: index } : {});

export interface NodeViewOptions {
  /** The id of the node that holds the cluster leadership (LEADER_ELECTION), if any. */
  leaderId: string | undefined;
  /** The node is known but not live (its record's lease is gone); default: r.state === 'down'. */
  down?: boolean;
  /** The node's /info plugin lists; default DEFAULT_INFO_PLUGINS. */
  plugins?: InfoPlugins;
  /** The node's swarm spec and its version (else an active manager's, at the record's version). */
  spec?: { spec: NodeSpec; version: number };
  /** The swarm's root CA (Description.TLSInfo); empty without one. */
  tlsInfo?: { TrustRoot: string; CertIssuerSubject: string; CertIssuerPublicKey: string };
}

/** The Engine API `Node` (GET /nodes/{id}, an entry of GET /nodes) of a node record. */
export function nodeView(r: NodeRecord, o: NodeViewOptions): Record<string, unknown> {
  const down = o.down ?? r.state === 'down';

  const resources: Record<string, unknown> = {};
  if (r.nanoCpus) resources.NanoCPUs = r.nanoCpus;
  if (r.memoryBytes) resources.MemoryBytes = r.memoryBytes;
  if (r.genericResources?.length) resources.GenericResources = r.genericResources;

  const platform: Record<string, unknown> = {};
  if (r.arch) platform.Architecture = r.arch;
  if (r.os) platform.OS = r.os;

  const engine: Record<string, unknown> = {};
  if (r.engineVersion) engine.EngineVersion = r.engineVersion;
  if (r.labels && Object.keys(r.labels).length) engine.Labels = { ...r.labels };
  const plugins = enginePlugins(o.plugins);
  if (plugins.length) engine.Plugins = plugins;

  const description: Record<string, unknown> = {};
  if (r.hostname) description.Hostname = r.hostname;
  description.Platform = platform;
  description.Resources = resources;
  description.Engine = engine;
  description.TLSInfo = o.tlsInfo ?? TLS_INFO();

  // The reference's words for a node whose heartbeats stopped (NodeStatus: State, Message, Addr).
  const status: Record<string, unknown> = down ? { State: 'down', Message: 'heartbeat failure' } : { State: 'ready' };
  if (r.addr) status.Addr = r.addr;

  const spec = o.spec?.spec ?? { Labels: {}, Role: r.role ?? 'manager', Availability: 'active' };
  const managerStatus: Record<string, unknown> = {};
  if (!down && o.leaderId !== undefined && r.id === o.leaderId) managerStatus.Leader = true;
  managerStatus.Reachability = down ? 'unreachable' : 'reachable';
  if (r.addr) managerStatus.Addr = managerAddr(r);

  return {
    ID: r.id,
    Version: version(o.spec?.version ?? r.version),
    CreatedAt: r.createdAt,
    UpdatedAt: r.updatedAt,
    Spec: renderNodeSpec(spec),
    Description: description,
    Status: status,
    ...(spec.Role === 'manager' ? { ManagerStatus: managerStatus } : {}),
  };
}

/** The reference's swarm defaults (`docker swarm init` without options; swarmkit's defaults). */
export const CLUSTER_DEFAULTS = {
  taskHistoryRetentionLimit: 5,
  snapshotInterval: 10000,
  keepOldSnapshots: 0,
  logEntriesForSlowFollowers: 500,
  electionTick: 10,
  heartbeatTick: 1,
  /** 5 s, in nanoseconds (Go time.Duration). */
  dispatcherHeartbeatPeriod: 5_000_000_000,
  /** 90 days (2160h), in nanoseconds. */
  nodeCertExpiry: 7_776_000_000_000_000,
  defaultAddrPool: ['10.0.0.0/8'],
  subnetSize: 24,
  dataPathPort: 4789,
} as const;

export type LocalNodeState = 'active' | 'pending' | 'inactive' | 'error' | 'locked';

export interface SwarmInfoOptions {
  leaderId?: string;
  /** Swarm.Cluster.ID. */
  clusterId: string;
  /** Swarm.Error (empty when absent). */
  error?: string;
  state: LocalNodeState;
  /** Swarm.Cluster.CreatedAt/UpdatedAt; default the earliest node createdAt. */
  clusterCreatedAt?: string;
  /** Swarm.Cluster.Version.Index; default 1. */
  clusterVersion?: number;
  /** Swarm.Cluster whole (the swarm's cluster object, lib/swarm/cluster-object.ts's clusterInfo); default the swarmkit defaults. */
  cluster?: Record<string, unknown>;
  /** This node is a manager (default true): a worker's section has no cluster, counts or control. */
  manager?: boolean;
}

/** The `Swarm` section of GET /info of a node that is not in a cluster (as api/system/info-defaults.ts). */
export function inactiveSwarmInfo(): Record<string, unknown> {
  return { NodeID: '', NodeAddr: '', LocalNodeState: 'inactive', ControlAvailable: false, Error: '', RemoteManagers: null };
}

/**
 * The `Swarm` section of GET /info (moby daemon/cluster/swarm.go Info, api/types/swarm Info): for
 * an active node (always a manager here) the full ClusterInfo and the node counts, which the
 * docker CLI prints in `docker info` and uses to mark self in `docker node ls`.
 */
export function swarmInfo(self: NodeRecord | undefined, nodes: NodeRecord[], o: SwarmInfoOptions): Record<string, unknown> {
  if (o.state === 'inactive') return inactiveSwarmInfo();
  const active = o.state === 'active';
  const manager = o.manager !== false;
  const managers = nodes.filter((n) => n.role !== 'worker');
  const sorted = [...managers].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const remote = sorted.filter((n) => n.addr).map((n) => ({ NodeID: n.id, Addr: managerAddr(n) }));

  const info: Record<string, unknown> = {
    NodeID: self?.id ?? '',
    NodeAddr: self?.addr ?? '',
    LocalNodeState: o.state,
    ControlAvailable: active && manager,
    Error: o.error ?? '',
    RemoteManagers: remote.length && o.state !== 'error' ? remote : null,
  };
  if (!active || !manager) return info;

  // Nodes and Managers (omitempty when 0).
  if (nodes.length) info.Nodes = nodes.length;
  if (managers.length) info.Managers = managers.length;
  const createdAt =
    o.clusterCreatedAt ??
    nodes.map((n) => n.createdAt).filter(Boolean).sort((a, b) => Date.parse(a) - Date.parse(b))[0] ??
    self?.createdAt ??
    '0001-01-01T00:00:00Z';
  const d = CLUSTER_DEFAULTS;
  info.Cluster = o.cluster ?? {
    ID: o.clusterId,
    Version: version(o.clusterVersion ?? 1),
    CreatedAt: createdAt,
    UpdatedAt: createdAt,
    Spec: {
      Name: 'default',
      Labels: {},
      Orchestration: { TaskHistoryRetentionLimit: d.taskHistoryRetentionLimit },
      Raft: {
        SnapshotInterval: d.snapshotInterval,
        KeepOldSnapshots: d.keepOldSnapshots,
        LogEntriesForSlowFollowers: d.logEntriesForSlowFollowers,
        ElectionTick: d.electionTick,
        HeartbeatTick: d.heartbeatTick,
      },
      Dispatcher: { HeartbeatPeriod: d.dispatcherHeartbeatPeriod },
      CAConfig: { NodeCertExpiry: d.nodeCertExpiry },
      TaskDefaults: {},
      EncryptionConfig: { AutoLockManagers: false },
    },
    TLSInfo: TLS_INFO(),
    RootRotationInProgress: false,
    DefaultAddrPool: [...d.defaultAddrPool],
    SubnetSize: d.subnetSize,
    DataPathPort: d.dataPathPort,
  };
  return info;
}

/**
 * The `Swarm` header of /_ping (moby daemon/cluster/swarm.go Status, sent by the ping handler
 * since 23.0 / API 1.42): the local node state, with `/manager` or `/worker` appended when active.
 * Clients (docker CLI ≥ 23) read `<state>[/<role>]` and treat role "manager" as ControlAvailable.
 */
export function pingSwarmHeader(state: LocalNodeState, isManager: boolean): string {
  return state === 'active' ? `active/${isManager ? 'manager' : 'worker'}` : state;
}

// The swarm's cluster object as the reference shows it (`GET /swarm`, `/info`'s Swarm.Cluster):
// its spec with swarmkit's defaults at init, replaced whole by an update (what a client leaves out
// becomes zero, as dockerd 20.10 does), rendered with Go's omitempty rules; the version an update must
// name; TLSInfo from the root CA; join tokens. docs/reference-swarm.md has the answers matched.
import { X509Certificate } from 'node:crypto';
import { invalidArgument } from '../errors.ts';

export interface SwarmSpec {
  Name: string;
  Labels: Record<string, string>;
  Orchestration: { TaskHistoryRetentionLimit: number };
  Raft: { SnapshotInterval: number; KeepOldSnapshots: number; LogEntriesForSlowFollowers: number; ElectionTick: number; HeartbeatTick: number };
  Dispatcher: { HeartbeatPeriod: number };
  CAConfig: { NodeCertExpiry: number; ExternalCAs?: unknown[]; SigningCACert?: string; SigningCAKey?: string; ForceRotate?: number };
  TaskDefaults: { LogDriver?: { Name: string; Options?: Record<string, string> } };
  EncryptionConfig: { AutoLockManagers: boolean };
}

/** swarmkit's defaults, as `swarm init` writes them. */
export function defaultSwarmSpec(): SwarmSpec {
  return {
    Name: 'default',
    Labels: {},
    Orchestration: { TaskHistoryRetentionLimit: 5 },
    Raft: { SnapshotInterval: 10000, KeepOldSnapshots: 0, LogEntriesForSlowFollowers: 500, ElectionTick: 10, HeartbeatTick: 1 },
    Dispatcher: { HeartbeatPeriod: 5_000_000_000 },
    CAConfig: { NodeCertExpiry: 7_776_000_000_000_000 },
    TaskDefaults: {},
    EncryptionConfig: { AutoLockManagers: false },
  };
}

/** What a client sends as a spec (any part may be missing). */
export interface SwarmSpecInput {
  Name?: string;
  Labels?: Record<string, string> | null;
  Orchestration?: { TaskHistoryRetentionLimit?: number | null } | null;
  Raft?: Partial<SwarmSpec['Raft']> | null;
  Dispatcher?: { HeartbeatPeriod?: number } | null;
  CAConfig?: Partial<SwarmSpec['CAConfig']> | null;
  TaskDefaults?: SwarmSpec['TaskDefaults'] | null;
  EncryptionConfig?: { AutoLockManagers?: boolean } | null;
}

function checkName(name: string | undefined): void {
  // The reference: an empty name is the default's.
  if (name && name !== 'default') throw invalidArgument('swarm spec must be named "default"');
}

/** An update's spec: it replaces the stored one whole; what is left out is zero. */
export function replacedSpec(input: SwarmSpecInput): SwarmSpec {
  checkName(input.Name);
  const raft = input.Raft ?? {};
  return {
    Name: 'default',
    Labels: input.Labels ?? {},
    Orchestration: { TaskHistoryRetentionLimit: input.Orchestration?.TaskHistoryRetentionLimit ?? 0 },
    Raft: { SnapshotInterval: raft.SnapshotInterval ?? 0, KeepOldSnapshots: raft.KeepOldSnapshots ?? 0, LogEntriesForSlowFollowers: raft.LogEntriesForSlowFollowers ?? 0, ElectionTick: raft.ElectionTick ?? 0, HeartbeatTick: raft.HeartbeatTick ?? 0 },
    Dispatcher: { HeartbeatPeriod: input.Dispatcher?.HeartbeatPeriod ?? 0 },
    CAConfig: { ...(input.CAConfig ?? {}), NodeCertExpiry: input.CAConfig?.NodeCertExpiry ?? 0 },
    TaskDefaults: input.TaskDefaults ?? {},
    EncryptionConfig: { AutoLockManagers: !!input.EncryptionConfig?.AutoLockManagers },
  };
}

/** An init's spec: swarmkit's defaults, with what the client set (non-zero) over them. */
export function initSpec(input: SwarmSpecInput | undefined): SwarmSpec {
  const d = defaultSwarmSpec();
  if (!input) return d;
  checkName(input.Name);
  const set = <T>(v: T | undefined | null, dflt: T): T => (v === undefined || v === null || v === 0 ? dflt : v);
  const r = input.Raft ?? {};
  return {
    ...d,
    Labels: input.Labels ?? {},
    Orchestration: { TaskHistoryRetentionLimit: set(input.Orchestration?.TaskHistoryRetentionLimit, d.Orchestration.TaskHistoryRetentionLimit) },
    Raft: {
      SnapshotInterval: set(r.SnapshotInterval, d.Raft.SnapshotInterval),
      KeepOldSnapshots: set(r.KeepOldSnapshots, d.Raft.KeepOldSnapshots),
      LogEntriesForSlowFollowers: set(r.LogEntriesForSlowFollowers, d.Raft.LogEntriesForSlowFollowers),
      ElectionTick: set(r.ElectionTick, d.Raft.ElectionTick),
      HeartbeatTick: set(r.HeartbeatTick, d.Raft.HeartbeatTick),
    },
    Dispatcher: { HeartbeatPeriod: set(input.Dispatcher?.HeartbeatPeriod, d.Dispatcher.HeartbeatPeriod) },
    CAConfig: { ...(input.CAConfig ?? {}), NodeCertExpiry: set(input.CAConfig?.NodeCertExpiry, d.CAConfig.NodeCertExpiry) },
    TaskDefaults: input.TaskDefaults ?? {},
    EncryptionConfig: { AutoLockManagers: !!input.EncryptionConfig?.AutoLockManagers },
  };
}

/** The spec as the reference renders it (Go's omitempty on the fields that carry it). */
export function renderSpec(s: SwarmSpec): Record<string, unknown> {
  const omit = (o: Record<string, unknown>) => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== 0 && v !== undefined && v !== ''));
  return {
    Name: s.Name,
    Labels: s.Labels,
    Orchestration: { TaskHistoryRetentionLimit: s.Orchestration.TaskHistoryRetentionLimit },
    Raft: {
      ...omit({ SnapshotInterval: s.Raft.SnapshotInterval }),
      KeepOldSnapshots: s.Raft.KeepOldSnapshots,
      ...omit({ LogEntriesForSlowFollowers: s.Raft.LogEntriesForSlowFollowers }),
      ElectionTick: s.Raft.ElectionTick,
      HeartbeatTick: s.Raft.HeartbeatTick,
    },
    Dispatcher: omit({ HeartbeatPeriod: s.Dispatcher.HeartbeatPeriod }),
    CAConfig: omit({ ...s.CAConfig }),
    TaskDefaults: s.TaskDefaults,
    EncryptionConfig: { AutoLockManagers: s.EncryptionConfig.AutoLockManagers },
  };
}

/** `?version=` of an update (of the swarm, or a node): the reference's 400 in strconv's words for anything but a uint64. */
export function parseSwarmVersion(q: string | undefined, what: 'swarm' | 'node' | 'service' = 'swarm'): bigint {
  const v = q ?? '';
  if (!/^\d+$/.test(v) || BigInt(v) > 0xffff_ffff_ffff_ffffn) {
    const why = /^\d+$/.test(v) ? 'value out of range' : 'invalid syntax';
    throw invalidArgument(`invalid ${what} version '${v}': strconv.ParseUint: parsing ${JSON.stringify(v)}: ${why}`);
  }
  return BigInt(v);
}

/** The subject of the swarm's root (CN=swarm-ca, PrintableString) in DER, base64: fixed, as the root's name is. */
const ROOT_SUBJECT_DER_B64 = 'MBMxETAPBgNVBAMTCHN3YXJtLWNh';

/** TLSInfo of the root CA: the PEM, its subject and its public key (SubjectPublicKeyInfo) in DER, base64. */
export function tlsInfo(rootCaPem: string): { TrustRoot: string; CertIssuerSubject: string; CertIssuerPublicKey: string } {
  const c = new X509Certificate(rootCaPem);
  return {
    TrustRoot: rootCaPem,
    CertIssuerSubject: ROOT_SUBJECT_DER_B64,
    CertIssuerPublicKey: c.publicKey.export({ type: 'spki', format: 'der' }).toString('base64'),
  };
}

/** The cluster as kept in the cluster store. */
export interface ClusterRecord {
  id: string;
  version: number;
  createdAt: string;
  updatedAt: string;
  spec: SwarmSpec;
  rootCaPem: string;
  tokens: { worker: string; manager: string };
  defaultAddrPool: string[];
  subnetSize: number;
  dataPathPort: number;
}

/** `/info`'s Swarm.Cluster: the swarm object without its join tokens. */
export function clusterInfo(rec: ClusterRecord): Record<string, unknown> {
  return {
    ID: rec.id,
    Version: { Index: rec.version },
    CreatedAt: rec.createdAt,
    UpdatedAt: rec.updatedAt,
    Spec: renderSpec(rec.spec),
    TLSInfo: tlsInfo(rec.rootCaPem),
    RootRotationInProgress: false,
    DefaultAddrPool: rec.defaultAddrPool,
    SubnetSize: rec.subnetSize,
    DataPathPort: rec.dataPathPort,
  };
}

/** `GET /swarm`: the cluster with its join tokens (a manager's view). */
export function swarmObject(rec: ClusterRecord): Record<string, unknown> {
  return { ...clusterInfo(rec), JoinTokens: { Worker: rec.tokens.worker, Manager: rec.tokens.manager } };
}

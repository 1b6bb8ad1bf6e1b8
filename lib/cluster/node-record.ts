// A node of the cluster as it publishes itself in etcd (`/engine/nodes/<id>`, JSON, under the
// node's lease): what `GET /nodes` shows in the reference's Node shape and what placement reads.
import type { GenericResource } from '../generic-resources.ts';

export const NODES_PREFIX = '/engine/nodes/';
/** Every node that ever joined (no lease): a node whose live record is gone shows as down. */
export const MEMBERS_PREFIX = '/engine/members/';
/** The election all nodes campaign in; its leader places cluster stacks. */
export const LEADER_ELECTION = 'engine-leader';
/** Where the candidates' keys are (etcd3's election layout). */
export const ELECTION_PREFIX = `election/${LEADER_ELECTION}/`;

export interface NodeRecord {
  /** 25 lower-case letters and digits, as swarm's node ids; kept in the data root. */
  id: string;
  hostname: string;
  /** The address other nodes reach it at (--cluster-default-advertise-addr, else the first non-loopback IPv4). */
  addr: string;
  engineVersion: string;
  /** The daemon's --label values, as a map. */
  labels: Record<string, string>;
  os: string;
  /** As the reference reports it (x86_64, aarch64). */
  arch: string;
  nanoCpus: number;
  memoryBytes: number;
  genericResources: GenericResource[];
  /** 'ready' while the daemon runs; 'down' is only what readers infer from a missing record. */
  state: 'ready' | 'down';
  /** RFC 3339: when the node first joined (kept across re-registrations), and when the record was written. */
  createdAt: string;
  updatedAt: string;
  /** Bumped on every write (Version.Index in the Node shape). */
  version: number;
  /** Its swarm role (absent: a manager, as every node of a --cluster-store cluster was). */
  role?: 'manager' | 'worker';
  /** The port its swarm listener is advertised at (absent: 2377). */
  port?: number;
}

export const nodeKey = (id: string) => `${NODES_PREFIX}${id}`;

/** A record read back from etcd; undefined for a missing key or text that is not JSON. */
export function parseRecord<T>(text: string | null | undefined): T | undefined {
  if (!text) return undefined;
  try {
    return JSON.parse(text) as T;
  } catch {
    return undefined;
  }
}
export const memberKey = (id: string) => `${MEMBERS_PREFIX}${id}`;

// ---- cluster stacks ------------------------------------------------------------------------------

/** `/engine/stacks/<name>`: a cluster stack as applied (no lease). */
export const STACKS_PREFIX = '/engine/stacks/';
/** `/engine/assignments/<node>/<stack>`: what the leader placed on a node (no lease; the leader rewrites it). */
export const ASSIGNMENTS_PREFIX = '/engine/assignments/';
/**
 * `/engine/status/<node>/<stack>`: a node's status of its part of a stack, under the node's lease
 * (by node first: a worker's etcd role may write its own prefix only, drivers/swarm/etcd-access.ts).
 */
export const STATUS_PREFIX = '/engine/status/';
/** `/engine/pending/<stack>`: the replicas the leader could place nowhere, with the reason. */
export const PENDING_PREFIX = '/engine/pending/';

export const stackKey = (name: string) => `${STACKS_PREFIX}${name}`;
export const assignmentKey = (node: string, stack: string) => `${ASSIGNMENTS_PREFIX}${node}/${stack}`;
export const statusKey = (stack: string, node: string) => `${STATUS_PREFIX}${node}/${stack}`;
export const pendingKey = (stack: string) => `${PENDING_PREFIX}${stack}`;

export interface ClusterStackRecord {
  name: string;
  /** The Compose application (validated by the API as a local stack's). */
  document: unknown;
  generation: number;
  appliedAt: string;
}

/** One replica slot placed on a node: its environment and the generic resources it claims. */
export interface PlacedSlot {
  n: number;
  env: Record<string, string>;
  claims: Array<{ kind: string; count: number } | { kind: string; unit: string }>;
}

export interface AssignmentRecord {
  stack: string;
  node: string;
  /** The cluster stack's generation this placement is for. */
  generation: number;
  document: unknown;
  /** Service → the slots this node runs (a service with none placed here is absent). */
  placed: Record<string, PlacedSlot[]>;
  /** The leader that wrote it and its term (the election key's create revision). */
  writer?: string;
  term?: string;
}

export interface StackStatusRecord {
  stack: string;
  node: string;
  /** The cluster stack generation of the assignment this status is about. */
  generation: number;
  /** The local stack's status as its reconciler wrote it. */
  status: unknown;
  updatedAt: string;
}

export interface PendingRecord {
  stack: string;
  generation: number;
  pending: Array<{ service: string; slot: number; reason: string }>;
  /** The leader that wrote it and its term. */
  writer?: string;
  term?: string;
}

// A node of the cluster as it publishes itself in etcd (`/engine/nodes/<id>`, JSON, under the
// node's lease): what `GET /nodes` shows in the reference's Node shape and what the scheduler reads.
import type { GenericResource } from '../generic-resources.ts';

export const NODES_PREFIX = '/engine/nodes/';
/** Every node that ever joined (no lease): a node whose live record is gone shows as down. */
export const MEMBERS_PREFIX = '/engine/members/';
/** The election the managers campaign in; its leader orchestrates the swarm's tasks. */
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

/**
 * `/engine/status/<node>/…`: what a node reports (its tasks' status: lib/swarm/task.ts), under the
 * node's lease (by node first: a worker's etcd role may write its own prefix only,
 * drivers/swarm/etcd-access.ts).
 */
export const STATUS_PREFIX = '/engine/status/';

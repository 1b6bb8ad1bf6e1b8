// A node of the cluster as it publishes itself in etcd (`/engine/nodes/<id>`, JSON, under the
// node's lease): what `GET /nodes` shows in the reference's Node shape and what placement reads.
import type { GenericResource } from '../generic-resources.ts';

export const NODES_PREFIX = '/engine/nodes/';
/** Every node that ever joined (no lease): a node whose live record is gone shows as down. */
export const MEMBERS_PREFIX = '/engine/members/';
/** The election all nodes campaign in; its leader places cluster stacks. */
export const LEADER_ELECTION = 'engine-leader';

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
}

export const nodeKey = (id: string) => `${NODES_PREFIX}${id}`;
export const memberKey = (id: string) => `${MEMBERS_PREFIX}${id}`;

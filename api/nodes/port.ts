// What the API reads of cluster membership (cmd fills it with reconcilers/node/membership.ts).
import type { NodeRecord } from '../../lib/cluster/node-record.ts';

export interface ClusterPort {
  readonly nodeId: string;
  /** pending: not joined yet; active: joined; error: etcd does not answer (the reason in `error`). */
  readonly state: 'pending' | 'active' | 'error';
  readonly error: string;
  readonly leaderId: string | undefined;
  nodes(): NodeRecord[];
  self(): NodeRecord | undefined;
}

// The campaign for the cluster's leadership, level-triggered, as etcd's own election recipe:
// every candidate puts a key under the election prefix, bound to its node lease; the oldest key
// (lowest create revision) leads. Who leads is read again on every change under the prefix
// (membership's watch of it), so nothing waits on a particular key's deletion — a wait etcd can
// cancel after a compaction and the etcd3 client's Campaign never recovers from — and the
// leadership ends with the node's lease, which is also what the self-fence follows.
import type { Etcd3, Lease } from 'etcd3';
import type { LeaderTerm } from './fence.ts';
import { ELECTION_PREFIX } from '../../lib/cluster/node-record.ts';

export interface Standing {
  /** The leading node's id (undefined: nobody). */
  leader: string | undefined;
  /** This node's term when it is the one leading. */
  term: LeaderTerm | undefined;
}

export class LeaderCampaign {
  private readonly nodeId: string;
  /** This node's candidate key while it stands. */
  private key: string | null = null;

  constructor(nodeId: string) {
    this.nodeId = nodeId;
  }

  get standing(): boolean {
    return this.key !== null;
  }

  /** Stands under `lease` (a key named by the lease: a new lease is a new candidacy). */
  async stand(client: Etcd3, lease: Lease, leaseId: string): Promise<void> {
    const key = `${ELECTION_PREFIX}${leaseId}`;
    if (this.key === key) return;
    await client.if(key, 'Create', '==', 0).then(lease.put(key).value(this.nodeId)).commit();
    this.key = key;
  }

  /** Who leads, and this node's term if it does: the oldest key under the prefix. */
  async read(client: Etcd3): Promise<Standing> {
    const res = await client.getAll().prefix(ELECTION_PREFIX).sort('Create', 'Ascend').limit(1).exec();
    const kv = res.kvs[0];
    if (!kv) return { leader: undefined, term: undefined };
    const key = kv.key.toString();
    const leader = kv.value.toString();
    return { leader, term: key === this.key ? { key, revision: String(kv.create_revision), nodeId: this.nodeId } : undefined };
  }

  /** Leaves the line (its key deleted; the next `stand` goes to the end of it). */
  async resign(client: Etcd3): Promise<void> {
    const key = this.key;
    this.key = null;
    if (key) await client.delete().key(key);
  }

  /** The lease it stood under is gone: so is the key. */
  forget(): void {
    this.key = null;
  }
}

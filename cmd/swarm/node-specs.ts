// The swarm's node specs in etcd (/engine/swarm/nodes/<id>): written for a node when it enters the
// swarm, replaced by `docker node update` at the version it read (the key's mod revision, an etcd
// transaction refusing a stale one; the last manager is not demoted), removed with the node (and
// its lasting member record). A role changed here is the node's to take up (./role.ts).
import type { Etcd3 } from 'etcd3';
import { failedPrecondition, internal, notFound } from '../../lib/errors.ts';
import { memberKey } from '../../lib/cluster/node-record.ts';
import { NODE_SPECS_PREFIX, nodeSpecKey, type NodeSpec } from '../../lib/swarm/node-spec.ts';

const key = nodeSpecKey;
const OUT_OF_SEQUENCE = 'rpc error: code = Unknown desc = update out of sequence';

export interface VersionedNodeSpec {
  spec: NodeSpec;
  version: number;
}

export class NodeSpecs {
  private readonly etcd: () => Etcd3;

  constructor(etcd: () => Etcd3) {
    this.etcd = etcd;
  }

  async put(id: string, spec: NodeSpec): Promise<void> {
    await this.etcd().put(key(id)).value(JSON.stringify(spec));
  }

  async get(id: string): Promise<NodeSpec | undefined> {
    const kv = (await this.etcd().get(key(id)).exec()).kvs[0];
    return kv ? (JSON.parse(kv.value.toString()) as NodeSpec) : undefined;
  }

  async list(): Promise<Map<string, VersionedNodeSpec>> {
    const r = await this.etcd().getAll().prefix(NODE_SPECS_PREFIX).exec();
    const out = new Map<string, VersionedNodeSpec>();
    for (const kv of r.kvs) out.set(kv.key.toString().slice(NODE_SPECS_PREFIX.length), { spec: JSON.parse(kv.value.toString()) as NodeSpec, version: Number(kv.mod_revision) });
    return out;
  }

  /** Replaces a node's spec if it is still at `version`. */
  async update(id: string, version: bigint, spec: NodeSpec): Promise<void> {
    const etcd = this.etcd();
    const cur = (await etcd.get(key(id)).exec()).kvs[0];
    if (!cur) throw notFound(`node ${id} not found`);
    const current = JSON.parse(cur.value.toString()) as NodeSpec;
    if (BigInt(cur.mod_revision) !== version) throw internal(OUT_OF_SEQUENCE);
    if (current.Role === 'manager' && spec.Role === 'worker') {
      const managers = [...(await this.list()).values()].filter((v) => v.spec.Role === 'manager').length;
      if (managers <= 1) throw failedPrecondition('rpc error: code = FailedPrecondition desc = attempting to demote the last manager of the swarm');
    }
    const r = await etcd.if(key(id), 'Mod', '==', String(version)).then(etcd.put(key(id)).value(JSON.stringify(spec))).commit();
    if (!r.succeeded) throw internal(OUT_OF_SEQUENCE);
  }

  /**
   * Removes a node that is down (or any worker with `force`); a manager is refused, as swarmkit's
   * RemoveNode (`anyRole`: a node that gave up its join or left, its member already gone).
   */
  async remove(id: string, o: { force: boolean; down: boolean; anyRole?: boolean }): Promise<void> {
    const etcd = this.etcd();
    const cur = (await etcd.get(key(id)).exec()).kvs[0];
    if (!cur) throw notFound(`node ${id} not found`);
    const spec = JSON.parse(cur.value.toString()) as NodeSpec;
    if (spec.Role === 'manager' && !o.anyRole) throw failedPrecondition(`rpc error: code = FailedPrecondition desc = node ${id} is a cluster manager and is a member of the raft cluster. It must be demoted to worker before removal`);
    if (!o.force && !o.down) throw failedPrecondition(`rpc error: code = FailedPrecondition desc = node ${id} is not down and can't be removed`);
    await etcd.delete().key(key(id)).exec();
    await etcd.delete().key(memberKey(id)).exec();
  }
}

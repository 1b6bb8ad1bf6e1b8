// What a swarm keeps in its etcd and its managers read and write: the cluster object
// (/engine/swarm/cluster: spec, root CA, join tokens; its version the key's mod revision, so an
// update names the revision it read and etcd refuses a stale one), the CA's key pair
// (/engine/swarm/ca: managers sign node certificates), and the node specs (./node-specs.ts). Every
// call is bounded: an etcd that does not answer is the swarm's 503.
import type { Etcd3 } from 'etcd3';
import type { KeyPair } from '../../drivers/swarm/ca.ts';
import { conflict, EngineError, internal, unavailable } from '../../lib/errors.ts';
import { memberKey } from '../../lib/cluster/node-record.ts';
import type { ClusterRecord, SwarmSpec } from '../../lib/swarm/cluster-object.ts';
import { makeJoinToken, parseJoinToken, type ParsedJoinToken } from '../../lib/swarm/join-token.ts';
import type { ClusterStore } from '../../lib/cluster/store-url.ts';
import { etcdClient } from '../../reconcilers/node/etcd-client.ts';
import { NodeSpecs } from './node-specs.ts';
import { nodeSpecKey } from '../../lib/swarm/node-spec.ts';

import { CLUSTER_KEY, SWARM_PREFIX } from '../../lib/swarm/keys.ts';
import { NODE_TASKS_PREFIX } from '../../lib/swarm/task.ts';

export const CA_KEY = `${SWARM_PREFIX}ca`;
/** The managers' unlock key while autolock is on (absent: off). */
export const UNLOCK_KEY = `${SWARM_PREFIX}unlock`;
const OUT_OF_SEQUENCE = 'rpc error: code = Unknown desc = update out of sequence';
export const SWARM_IN_STORE = 'the cluster store holds a swarm already: use "docker swarm join" with one of its join tokens';
const STORE_TIMEOUT_MS = 10_000;

/** The cluster object as stored: ClusterRecord without its version (the key's mod revision). */
export type StoredCluster = Omit<ClusterRecord, 'version'>;

/** An etcd call that does not answer in time is the swarm's 503 (the store may be down). */
export async function bounded<T>(p: Promise<T>, ms = STORE_TIMEOUT_MS, message = "The swarm's etcd does not answer"): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([p, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(unavailable(message)), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

/** The swarm an etcd holds (its cluster object and CA), if any: what a join checks its token against. */
export async function storedSwarm(etcd: Etcd3): Promise<{ stored: StoredCluster; ca: KeyPair | null } | undefined> {
  const kv = (await etcd.get(CLUSTER_KEY).exec()).kvs[0];
  if (!kv) return undefined;
  const caKv = (await etcd.get(CA_KEY).exec()).kvs[0];
  return { stored: JSON.parse(kv.value.toString()) as StoredCluster, ca: caKv ? (JSON.parse(caKv.value.toString()) as KeyPair) : null };
}

/** The role a join token's secret gives in this swarm (undefined: neither the worker's nor the manager's). */
export function roleOfToken(stored: StoredCluster, token: ParsedJoinToken): 'manager' | 'worker' | undefined {
  if (token.secret === parseJoinToken(stored.tokens.manager)?.secret) return 'manager';
  if (token.secret === parseJoinToken(stored.tokens.worker)?.secret) return 'worker';
  return undefined;
}

/** A short-lived client of --cluster-store's etcd (before the node is in its swarm): an etcd that does not answer is the swarm's 503. */
export async function withStore<T>(store: ClusterStore, fn: (etcd: Etcd3) => Promise<T>): Promise<T> {
  const client = await etcdClient(store);
  try {
    return await bounded(fn(client));
  } catch (err) {
    if (err instanceof EngineError) throw err;
    throw unavailable(`The swarm's etcd does not answer: ${err instanceof Error ? err.message : String(err)}`, err);
  } finally {
    client.close();
  }
}

export class SwarmObjects {
  readonly specs: NodeSpecs;
  private readonly etcd: () => Etcd3;
  private record: ClusterRecord | undefined;

  constructor(etcd: () => Etcd3) {
    this.etcd = etcd;
    this.specs = new NodeSpecs(etcd);
  }

  /** The cluster object as last read or written. */
  cached(): ClusterRecord | undefined {
    return this.record;
  }

  clear(): void {
    this.record = undefined;
  }

  async read(): Promise<ClusterRecord> {
    let kv;
    try {
      kv = (await bounded(this.etcd().get(CLUSTER_KEY).exec())).kvs[0];
    } catch (err) {
      throw unavailable(`The swarm does not answer: ${err instanceof Error ? err.message : String(err)}`, err);
    }
    if (!kv) throw unavailable('The swarm has no cluster object');
    const stored = JSON.parse(kv.value.toString()) as StoredCluster;
    this.record = { ...stored, version: Number(kv.mod_revision) };
    return this.record;
  }

  /** Writes a new swarm's cluster object and CA, only where no swarm is yet. */
  async create(stored: StoredCluster, ca: KeyPair): Promise<void> {
    const etcd = this.etcd();
    const put = etcd.if(CLUSTER_KEY, 'Create', '==', 0).then(etcd.put(CLUSTER_KEY).value(JSON.stringify(stored)), etcd.put(CA_KEY).value(JSON.stringify(ca)));
    if (!(await bounded(put.commit())).succeeded) throw conflict(SWARM_IN_STORE);
  }

  /** Replaces the spec (and rotates tokens) if the cluster object is still at `version`. */
  async update(version: bigint, spec: SwarmSpec, rotate: { worker: boolean; manager: boolean }): Promise<void> {
    const cur = await this.read();
    if (BigInt(cur.version) !== version) throw internal(OUT_OF_SEQUENCE);
    const { version: _v, ...rest } = cur;
    const next: StoredCluster = {
      ...rest,
      spec,
      updatedAt: new Date().toISOString(),
      tokens: {
        worker: rotate.worker ? makeJoinToken(cur.rootCaPem) : cur.tokens.worker,
        manager: rotate.manager ? makeJoinToken(cur.rootCaPem) : cur.tokens.manager,
      },
    };
    const etcd = this.etcd();
    const r = await bounded(etcd.if(CLUSTER_KEY, 'Mod', '==', String(version)).then(etcd.put(CLUSTER_KEY).value(JSON.stringify(next))).commit());
    if (!r.succeeded) throw internal(OUT_OF_SEQUENCE);
    await this.read();
  }

  /** The swarm's unlock key (undefined: autolock is off). */
  async unlockKey(): Promise<string | undefined> {
    const kv = (await bounded(this.etcd().get(UNLOCK_KEY).exec())).kvs[0];
    return kv ? kv.value.toString() : undefined;
  }

  /** Sets the unlock key (undefined: autolock off); the managers seal their keys under it (cmd/swarm/lock.ts). */
  async setUnlockKey(key: string | undefined): Promise<void> {
    if (key) await bounded(this.etcd().put(UNLOCK_KEY).value(key).exec());
    else await bounded(this.etcd().delete().key(UNLOCK_KEY).exec());
  }

  /** Removes a node's spec and lasting record (and, for the last manager, the swarm's keys). */
  async forget(nodeId: string, wholeSwarm: boolean): Promise<void> {
    const etcd = this.etcd();
    await bounded(etcd.delete().key(nodeSpecKey(nodeId)).exec());
    await bounded(etcd.delete().key(memberKey(nodeId)).exec());
    if (wholeSwarm) {
      await bounded(etcd.delete().prefix(SWARM_PREFIX).exec());
      await bounded(etcd.delete().prefix(NODE_TASKS_PREFIX).exec());
    }
  }

  /** How many managers the swarm has (1 when its etcd does not answer: a refusal then errs on the safe side). */
  async managerCount(): Promise<number> {
    try {
      return [...(await bounded(this.specs.list())).values()].filter((s) => s.spec.Role === 'manager').length;
    } catch {
      return 1;
    }
  }
}

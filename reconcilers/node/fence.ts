// Fenced leadership: the leader's writes are etcd transactions that hold only while its election
// key still exists with the create revision it had when this node was elected (its term). A leader
// stalled past its lease (GC, SIGSTOP, a slow disk) and deposed meanwhile finds its writes refused
// by etcd itself, whatever its own view says, and stops acting as leader. Each record the leader
// writes names its writer and term.
import type { Etcd3 } from 'etcd3';

/** A leadership term: the election key this node holds and the revision it was created at. */
export interface LeaderTerm {
  key: string;
  revision: string;
  /** The node that holds it. */
  nodeId: string;
}

export type FencedOp = { put: string; value: string } | { delete: string };

/** etcd's default --max-txn-ops is 128: writes go in transactions of at most this many. */
const OPS_PER_TXN = 100;

/**
 * Writes `ops` under the term: every transaction compares the election key's create revision.
 * False as soon as one is refused (the term is over; what was not written stays unwritten).
 */
export async function fencedWrite(client: Etcd3, term: LeaderTerm, ops: readonly FencedOp[]): Promise<boolean> {
  for (let i = 0; i < ops.length; i += OPS_PER_TXN) {
    const chunk = ops.slice(i, i + OPS_PER_TXN);
    const res = await client
      .if(term.key, 'Create', '==', term.revision)
      .then(...chunk.map((op) => ('put' in op ? client.put(op.put).value(op.value) : client.delete().key(op.delete))))
      .commit();
    if (!res.succeeded) return false;
  }
  return true;
}

/** The term of a campaign just elected: its key and that key's create revision (undefined if the key is already gone). */
export async function termOf(client: Etcd3, key: string, nodeId: string): Promise<LeaderTerm | undefined> {
  const res = await client.get(key).exec();
  const kv = res.kvs[0];
  return kv ? { key, revision: String(kv.create_revision), nodeId } : undefined;
}

/**
 * Puts `value` at `key` under the term if the key still holds `expected` (the record this leader
 * read): 'stale' when it changed meanwhile (a client's write wins; the next pass reads it again),
 * 'deposed' when the term is over.
 */
export async function fencedReplace(client: Etcd3, term: LeaderTerm, key: string, expected: string, value: string): Promise<'ok' | 'stale' | 'deposed'> {
  const res = await client.if(term.key, 'Create', '==', term.revision).and(key, 'Value', '==', expected).then(client.put(key).value(value)).commit();
  if (res.succeeded) return 'ok';
  const held = await client.get(term.key).exec();
  return held.kvs[0] && String(held.kvs[0].create_revision) === term.revision ? 'stale' : 'deposed';
}

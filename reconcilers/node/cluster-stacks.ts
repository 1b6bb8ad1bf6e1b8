// Cluster stacks in etcd, as the API reads and writes them (`PUT|GET|DELETE /stacks/{name}?scope=cluster`):
// the stack record, and its view with where each replica runs, what is pending and the status each
// node published, summed per service. Where each replica runs is read from the placer's cache of
// every assignment when it has one (a view of n stacks scanned all assignments n times); the stack
// records, pending and status are read from etcd, so a stack just written is seen at once.
import type { Etcd3 } from 'etcd3';
import { ASSIGNMENTS_PREFIX, pendingKey, stackKey, STACKS_PREFIX, STATUS_PREFIX, type AssignmentRecord, type ClusterStackRecord, parseRecord, type NodeRecord, type PendingRecord, type StackStatusRecord } from '../../lib/cluster/node-record.ts';
import { unavailable } from '../../lib/errors.ts';
import { rfc3339Nano } from '../../lib/ids.ts';
import type { ComposeApp } from '../../lib/compose/schema.ts';
import type { StackStatus } from '../../store/kinds/stack.ts';

type Json = Record<string, unknown>;

export class ClusterStacks {
  private readonly etcd: () => Etcd3 | null;
  private readonly nodes: () => NodeRecord[];
  private readonly assignments: () => ReadonlyMap<string, string> | undefined;

  /** `assignments`: every assignment record by key, from a watch-fed cache (undefined while it has none). */
  constructor(etcd: () => Etcd3 | null, nodes: () => NodeRecord[], assignments: () => ReadonlyMap<string, string> | undefined = () => undefined) {
    this.etcd = etcd;
    this.nodes = nodes;
    this.assignments = assignments;
  }

  private client(): Etcd3 {
    const c = this.etcd();
    if (!c) throw unavailable('the cluster store is not reachable');
    return c;
  }

  async put(name: string, document: ComposeApp): Promise<{ created: boolean; view: Json }> {
    const client = this.client();
    const cur = parseRecord<ClusterStackRecord>(await client.get(stackKey(name)).string());
    const rec: ClusterStackRecord = { name, document, generation: (cur?.generation ?? 0) + 1, appliedAt: rfc3339Nano() };
    await client.put(stackKey(name)).value(JSON.stringify(rec));
    return { created: !cur, view: (await this.get(name))! };
  }

  async remove(name: string): Promise<boolean> {
    const res = await this.client().delete().key(stackKey(name));
    return Number(res.deleted) > 0;
  }

  async list(): Promise<Json[]> {
    const out: Json[] = [];
    for (const key of await this.client().getAll().prefix(STACKS_PREFIX).keys()) {
      const v = await this.get(key.slice(STACKS_PREFIX.length));
      if (v) out.push(v);
    }
    return out;
  }

  async get(name: string): Promise<Json | undefined> {
    const client = this.client();
    const rec = parseRecord<ClusterStackRecord>(await client.get(stackKey(name)).string());
    if (!rec) return undefined;
    const hostnames = new Map(this.nodes().map((n) => [n.id, n.hostname]));
    const placement: Record<string, Json[]> = {};
    const assigned = this.assignments()?.values() ?? Object.values(await client.getAll().prefix(ASSIGNMENTS_PREFIX).strings());
    for (const v of assigned) {
      const a = parseRecord<AssignmentRecord>(v);
      if (a?.stack !== name) continue;
      for (const [svc, slots] of Object.entries(a.placed)) {
        for (const s of slots) (placement[svc] ??= []).push({ Slot: s.n, Node: a.node, Hostname: hostnames.get(a.node) ?? '', Env: s.env });
      }
    }
    for (const list of Object.values(placement)) list.sort((x, y) => Number(x.Slot) - Number(y.Slot));
    const pending: Record<string, Json[]> = {};
    for (const p of parseRecord<PendingRecord>(await client.get(pendingKey(name)).string())?.pending ?? []) (pending[p.service] ??= []).push({ Slot: p.slot, Reason: p.reason });
    const nodes: Record<string, Json> = {};
    const services: Record<string, { desired: number; ready: number; nodes: Record<string, number> }> = {};
    const doc = rec.document as ComposeApp;
    for (const [svc, def] of Object.entries(doc.services)) services[svc] = { desired: def?.deploy?.replicas ?? 1, ready: 0, nodes: {} };
    let degraded = false;
    let behind = false;
    for (const v of Object.values(await client.getAll().prefix(STATUS_PREFIX).strings())) {
      const s = parseRecord<StackStatusRecord>(v);
      if (s?.stack !== name) continue;
      const st = s.status as StackStatus;
      nodes[s.node] = { Hostname: hostnames.get(s.node) ?? '', Generation: s.generation, ObservedGeneration: st.observedGeneration, Conditions: st.conditions, Services: st.services, UpdatedAt: s.updatedAt };
      if (s.generation !== rec.generation) behind = true;
      if (st.conditions.some((c) => c.type === 'Degraded' && c.status === 'True')) degraded = true;
      for (const [svc, ss] of Object.entries(st.services ?? {})) {
        if (!services[svc] || s.generation !== rec.generation) continue;
        services[svc].ready += ss.ready;
        services[svc].nodes[s.node] = ss.ready;
      }
    }
    const pendingCount = Object.values(pending).reduce((n, l) => n + l.length, 0);
    const short = Object.entries(services).filter(([, s]) => s.ready < s.desired);
    const state = degraded ? 'Degraded' : pendingCount || behind || short.length ? 'Progressing' : 'Ready';
    const message = degraded
      ? 'a node reports the stack Degraded'
      : pendingCount
        ? `${pendingCount} replica(s) pending: ${Object.entries(pending).map(([svc, l]) => `${svc}: ${String(l[0]!.Reason)}`).join('; ')}`
        : short.map(([svc, s]) => `${svc}: ${s.ready}/${s.desired} ready`).join('; ');
    return {
      Name: name,
      Scope: 'cluster',
      Generation: rec.generation,
      AppliedAt: rec.appliedAt,
      Document: rec.document,
      Placement: placement,
      Pending: pending,
      Status: {
        ObservedGeneration: behind ? rec.generation - 1 : rec.generation,
        Conditions: [{ type: state, status: 'True', reason: state === 'Ready' ? 'AllServicesReady' : degraded ? 'NodeDegraded' : pendingCount ? 'Pending' : 'ServicesProgressing', message: state === 'Ready' ? '' : message }],
        Services: services,
        Nodes: nodes,
      },
    };
  }
}

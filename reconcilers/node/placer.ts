// The leader's placement loop: while this node leads, it reads every cluster stack, the live
// nodes and the assignments in etcd, computes where each replica goes (lib/cluster/placement.ts:
// constraints, resource reservations, generic resources, spread, what is placed kept where it
// still fits) and writes the difference: `/engine/assignments/<node>/<stack>` per node that runs
// part of a stack, `/engine/pending/<stack>` for what fits nowhere. Level-triggered: run on every
// change of stacks, nodes, assignments or pending and every few seconds; a new leader carries on
// from what etcd holds. A pass reads the three prefixes from watch-fed caches (./prefix-cache.ts),
// not from etcd: scanning them every 2 s cost etcd more the larger the cluster. Every write of a
// pass is fenced by the leader's term (./fence.ts): a deposed leader's writes are refused by etcd,
// and it stops leading. Each record names its writer and term. It is the reconciler of the
// `cluster-placer` controller (./controllers.ts), of one key, run only while this node leads.
import type { Logger } from 'pino';
import type { Etcd3 } from 'etcd3';
import { ASSIGNMENTS_PREFIX, assignmentKey, PENDING_PREFIX, pendingKey, STACKS_PREFIX, type AssignmentRecord, type ClusterStackRecord, type NodeRecord, parseRecord, type PendingRecord, type PlacedSlot } from '../../lib/cluster/node-record.ts';
import { canonicalJson } from '../../lib/canonical-json.ts';
import { place, type Assignment } from '../../lib/cluster/placement.ts';
import { composeApp, type ComposeApp } from '../../lib/compose/schema.ts';
import { fencedWrite, type FencedOp, type LeaderTerm } from './fence.ts';
import { KeySource } from '../../controllers/source.ts';
import type { ReconcileResult, Reconciler } from '../../controllers/controller.ts';
import { PLACER_KEY } from './controllers.ts';
import { PrefixCache } from './prefix-cache.ts';

/** A pass at least this often while leading (a node's resources or a missed event). */
const PLACER_RESYNC_MS = 2000;


export interface PlacerOptions {
  etcd: () => Etcd3 | null;
  nodes: () => NodeRecord[];
  /** The term this node leads in (undefined while it does not lead). */
  term: () => LeaderTerm | undefined;
  /** Told when a fenced write was refused: the term is over. */
  deposed: (reason: string) => void;
  log: Logger;
}

export class ClusterPlacer implements Reconciler {
  private readonly opts: PlacerOptions;
  private readonly stacks = new PrefixCache(STACKS_PREFIX);
  private readonly assignments = new PrefixCache(ASSIGNMENTS_PREFIX);
  private readonly pending = new PrefixCache(PENDING_PREFIX);
  /** Wakes the controller's one key (the nodes changed). */
  readonly wakes = new KeySource();

  constructor(opts: PlacerOptions) {
    this.opts = opts;
  }

  /** Stacks, assignments and pending, watch-fed: the controller's etcd sources. */
  get caches(): PrefixCache[] {
    return [this.stacks, this.assignments, this.pending];
  }

  /** A pass, then again after the resync interval. */
  async reconcile(): Promise<ReconcileResult> {
    await this.pass();
    return { requeueAfter: PLACER_RESYNC_MS };
  }

  /**
   * Lists and follows stacks, assignments and pending once the client exists (again on a new
   * client); every change kicks a pass, so a changed stack is placed at once.
   */
  async watch(): Promise<void> {
    const client = this.opts.etcd();
    if (client) await Promise.all(this.caches.map((c) => c.start(client)));
  }

  /** The caches let go (the controller is stopped by its gate). */
  stop(): void {
    for (const c of this.caches) c.stop();
  }

  /** Every assignment record by key, as the cache holds it (undefined until it is ready). */
  assignmentRecords(): ReadonlyMap<string, string> | undefined {
    return this.assignments.ready ? this.assignments.entries() : undefined;
  }

  /** Run a placement pass now (or right after the one under way). */
  kick(): void {
    this.wakes.emit(PLACER_KEY);
  }

  private async pass(): Promise<void> {
    const client = this.opts.etcd();
    const term = this.opts.term();
    if (!client || !term) return;
    // The caches follow the client there is now (a no-op on the one they follow). One not listed
    // yet, or cut off from etcd, is waited for: it kicks a pass once ready.
    for (const c of this.caches) void c.start(client);
    if (!this.caches.every((c) => c.ready)) return;
    const stacks: Array<ClusterStackRecord & { document: ComposeApp }> = [];
    for (const v of this.stacks.values()) {
      const r = parseRecord<ClusterStackRecord>(v);
      const doc = r && composeApp.safeParse(r.document);
      if (r && doc?.success) stacks.push({ ...r, document: doc.data });
    }
    const current = new Map<string, string>();
    const previous: Assignment[] = [];
    for (const [key, v] of this.assignments.entries()) {
      current.set(key, v);
      const r = parseRecord<AssignmentRecord>(v);
      if (!r) continue;
      for (const [service, slots] of Object.entries(r.placed)) {
        for (const s of slots) previous.push({ stack: r.stack, service, slot: s.n, node: r.node, env: s.env, claims: s.claims });
      }
    }
    const live = this.opts.nodes().filter((n) => n.state === 'ready');
    const result = place({ stacks: stacks.map((s) => ({ name: s.name, document: s.document })), nodes: live, previous });

    const desired = new Map<string, AssignmentRecord>();
    const byName = new Map(stacks.map((s) => [s.name, s]));
    for (const a of result.assignments) {
      const s = byName.get(a.stack)!;
      const key = assignmentKey(a.node, a.stack);
      const rec = desired.get(key) ?? { stack: a.stack, node: a.node, generation: s.generation, document: s.document, placed: {}, writer: term.nodeId, term: term.revision };
      (rec.placed[a.service] ??= []).push({ n: a.slot, env: a.env, claims: a.claims } satisfies PlacedSlot);
      desired.set(key, rec);
    }
    const ops: FencedOp[] = [];
    for (const [key, rec] of desired) {
      for (const slots of Object.values(rec.placed)) slots.sort((x, y) => x.n - y.n);
      const text = canonicalJson(rec);
      if (current.get(key) !== text) ops.push({ put: key, value: text });
    }
    for (const key of current.keys()) if (!desired.has(key)) ops.push({ delete: key });
    const writes = ops.length;
    const pendingNow = new Map<string, PendingRecord>();
    for (const p of result.pending) {
      const s = byName.get(p.stack)!;
      const rec = pendingNow.get(p.stack) ?? { stack: p.stack, generation: s.generation, pending: [], writer: term.nodeId, term: term.revision };
      rec.pending.push({ service: p.service, slot: p.slot, reason: p.reason });
      pendingNow.set(p.stack, rec);
    }
    const pendingWas = this.pending.entries();
    for (const [stack, rec] of pendingNow) {
      const text = canonicalJson(rec);
      if (pendingWas.get(pendingKey(stack)) !== text) ops.push({ put: pendingKey(stack), value: text });
    }
    for (const key of pendingWas.keys()) if (!pendingNow.has(key.slice(PENDING_PREFIX.length))) ops.push({ delete: key });
    if (ops.length && !(await fencedWrite(client, term, ops))) {
      this.opts.deposed(`a placement write under term ${term.revision} was refused: another node leads`);
      return;
    }
    if (writes) this.opts.log.info({ stacks: stacks.length, nodes: live.length, assignments: desired.size, pending: result.pending.length, writes }, 'placed cluster stacks');
  }
}

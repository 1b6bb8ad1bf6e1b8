// The leader's swarm orchestrator: while this node leads, it reads the services, the tasks, what the
// nodes report of their tasks, the node specs and the live nodes from watch-fed caches, runs one
// step of lib/swarm/orchestrate.ts (status folded in, tasks made, shut down, placed, removed) and
// writes the difference: the tasks (`/engine/swarm/tasks/<id>`), what each node is to run
// (`/engine/node-tasks/<node>/<id>`) and a service's UpdateStatus (a rollback: its previous spec
// back, written only over the record it read). Level-triggered: run on every change of those
// prefixes, of the nodes, and every 2 s (sooner when a restart's delay or an update's Delay or
// Monitor ends); a new leader carries on from what etcd holds. Every write is fenced by the leader's term (./fence.ts): a deposed leader's writes
// are refused by etcd, so no two leaders ever place a task twice. It is the reconciler of the
// `swarm-orchestrator` controller (./controllers.ts), of one key, run only while this node leads.
import type { Logger } from 'pino';
import type { Etcd3 } from 'etcd3';
import { newSwarmId } from '../../lib/swarm/ids.ts';
import { canonicalJson } from '../../lib/canonical-json.ts';
import { parseRecord, STATUS_PREFIX, type NodeRecord } from '../../lib/cluster/node-record.ts';
import { CLUSTER_KEY, SERVICES_PREFIX } from '../../lib/swarm/keys.ts';
import { NODE_SPECS_PREFIX, type NodeSpec } from '../../lib/swarm/node-spec.ts';
import { orchestrate, type ServiceInput } from '../../lib/swarm/orchestrate.ts';
import { NODE_TASKS_PREFIX, nodeTaskKey, nodeTaskOf, taskKey, TASKS_PREFIX, type TaskRecord, type TaskReport } from '../../lib/swarm/task.ts';
import { fencedReplace, fencedWrite, type FencedOp, type LeaderTerm } from './fence.ts';
import { KeySource } from '../../controllers/source.ts';
import type { ReconcileResult, Reconciler } from '../../controllers/controller.ts';
import { ORCHESTRATOR_KEY } from './controllers.ts';
import { PrefixCache } from './prefix-cache.ts';

const RESYNC_MS = 2000;
const DEFAULT_RETENTION = 5;

export interface OrchestratorOptions {
  etcd: () => Etcd3 | null;
  nodes: () => NodeRecord[];
  term: () => LeaderTerm | undefined;
  deposed: (reason: string) => void;
  log: Logger;
}


export class SwarmOrchestrator implements Reconciler {
  private readonly opts: OrchestratorOptions;
  private readonly services = new PrefixCache(SERVICES_PREFIX);
  private readonly tasks = new PrefixCache(TASKS_PREFIX);
  private readonly nodeTasks = new PrefixCache(NODE_TASKS_PREFIX);
  private readonly statuses = new PrefixCache(STATUS_PREFIX);
  private readonly specs = new PrefixCache(NODE_SPECS_PREFIX);
  private readonly cluster = new PrefixCache(CLUSTER_KEY);
  readonly wakes = new KeySource();

  constructor(opts: OrchestratorOptions) {
    this.opts = opts;
  }

  get caches(): PrefixCache[] {
    return [this.services, this.tasks, this.nodeTasks, this.statuses, this.specs, this.cluster];
  }

  async reconcile(): Promise<ReconcileResult> {
    const next = await this.pass();
    return { requeueAfter: Math.max(100, Math.min(RESYNC_MS, next ?? RESYNC_MS)) };
  }

  async watch(): Promise<void> {
    const client = this.opts.etcd();
    if (client) await Promise.all(this.caches.map((c) => c.start(client)));
  }

  stop(): void {
    for (const c of this.caches) c.stop();
  }

  kick(): void {
    this.wakes.emit(ORCHESTRATOR_KEY);
  }

  /**
   * The tasks as this leader last wrote them, until the watch-fed cache shows those writes: a pass
   * right after a write must not read the cache from before it (a task made twice). Only the
   * leader writes tasks, under its term; a new term starts from what etcd holds.
   */
  private readonly written = new Map<string, string | null>();
  private writtenTerm = '';

  private async taskTexts(client: Etcd3, term: LeaderTerm): Promise<Map<string, string>> {
    if (this.writtenTerm !== term.revision) {
      // A new term reads the tasks from etcd itself once: the cache may not show yet what the
      // previous leader wrote last.
      const now = await client.getAll().prefix(TASKS_PREFIX).strings();
      this.written.clear();
      for (const key of this.tasks.entries().keys()) if (!(key in now)) this.written.set(key, null);
      for (const [key, value] of Object.entries(now)) this.written.set(key, value);
      this.writtenTerm = term.revision;
    }
    const out = new Map(this.tasks.entries());
    for (const [key, value] of this.written) {
      const cached = out.get(key);
      if (value === null ? cached === undefined : cached === value) this.written.delete(key);
      else if (value === null) out.delete(key);
      else out.set(key, value);
    }
    return out;
  }

  /** One step; how long until a restart's delay ends (undefined: none pending). */
  private async pass(): Promise<number | undefined> {
    const client = this.opts.etcd();
    const term = this.opts.term();
    if (!client || !term) return undefined;
    for (const c of this.caches) void c.start(client);
    if (!this.caches.every((c) => c.ready)) return undefined;
    const services: ServiceInput[] = [];
    const serviceTexts = new Map<string, string>();
    for (const v of this.services.values()) {
      const r = parseRecord<ServiceInput>(v);
      if (r?.ID && r.Spec) {
        services.push(r);
        serviceTexts.set(r.ID, v);
      }
    }
    const tasks: TaskRecord[] = [];
    for (const v of (await this.taskTexts(client, term)).values()) {
      const t = parseRecord<TaskRecord>(v);
      if (t?.ID) tasks.push(t);
    }
    const onNode = new Map(tasks.map((t) => [t.ID, t.NodeID]));
    const reports = new Map<string, TaskReport>();
    for (const [key, v] of this.statuses.entries()) {
      const m = /^\/engine\/status\/([^/]+)\/task\/([^/]+)$/.exec(key);
      const r = m && parseRecord<TaskReport>(v);
      // A report counts from the node the task is on only.
      if (m && r?.Status && onNode.get(m[2]!) === m[1]) reports.set(m[2]!, r);
    }
    const specs = new Map<string, NodeSpec>();
    for (const [key, v] of this.specs.entries()) {
      const s = parseRecord<NodeSpec>(v);
      if (s) specs.set(key.slice(NODE_SPECS_PREFIX.length), s);
    }
    const nodes = this.opts.nodes().filter((n) => n.state === 'ready').map((record) => ({ record, spec: specs.get(record.id) }));
    const stored = parseRecord<{ spec?: { Orchestration?: { TaskHistoryRetentionLimit?: number } } }>(this.cluster.values()[0]);
    const retention = stored?.spec?.Orchestration?.TaskHistoryRetentionLimit ?? DEFAULT_RETENTION;
    const now = Date.now();
    const result = orchestrate({ now, services, tasks, reports, nodes, retention: retention > 0 ? retention : DEFAULT_RETENTION, newId: newSwarmId });

    const after = new Map(tasks.map((t) => [t.ID, t]));
    for (const t of result.put) after.set(t.ID, t);
    for (const id of result.remove) after.delete(id);
    const ops: FencedOp[] = [];
    const written = new Map<string, string | null>();
    for (const t of result.put) written.set(taskKey(t.ID), JSON.stringify({ ...t, Writer: term.nodeId, Term: term.revision }));
    for (const id of result.remove) written.set(taskKey(id), null);
    for (const [key, value] of written) ops.push(value === null ? { delete: key } : { put: key, value });
    const wanted = new Map<string, string>();
    for (const t of after.values()) if (t.NodeID) wanted.set(nodeTaskKey(t.NodeID, t.ID), canonicalJson(nodeTaskOf(t)));
    const current = this.nodeTasks.entries();
    for (const [key, text] of wanted) if (current.get(key) !== text) ops.push({ put: key, value: text });
    for (const key of current.keys()) if (!wanted.has(key)) ops.push({ delete: key });
    if (ops.length && !(await fencedWrite(client, term, ops))) {
      this.opts.deposed(`an orchestrator write under term ${term.revision} was refused: another node leads`);
      return undefined;
    }
    for (const [key, value] of written) this.written.set(key, value);
    // A service's update moves on (UpdateStatus), or rolls back to its previous spec.
    for (const c of result.services) {
      const text = serviceTexts.get(c.ID);
      const rec = text ? parseRecord<Record<string, unknown>>(text) : undefined;
      if (!text || !rec) continue;
      const next: Record<string, unknown> = { ...rec, UpdatedAt: new Date(now).toISOString(), UpdateStatus: c.UpdateStatus };
      if (c.rollback && rec['PreviousSpec']) {
        next['Spec'] = rec['PreviousSpec'];
        delete next['PreviousSpec'];
      }
      const done = await fencedReplace(client, term, `${SERVICES_PREFIX}${c.ID}`, text, JSON.stringify(next));
      if (done === 'deposed') {
        this.opts.deposed(`an orchestrator write under term ${term.revision} was refused: another node leads`);
        return undefined;
      }
      if (c.rollback || c.UpdateStatus.State !== 'updating') this.opts.log.info({ service: c.ID, state: c.UpdateStatus.State, message: c.UpdateStatus.Message }, 'a swarm service\'s update moved on');
    }
    if (result.put.length || result.remove.length) this.opts.log.debug({ services: services.length, put: result.put.length, removed: result.remove.length }, 'orchestrated the swarm\'s tasks');
    return result.wakeAt === undefined ? undefined : result.wakeAt - now;
  }
}

// The node agent: turns this node's assignments (`/engine/assignments/<self>/<stack>`) into local
// stacks of the same name (so Compose's labels filter them as any stack's), each carrying the
// replica slots placed here and their environment (spec.placed); a local cluster stack no longer
// assigned here is removed. It publishes each one's status under the node's lease
// (`/engine/status/<self>/<stack>`), when it changes. It acts only on a successful read of its
// assignments; a node that cannot renew its lease fences its cluster stacks (fence(), driven by
// ./self-fence.ts) while its local containers keep running. A pass reads the assignments from a
// watch-fed cache (./prefix-cache.ts); it reads etcd itself only when the cache cannot answer
// (not listed yet, cut off from etcd) and while fenced or just after: a fence ends on what etcd
// says now, not on what a watch may not have caught up with. It is the reconciler of the
// `cluster-agent` controller (./controllers.ts), of one key: this node.
import type { Logger } from 'pino';
import type { Etcd3 } from 'etcd3';
import { canonicalJson } from '../../lib/canonical-json.ts';
import { ASSIGNMENTS_PREFIX, parseRecord, statusKey, type AssignmentRecord, type StackStatusRecord } from '../../lib/cluster/node-record.ts';
import { composeApp } from '../../lib/compose/schema.ts';
import { rfc3339Nano } from '../../lib/ids.ts';
import { Containers } from '../../store/kinds/container.ts';
import { INITIAL_STACK_STATUS, placedStacks, Stacks, type StackSpec } from '../../store/kinds/stack.ts';
import { KeySource } from '../../controllers/source.ts';
import type { ReconcileResult, Reconciler } from '../../controllers/controller.ts';
import { AGENT_KEY } from './controllers.ts';
import { PrefixCache } from './prefix-cache.ts';
import { killAtDeadline, stopForFence } from './fence-containers.ts';
import type { Store } from '../../store/store.ts';

/** A pass at least this often, changes or not (a missed event never strands the node). */
const AGENT_RESYNC_MS = 2000;
const PUBLISH_DEBOUNCE_MS = 200;

export interface AgentOptions {
  store: Pick<Store, 'get' | 'list' | 'create' | 'updateSpec' | 'watch'> & Parameters<typeof placedStacks>[0];
  nodeId: string;
  etcd: () => Etcd3 | null;
  putLeased: (key: string, value: string) => Promise<boolean>;
  log: Logger;
  /**
   * Self-fencing (./self-fence.ts): whether cluster-placed containers may start now, and the
   * report that the assignments were read (which ends a fence under a lease held again).
   */
  fence?: { startsAllowed(): boolean; assignmentsRead(): void };
  /** SIGKILL to every process of a container's task (the fence deadline). */
  kill?: (id: string) => Promise<void>;
}


const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

export class NodeAgent implements Reconciler {
  private readonly opts: AgentOptions;
  private readonly prefix: string;
  /** This node's assignments, watch-fed: the controller's etcd source. */
  readonly assignments: PrefixCache;
  /** Wakes the controller's one key (a release, a rejoin). */
  readonly wakes = new KeySource();
  /** The next pass reads etcd itself (set on a release and a rejoin: the cache may lag a partition). */
  private readFresh = true;
  private publishTimer: NodeJS.Timeout | null = null;
  private unwatchStore: (() => void) | null = null;
  private stopped = false;
  /** Status key → the content last written there under the current lease (without its time). */
  private readonly published = new Map<string, string>();
  /** Stack → the assignment generation last applied (published with its status). */
  private readonly generations = new Map<string, number>();

  constructor(opts: AgentOptions) {
    this.opts = opts;
    this.prefix = `${ASSIGNMENTS_PREFIX}${opts.nodeId}/`;
    this.assignments = new PrefixCache(this.prefix);
  }

  /**
   * A pass: this node's assignments applied, then again after the resync interval. A failed read
   * keeps what runs; the runner retries it with back-off and logs it at debug (quietRetries).
   */
  async reconcile(): Promise<ReconcileResult> {
    await this.sync();
    return { requeueAfter: AGENT_RESYNC_MS };
  }

  /** Publishes the local cluster stacks' status as they change. */
  start(): void {
    this.unwatchStore = this.opts.store.watch(Stacks, (ev) => {
      if (ev.type !== 'delete' && !ev.resource.spec.placed) return;
      this.schedulePublish();
    });
  }

  /** Lists and follows this node's assignments once the client exists (again on a new client). */
  async watch(): Promise<void> {
    const client = this.opts.etcd();
    if (client) await this.assignments.start(client);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.publishTimer) clearTimeout(this.publishTimer);
    this.unwatchStore?.();
    this.assignments.stop();
  }

  kick(): void {
    this.wakes.emit(AGENT_KEY);
  }

  private async sync(): Promise<void> {
    const client = this.opts.etcd();
    if (!client) return;
    const { store, log } = this.opts;
    const { values, fresh } = await this.readAssignments(client);
    const records = new Map<string, AssignmentRecord>();
    for (const v of values) {
      const r = parseRecord<AssignmentRecord>(v);
      if (r) records.set(r.stack, r);
    }
    if (fresh) {
      // Read from etcd under a lease held again after a fence: that ends it (release() clears the stacks' mark).
      this.opts.fence?.assignmentsRead();
    }
    const starts = this.opts.fence?.startsAllowed() ?? true;
    for (const [name, rec] of records) {
      // Fenced: nothing is created or changed (a change could start something); removals go on.
      if (!starts) continue;
      const doc = composeApp.safeParse(rec.document);
      if (!doc.success) {
        log.warn({ stack: name }, 'an assignment whose document does not validate is ignored');
        continue;
      }
      const placed = Object.fromEntries(Object.entries(rec.placed).map(([svc, slots]) => [svc, slots.map((s) => ({ n: s.n, ...(Object.keys(s.env).length ? { env: s.env } : {}) }))]));
      const spec: StackSpec = { document: doc.data, desired: 'present', removeVolumes: false, appliedAt: rfc3339Nano(), placed };
      const local = store.get(Stacks, name);
      this.generations.set(name, rec.generation);
      if (!local) {
        log.info({ stack: name, generation: rec.generation }, 'a cluster stack placed on this node');
        store.create(Stacks, name, spec, INITIAL_STACK_STATUS);
      } else if (local.spec.desired === 'removed') {
        continue; // its removal finishes first; the next pass creates it again
      } else if (!local.spec.placed) {
        log.warn({ stack: name }, 'a local stack of the same name exists: the cluster stack is not placed here');
      } else if (!same(local.spec.document, spec.document) || !same(local.spec.placed, spec.placed) || local.spec.fenced) {
        store.updateSpec(Stacks, name, () => spec);
      }
    }
    for (const local of store.list(Stacks)) {
      if (!local.spec.placed || local.spec.desired === 'removed' || records.has(local.name)) continue;
      log.info({ stack: local.name }, 'a cluster stack no longer assigned to this node: removing its local part');
      store.updateSpec(Stacks, local.name, (s) => ({ ...s, desired: 'removed', removeVolumes: false }));
      this.generations.delete(local.name);
    }
    this.schedulePublish();
  }

  /** This node's assignment records: from the cache, or from etcd when it must be (the header says when). */
  private async readAssignments(client: Etcd3): Promise<{ values: string[]; fresh: boolean }> {
    void this.assignments.start(client); // a no-op on the client it follows
    const fresh = this.readFresh || !this.assignments.ready || !(this.opts.fence?.startsAllowed() ?? true);
    if (!fresh) return { values: this.assignments.values(), fresh };
    this.readFresh = false;
    try {
      return { values: Object.values(await client.getAll().prefix(this.prefix).strings()), fresh };
    } catch (err) {
      this.readFresh = true;
      throw err;
    }
  }

  /**
   * The node could not renew its lease: every cluster stack here is marked fenced (its reconciler
   * starts nothing of it) and every container of one is stopped, its stop signal now and SIGKILL
   * by `killAt` (monotonic ms) whatever its grace: the timeout is what is left until then.
   */
  fence(killAt: number): void {
    const { store, log } = this.opts;
    let stopped = 0;
    for (const { stack: local, containers } of placedStacks(store, (s) => s.spec.desired !== 'removed')) {
      if (!local.spec.fenced) store.updateSpec(Stacks, local.name, (sp) => ({ ...sp, fenced: true }));
      stopped += stopForFence(store, containers, killAt);
    }
    log.warn({ containers: stopped, killInS: Math.max(0, Math.floor((killAt - performance.now()) / 1000)) }, 'cluster lease not renewed: fencing this node, its cluster containers stopped');
  }

  /** The fence deadline: whatever of a fenced stack still has a process is killed. */
  deadline(): void {
    const { store, log } = this.opts;
    for (const { containers } of placedStacks(store, (s) => !!s.spec.fenced)) killAtDeadline(containers, this.opts.kill, log);
  }

  /** Fenced no more: the lease is held and the assignments read; the next sync applies them. */
  release(): void {
    this.opts.log.info('cluster lease held and assignments read: this node is fenced no more');
    this.readFresh = true;
    this.kick();
  }

  private schedulePublish(): void {
    if (this.publishTimer || this.stopped) return;
    this.publishTimer = setTimeout(() => {
      this.publishTimer = null;
      void this.publish().catch(() => {});
    }, PUBLISH_DEBOUNCE_MS);
    this.publishTimer.unref();
  }

  /**
   * Each local cluster stack's status, under the lease, written only when it changed since this
   * node last wrote it (a node at rest writes nothing); the status of a stack no longer here is
   * deleted. The local status goes without the documents of earlier generations it keeps for
   * rollbacks: the cluster view reads conditions and counts.
   */
  private async publish(): Promise<void> {
    const { store, nodeId } = this.opts;
    const client = this.opts.etcd();
    if (!client) return;
    const here = new Set<string>();
    for (const local of store.list(Stacks)) {
      if (!local.spec.placed || local.spec.desired === 'removed') continue;
      const key = statusKey(local.name, nodeId);
      here.add(key);
      const { documents: _documents, ...status } = local.status;
      const body = { stack: local.name, node: nodeId, generation: this.generations.get(local.name) ?? 0, status };
      const content = canonicalJson(body);
      if (this.published.get(key) === content) continue;
      const rec: StackStatusRecord = { ...body, updatedAt: rfc3339Nano() };
      if (await this.opts.putLeased(key, JSON.stringify(rec))) this.published.set(key, content);
    }
    for (const key of [...this.published.keys()]) {
      if (here.has(key)) continue;
      await client.delete().key(key);
      this.published.delete(key);
    }
  }

  /**
   * The node joined again under a new lease: what it wrote under the old one went with it, so
   * everything is written again.
   */
  rejoined(): void {
    this.readFresh = true;
    this.published.clear();
    this.schedulePublish();
  }
}

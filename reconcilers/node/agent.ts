// The node agent: turns this node's assignments (`/engine/assignments/<self>/<stack>`) into local
// stacks of the same name (so Compose's labels filter them as any stack's), each carrying the
// replica slots placed here and their environment (spec.placed); a local cluster stack no longer
// assigned here is removed. It publishes each one's status under the node's lease
// (`/engine/status/<stack>/<self>`), when it changes. It acts only on a successful read of its assignments: while
// etcd does not answer, what runs keeps running.
import type { Logger } from 'pino';
import type { Etcd3 } from 'etcd3';
import { canonicalJson } from '../../lib/canonical-json.ts';
import { ASSIGNMENTS_PREFIX, parseRecord, statusKey, type AssignmentRecord, type StackStatusRecord } from '../../lib/cluster/node-record.ts';
import { composeApp } from '../../lib/compose/schema.ts';
import { rfc3339Nano } from '../../lib/ids.ts';
import { INITIAL_STACK_STATUS, Stacks, type StackSpec } from '../../store/kinds/stack.ts';
import { PassLoop } from './pass-loop.ts';
import type { Store } from '../../store/store.ts';

const RESYNC_MS = 2000;
const PUBLISH_DEBOUNCE_MS = 200;

export interface AgentOptions {
  store: Pick<Store, 'get' | 'list' | 'create' | 'updateSpec' | 'watch'>;
  nodeId: string;
  etcd: () => Etcd3 | null;
  putLeased: (key: string, value: string) => Promise<boolean>;
  log: Logger;
}

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

export class NodeAgent {
  private readonly opts: AgentOptions;
  private readonly prefix: string;
  private readonly loop: PassLoop;
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
    this.loop = new PassLoop(() => this.sync(), {
      everyMs: RESYNC_MS,
      onError: (err) => opts.log.debug({ err: err instanceof Error ? err.message : String(err) }, "reading this node's assignments failed; keeping what runs"),
    });
  }

  start(): void {
    this.loop.start();
    this.unwatchStore = this.opts.store.watch(Stacks, (ev) => {
      if (ev.type !== 'delete' && !ev.resource.spec.placed) return;
      this.schedulePublish();
    });
  }

  async watch(): Promise<void> {
    const client = this.opts.etcd();
    if (client) await this.loop.watchPrefix(client, this.prefix);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.publishTimer) clearTimeout(this.publishTimer);
    this.unwatchStore?.();
    await this.loop.stop();
  }

  kick(): void {
    this.loop.kick();
  }

  private async sync(): Promise<void> {
    const client = this.opts.etcd();
    if (!client) return;
    const { store, log } = this.opts;
    const records = new Map<string, AssignmentRecord>();
    for (const v of Object.values(await client.getAll().prefix(this.prefix).strings())) {
      const r = parseRecord<AssignmentRecord>(v);
      if (r) records.set(r.stack, r);
    }
    for (const [name, rec] of records) {
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
      } else if (!same(local.spec.document, spec.document) || !same(local.spec.placed, spec.placed)) {
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
      const content = canonicalJson({ stack: local.name, node: nodeId, generation: this.generations.get(local.name) ?? 0, status });
      if (this.published.get(key) === content) continue;
      const rec: StackStatusRecord = { stack: local.name, node: nodeId, generation: this.generations.get(local.name) ?? 0, status, updatedAt: rfc3339Nano() };
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
    this.published.clear();
    this.schedulePublish();
  }
}

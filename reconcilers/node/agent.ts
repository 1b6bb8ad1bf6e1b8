// The node agent: turns this node's assignments (`/engine/assignments/<self>/<stack>`) into local
// stacks of the same name (so Compose's labels filter them as any stack's), each carrying the
// replica slots placed here and their environment (spec.placed); a local cluster stack no longer
// assigned here is removed. It publishes each one's status under the node's lease
// (`/engine/status/<stack>/<self>`). It acts only on a successful read of its assignments: while
// etcd does not answer, what runs keeps running.
import type { Logger } from 'pino';
import type { Etcd3 } from 'etcd3';
import { ASSIGNMENTS_PREFIX, parseRecord, STATUS_PREFIX, statusKey, type AssignmentRecord, type StackStatusRecord } from '../../lib/cluster/node-record.ts';
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

  /** Each local cluster stack's status, under the lease; the status of one removed here deleted. */
  private async publish(): Promise<void> {
    const { store, nodeId } = this.opts;
    const client = this.opts.etcd();
    if (!client) return;
    const here = new Set<string>();
    for (const local of store.list(Stacks)) {
      if (!local.spec.placed || local.spec.desired === 'removed') continue;
      here.add(local.name);
      const rec: StackStatusRecord = { stack: local.name, node: nodeId, generation: this.generations.get(local.name) ?? 0, status: local.status, updatedAt: rfc3339Nano() };
      await this.opts.putLeased(statusKey(local.name, nodeId), JSON.stringify(rec));
    }
    const mine = await client.getAll().prefix(STATUS_PREFIX).keys();
    for (const key of mine) {
      const [stack, node] = key.slice(STATUS_PREFIX.length).split('/');
      if (node === nodeId && stack && !here.has(stack)) await client.delete().key(key);
    }
  }
}

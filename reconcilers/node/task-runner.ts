// A node's swarm tasks, run as containers: the desired state is what the leader gave this node
// (`/engine/node-tasks/<self>/<id>`, watch-fed), the observed one its containers owned by a task
// (ownerRef swarm-task/<id>, in the durable store: a restarted daemon finds them). For each task:
// desired running (a job's: complete) or ready and no container → one is created through admission
// (the create route's checks and defaults) as SERVICE.SLOT.ID, started when it runs (an image the node lacks is pulled
// first: `preparing`, then `rejected` with the pull's error if it fails); desired shutdown or remove → its
// container is stopped; a task no longer given → its container removed. A task's container is
// never started twice: once its run ended the task is over (the orchestrator makes another). What
// each task is doing is reported under the node's lease (`/engine/status/<self>/task/<id>`), when it
// changes, in the reference's states. A node that cannot renew its lease stops its task containers
// (fence(), driven by ./self-fence.ts) and starts nothing until the lease is held again and its
// tasks were read under it: while fenced, and on the pass after a release or a rejoin, it reads
// them from etcd itself (a fence ends on what etcd says now, not on a watch that may lag a
// partition), and that read is what ends the fence. It is the reconciler of the `swarm-tasks`
// controller (./controllers.ts), of one key: this node.
import type { Logger } from 'pino';
import type { Etcd3 } from 'etcd3';
import { canonicalJson } from '../../lib/canonical-json.ts';
import { removeLevel, startLevel } from '../../admission/containers/lifecycle.ts';
import { killAtDeadline, stopForFence } from './fence-containers.ts';
import { isCode } from '../../lib/errors.ts';
import { formatReference, parseReference, withTag } from '../../lib/reference.ts';
import { askPull, pullName, Pulls } from '../../store/kinds/pull.ts';
import { decodeRegistryAuth } from '../../lib/registry-auth.ts';
import type { RegistryAuth } from '../../lib/ports/registry.ts';
import { registryAuthOf, type ServiceSpec } from '../../lib/swarm/service-spec.ts';
import { parseRecord } from '../../lib/cluster/node-record.ts';
import { containerBodyOf } from '../../lib/swarm/task-container.ts';
import { isTerminal, NODE_TASKS_PREFIX, taskName, taskStatusKey, taskStatusPrefix, type NodeTask, type TaskState, type TaskStatus } from '../../lib/swarm/task.ts';
import { Containers, isRunning, swarmTaskContainers, type ContainerResource } from '../../store/kinds/container.ts';
import type { Store } from '../../store/store.ts';
import { KeySource } from '../../controllers/source.ts';
import type { ReconcileResult, Reconciler } from '../../controllers/controller.ts';
import { TASKS_KEY } from './controllers.ts';
import { PrefixCache } from './prefix-cache.ts';
import { joinsNetworks, type TaskNetworks } from './overlay.ts';

const RESYNC_MS = 2000;

export interface TaskRunnerOptions {
  store: Pick<Store, 'get' | 'list' | 'create' | 'updateSpec' | 'watch'>;
  nodeId: string;
  etcd: () => Etcd3 | null;
  putLeased: (key: string, value: string) => Promise<boolean>;
  /** Creates the task's container through admission (owned by the task); started when `start`. Throws the admission's refusal. */
  run: (taskId: string, name: string, body: Record<string, unknown>, start: boolean) => void;
  /**
   * Self-fencing (./self-fence.ts): whether containers may start now, and the report that this
   * node's tasks were read from etcd (which ends a fence under a lease held again).
   */
  fence?: { startsAllowed(): boolean; tasksRead(): void };
  kill?: (id: string) => Promise<void>;
  /** A task's overlay networks made ready here and its addresses taken (./overlay.ts); 'wait' while they are made. */
  networks?: (t: NodeTask) => Promise<TaskNetworks | 'wait'>;
  /** The task's container exists or the task is gone: what networks() gave it may be forgotten. */
  networksDone?: (taskId: string) => void;
  /** A task's secrets and configs written here (from a manager) and the binds that show them to its container. */
  files?: (t: NodeTask) => Promise<Array<Record<string, unknown>>>;
  /** The files of tasks not in `keep` removed. */
  collectFiles?: (keep: ReadonlySet<string>) => Promise<void>;
  /** The credentials the next run of a pull uses (the pull reconciler's). */
  credentials?: (pull: string, auth: RegistryAuth | undefined) => void;
  /** The node's CDI devices (features.cdi), which a task's generic resources may name. */
  cdiDevices?: () => string[];
  log: Logger;
}

const taskOf = (c: ContainerResource) => c.spec.ownerRef?.name ?? '';
/** What a task's container is made with besides its spec: its networks, the binds of its secrets and configs. */
interface Prepared {
  nets?: TaskNetworks;
  mounts: Array<Record<string, unknown>>;
}
type Report = Pick<TaskStatus, 'State' | 'Message' | 'Err' | 'ContainerStatus'> & { PortStatus?: TaskStatus['PortStatus'] };

export class TaskRunner implements Reconciler {
  private readonly opts: TaskRunnerOptions;
  readonly assigned: PrefixCache;
  readonly wakes = new KeySource();
  /** Task → the status last reported (the timestamp kept while nothing else changes). */
  private readonly reported = new Map<string, TaskStatus>();
  /** Task → the generation of the pull of its image it waits for. */
  private readonly pulling = new Map<string, number>();
  /** Status key → what was written there under the current lease. */
  private readonly published = new Map<string, string>();
  private unwatch: (() => void) | null = null;
  private readonly prefix: string;
  /** The next pass reads etcd itself (set on a release and a rejoin: the cache may lag a partition). */
  private readFresh = true;

  constructor(opts: TaskRunnerOptions) {
    this.opts = opts;
    this.prefix = `${NODE_TASKS_PREFIX}${opts.nodeId}/`;
    this.assigned = new PrefixCache(this.prefix);
  }

  start(): void {
    this.unwatch = this.opts.store.watch(Containers, (ev) => {
      if (ev.resource.spec.ownerRef?.kind === 'swarm-task') this.kick();
    });
  }

  async watch(): Promise<void> {
    const client = this.opts.etcd();
    if (client) await this.assigned.start(client);
  }

  stop(): void {
    this.unwatch?.();
    this.assigned.stop();
  }

  kick(): void {
    this.wakes.emit(TASKS_KEY);
  }

  /** The node joined again under a new lease: every status is written again, the tasks read from etcd. */
  rejoined(): void {
    this.published.clear();
    this.readFresh = true;
    this.kick();
  }

  /** Fenced no more: the lease is held and the tasks read; the next pass runs them. */
  release(): void {
    this.opts.log.info('cluster lease held and tasks read: this node is fenced no more');
    this.readFresh = true;
    this.kick();
  }

  async reconcile(): Promise<ReconcileResult> {
    await this.sync();
    return { requeueAfter: RESYNC_MS };
  }

  /** The lease could not be renewed: every task container is stopped, SIGKILL by `killAt` (monotonic ms). */
  fence(killAt: number): void {
    stopForFence(this.opts.store, swarmTaskContainers(this.opts.store), killAt);
  }

  /** The node leaves its swarm: every task container goes (as the reference's leave removes them). */
  removeAll(): void {
    for (const c of swarmTaskContainers(this.opts.store)) {
      if (c.spec.desired !== 'removed') this.opts.store.updateSpec(Containers, c.name, removeLevel({ force: true, volumes: false }));
    }
  }

  /** The fence deadline: a task container still running is killed. */
  deadline(): void {
    killAtDeadline(swarmTaskContainers(this.opts.store), this.opts.kill, this.opts.log);
  }

  /**
   * This node's task records, whole: from the watch-fed cache, or from etcd itself while fenced,
   * after a release or a rejoin, or while the cache cannot answer (then `fresh`).
   */
  private async readAssigned(client: Etcd3): Promise<{ values: string[]; fresh: boolean } | undefined> {
    void this.assigned.start(client); // a no-op on the client it follows
    const fresh = this.readFresh || !(this.opts.fence?.startsAllowed() ?? true);
    if (!fresh) return this.assigned.ready ? { values: this.assigned.values(), fresh } : undefined;
    this.readFresh = false;
    try {
      return { values: Object.values(await client.getAll().prefix(this.prefix).strings()), fresh };
    } catch (err) {
      this.readFresh = true;
      throw err;
    }
  }

  private async sync(): Promise<void> {
    const client = this.opts.etcd();
    if (!client) return;
    // Only on a whole view of what this node is given: a partial one would remove what runs.
    const read = await this.readAssigned(client);
    if (!read) return;
    // Read from etcd under a lease held again after a fence: that ends it.
    if (read.fresh) this.opts.fence?.tasksRead();
    const tasks = new Map<string, NodeTask>();
    for (const v of read.values) {
      const t = parseRecord<NodeTask>(v);
      if (t?.ID) tasks.set(t.ID, t);
    }
    const containers = new Map(swarmTaskContainers(this.opts.store).map((c) => [taskOf(c), c]));
    const starts = this.opts.fence?.startsAllowed() ?? true;
    for (const t of tasks.values()) {
      const c = containers.get(t.ID);
      const s = this.step(t, c, starts, !c && starts ? await this.prepareOf(t) : undefined);
      if (s) this.report(t.ID, s);
    }
    for (const [id, c] of containers) {
      if (tasks.has(id) || c.spec.desired === 'removed') continue;
      this.opts.store.updateSpec(Containers, c.name, removeLevel({ force: true, volumes: false }));
    }
    for (const id of [...this.reported.keys()]) if (!tasks.has(id)) this.reported.delete(id);
    for (const id of [...this.pulling.keys()]) if (!tasks.has(id)) this.pulling.delete(id);
    await this.opts.collectFiles?.(new Set([...tasks.keys(), ...containers.keys()])).catch(() => undefined);
    await this.publish(client, tasks);
  }

  /**
   * What a task whose container is to be made needs first: its networks (./overlay.ts) and its
   * secrets' and configs' files (undefined: nothing, or no container to make now).
   */
  private async prepareOf(t: NodeTask): Promise<Prepared | 'wait' | { failed: string } | undefined> {
    const prev = this.reported.get(t.ID);
    const makes = t.DesiredState === 'running' || t.DesiredState === 'complete' || t.DesiredState === 'ready';
    if (!makes || (prev && isTerminal(prev.State))) return undefined;
    try {
      const nets = joinsNetworks(t) && this.opts.networks ? await this.opts.networks(t) : undefined;
      if (nets === 'wait') return 'wait';
      const mounts = this.opts.files ? await this.opts.files(t) : [];
      return { ...(nets ? { nets } : {}), mounts };
    } catch (err) {
      return { failed: err instanceof Error ? err.message : String(err) };
    }
  }

  /** One task: its container made, started or stopped as the task wants; its status now. */
  private step(t: NodeTask, c: ContainerResource | undefined, starts: boolean, prep?: Prepared | 'wait' | { failed: string }): Report | undefined {
    const prev = this.reported.get(t.ID);
    const { store, log } = this.opts;
    const runs = t.DesiredState === 'running' || t.DesiredState === 'complete';
    if (runs || t.DesiredState === 'ready') {
      if (!c) {
        if (!starts || (prev && isTerminal(prev.State))) return undefined;
        if (prep === 'wait') return { State: 'preparing', Message: 'preparing' };
        if (prep && 'failed' in prep) return { State: 'rejected', Message: 'preparing', Err: prep.failed };
        try {
          this.opts.run(t.ID, taskName(t), containerBodyOf(t, prep?.nets, prep?.mounts, this.opts.cdiDevices?.() ?? []), runs);
          this.pulling.delete(t.ID);
          this.opts.networksDone?.(t.ID);
        } catch (err) {
          const msg = err instanceof Error ? err.message : String(err);
          // An image the node does not have: pulled first (a Pull in the store, as `docker pull` asks).
          if (isCode(err, 'NotFound') && msg.startsWith('No such image')) {
            const pull = this.pull(t);
            if (pull === 'pulling') return { State: 'preparing', Message: 'preparing' };
            if (pull === 'done') return this.step(t, c, starts, prep);
            log.warn({ task: t.ID, err: pull.failed }, 'a swarm task\'s image could not be pulled');
            return { State: 'rejected', Message: 'preparing', Err: pull.failed };
          }
          log.warn({ task: t.ID, err: msg }, 'a swarm task\'s container could not be made');
          return { State: 'rejected', Message: 'preparing', Err: msg };
        }
        return runs ? { State: 'starting', Message: 'starting' } : { State: 'ready', Message: 'prepared' };
      }
      // Its run is over: the task is done (the orchestrator makes another); nothing starts it again.
      if (prev && isTerminal(prev.State)) return undefined;
      if (runs && c.spec.desired === 'created' && starts) {
        store.updateSpec(Containers, c.name, startLevel);
        return { State: 'starting', Message: 'starting', ContainerStatus: { ContainerID: c.spec.id, PID: 0, ExitCode: 0 } };
      }
      return observed(c, false);
    }
    // Shut down (or to be removed): its container stopped.
    if (c && c.spec.desired === 'running') store.updateSpec(Containers, c.name, (sp) => ({ ...sp, desired: 'stopped' }));
    if (prev && isTerminal(prev.State)) return undefined;
    return c ? observed(c, true) : { State: 'shutdown', Message: 'shutdown' };
  }

  /** The task's image pulled: asked once, then followed until done or failed. */
  private pull(t: NodeTask): 'pulling' | 'done' | { failed: string } {
    const { store } = this.opts;
    const image = String((t.Spec['ContainerSpec'] as { Image?: string } | undefined)?.Image ?? '');
    let reference: string;
    try {
      const ref = parseReference(image);
      reference = formatReference(ref.tag === undefined && ref.digest === undefined ? withTag(ref, 'latest') : ref);
    } catch (err) {
      return { failed: err instanceof Error ? err.message : String(err) };
    }
    const name = pullName(reference, '');
    const cur = store.get(Pulls, name);
    const asked = this.pulling.get(t.ID);
    if (!asked) {
      // With the credentials the service was given (`--with-registry-auth`), else anonymous.
      this.opts.credentials?.(name, decodeRegistryAuth(registryAuthOf({ TaskTemplate: t.Spec as ServiceSpec['TaskTemplate'] })));
      this.pulling.set(t.ID, askPull(store, reference, ''));
      return 'pulling';
    }
    if (!cur) {
      this.pulling.delete(t.ID);
      return { failed: `No such image: ${image}` };
    }
    if (cur.status.observedGeneration < asked || (cur.status.phase !== 'done' && cur.status.phase !== 'failed')) return 'pulling';
    this.pulling.delete(t.ID);
    return cur.status.phase === 'done' ? 'done' : { failed: cur.status.error || `No such image: ${image}` };
  }

  private report(id: string, s: Report): void {
    const prev = this.reported.get(id);
    const next: TaskStatus = { Timestamp: prev?.Timestamp ?? new Date().toISOString(), State: s.State, Message: s.Message, ...(s.Err ? { Err: s.Err } : {}), ...(s.ContainerStatus ? { ContainerStatus: s.ContainerStatus } : {}), PortStatus: s.PortStatus ?? {} };
    const { Timestamp: _a, ...a } = next;
    const b = prev ? (({ Timestamp: _b, ...rest }) => rest)(prev) : undefined;
    if (b && canonicalJson(a) === canonicalJson(b)) return;
    this.reported.set(id, { ...next, Timestamp: new Date().toISOString() });
  }

  /** Each task's status under the lease, when it changed; the statuses of tasks no longer here deleted. */
  private async publish(client: Etcd3, tasks: ReadonlyMap<string, NodeTask>): Promise<void> {
    const { nodeId } = this.opts;
    for (const [id, status] of this.reported) {
      const key = taskStatusKey(nodeId, id);
      const text = JSON.stringify({ ID: id, Status: status });
      if (this.published.get(key) === text) continue;
      if (await this.opts.putLeased(key, text)) this.published.set(key, text);
    }
    const prefix = taskStatusPrefix(nodeId);
    for (const key of [...this.published.keys()]) {
      if (tasks.has(key.slice(prefix.length))) continue;
      await client.delete().key(key);
      this.published.delete(key);
    }
  }
}

/** A task's state as its container shows it (`stopped`: the task was shut down, so its end is a shutdown). */
function observed(c: ContainerResource, stopped: boolean): Report | undefined {
  const cs = (pid: number, exitCode: number) => ({ ContainerID: c.spec.id, PID: pid, ExitCode: exitCode });
  const st = c.status;
  if (isRunning(st)) {
    if (stopped) return undefined;
    // Its ports published in host mode, as the reference's PortStatus lists them.
    const ports = (st.ports ?? []).map((p) => ({ Protocol: p.proto, TargetPort: p.containerPort, PublishedPort: p.hostPort, PublishMode: 'host' }));
    // With a healthcheck, as moby's executor: starting until healthy; unhealthy is the task's failure.
    const health = st.health && st.healthRun === st.startedAt ? st.health.Status : undefined;
    if (health === 'starting') return { State: 'starting', Message: 'starting', ContainerStatus: cs(st.pid, 0) };
    if (health === 'unhealthy') return { State: 'failed', Message: 'started', Err: 'unhealthy container', ContainerStatus: cs(st.pid, 0) };
    return { State: 'running', Message: 'started', ContainerStatus: cs(st.pid, 0), ...(ports.length ? { PortStatus: { Ports: ports } } : {}) };
  }
  if (st.phase === 'created') {
    if (st.error) return { State: 'rejected', Message: 'starting', Err: st.error, ContainerStatus: cs(0, 0) };
    return stopped ? { State: 'shutdown', Message: 'shutdown' } : c.spec.desired === 'running' ? { State: 'starting', Message: 'starting', ContainerStatus: cs(0, 0) } : { State: 'ready', Message: 'prepared' };
  }
  if (st.phase === 'exited' || st.phase === 'dead') {
    const state: TaskState = stopped ? 'shutdown' : st.exitCode === 0 ? 'complete' : 'failed';
    return {
      State: state,
      Message: stopped ? 'shutdown' : state === 'complete' ? 'finished' : 'started',
      ...(state === 'failed' ? { Err: `task: non-zero exit (${st.exitCode})` } : {}),
      ContainerStatus: cs(0, st.exitCode),
    };
  }
  return undefined;
}

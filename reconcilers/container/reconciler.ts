// Container reconciler: makes the supervisor, storage and logs match each container's spec.
// Level-triggered: it receives an id, re-reads the record and acts on the differences
// (start/stop/kill sequence numbers above what status has observed, desired phase, a run
// that exited). Every step is safe to repeat after a crash at any line.
import { appendFileSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { rm, rmdir, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { conflict, errorCode, isCode } from '../../lib/errors.ts';
import { rfc3339Nano, ZERO_TIME } from '../../lib/ids.ts';
import type { ContainerSpec, ContainerStatus, ImageSpec, ImageStatus } from '../../store/types.ts';
import { KIND } from '../../store/types.ts';
import type { ReconcilerStore } from '../store-like.ts';
import type { ContainerReconcilerDeps, HubLike, LoggerLike, ProcessIOLike } from './deps.ts';
import { nextPhase } from './machine.ts';
import type { Run, RunRegistry } from './runs.ts';
import { decideRestart } from './restart-policy.ts';
import { parseSignal } from './signals.ts';

type C = { spec: ContainerSpec; status: ContainerStatus };

export interface ReconcileContext {
  signal: AbortSignal;
  log: Logger;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms).unref());

/** `p`, or nothing after `ms`; the timer goes when `p` settles first. */
function within(p: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const t = new Promise<void>((r) => (timer = setTimeout(r, ms).unref()));
  return Promise.race([p.then(() => {}, () => {}), t]).finally(() => clearTimeout(timer));
}

export class ContainerReconciler {
  readonly name = 'container';
  readonly kind = KIND.container;
  private readonly store: ReconcilerStore;
  private readonly deps: ContainerReconcilerDeps;
  private readonly runs: RunRegistry;
  /** Set by cmd once the controller exists: outside triggers (exits, timers) enter the queue here. */
  enqueue: (key: string, afterMs?: number) => void = () => {};

  constructor(store: ReconcilerStore, deps: ContainerReconcilerDeps, runs: RunRegistry) {
    this.store = store;
    this.deps = deps;
    this.runs = runs;
  }

  async reconcile(id: string, ctx: ReconcileContext): Promise<void | { requeueAfter: number }> {
    const r = this.store.get<ContainerSpec, ContainerStatus>(KIND.container, id);
    if (!r) return;
    if (r.spec.desired === 'removed') {
      await this.remove(id, ctx);
      return;
    }
    let requeue: number | undefined;
    try {
      requeue = await this.converge(id, r.generation, r.spec, ctx);
    } finally {
      // Whatever the steps staged, also when one of them threw: what happened is recorded.
      this.flushStatus(id);
    }
    const after = this.afterExit(id);
    if (after !== undefined) requeue = requeue === undefined ? after : Math.min(requeue, after);
    return requeue === undefined ? undefined : { requeueAfter: requeue };
  }

  /** The steps of one reconcile; their status changes are staged and written once, at the end. */
  private async converge(id: string, gen: number, spec: ContainerSpec, ctx: ReconcileContext): Promise<number | undefined> {
    if (!this.status(id).prepared) await this.prepare(id, spec);

    let run = this.runs.get(id);
    if (run?.exit) {
      await this.finishRun(id, run);
      run = undefined;
    }
    if (!run) {
      const phase = this.status(id).phase;
      if (phase === 'running' || phase === 'paused') await this.recoverOrphan(id, ctx);
    }

    let requeue: number | undefined;
    if (this.status(id).restartOnBoot && !this.runs.get(id)) {
      this.stageStatus(id, (x) => ({ ...x, restartOnBoot: false }));
      if (wantsRestartOnBoot(this.store.get<ContainerSpec, ContainerStatus>(KIND.container, id)!.spec)) await this.startRun(id, ctx);
    }
    const s = this.status(id);
    if (spec.kill.seq > s.killSeq) {
      if (run && !run.exit) await this.signal(id, parseSignal(spec.kill.signal, 'SIGKILL'));
      this.stageStatus(id, (st) => ({ ...st, killSeq: spec.kill.seq }));
    }
    if (spec.stop.seq > this.status(id).stopSeq) {
      const cur = this.runs.get(id);
      if (cur) await this.stopRun(id, cur, spec);
      this.stageStatus(id, (st) => ({ ...st, stopSeq: spec.stop.seq, phase: st.phase === 'restarting' ? 'exited' : st.phase }));
    }
    if (spec.startSeq > this.status(id).startSeq) {
      if (!this.runs.get(id)) await this.startRun(id, ctx);
      this.stageStatus(id, (st) => ({ ...st, startSeq: spec.startSeq }));
    } else if (this.status(id).phase === 'restarting' && !this.runs.get(id)) {
      requeue = await this.restartIfDue(id, ctx);
    }

    const cur = this.runs.get(id);
    const st = this.status(id);
    if (cur && !cur.exit) {
      if (spec.desired === 'paused' && st.phase === 'running') {
        await this.deps.supervisor.pause(id);
        this.stageStatus(id, (x) => ({ ...x, phase: 'paused' }));
      } else if (spec.desired !== 'paused' && st.phase === 'paused') {
        await this.deps.supervisor.resume(id);
        this.stageStatus(id, (x) => ({ ...x, phase: 'running' }));
      }
    }

    this.stageStatus(id, (x) => ({ ...x, observedGeneration: Math.max(x.observedGeneration, gen) }));
    return requeue;
  }

  /** Stop every running container (daemon shutdown), each within its stop timeout capped at `timeoutS`. */
  async shutdown(timeoutS: number): Promise<void> {
    await Promise.all(
      this.runs.ids().map(async (id) => {
        const run = this.runs.get(id);
        const r = this.store.get<ContainerSpec, ContainerStatus>(KIND.container, id);
        if (!run || !r) return;
        try {
          if (!run.exit) await this.stopProcess(id, run, r.spec.config.StopSignal, Math.min(timeoutS, r.spec.config.StopTimeout ?? 10));
          await this.finishRun(id, run);
          this.lastRunMs.delete(id);
          if (wantsRestartOnBoot(r.spec)) this.setStatus(id, (s) => ({ ...s, restartOnBoot: true }));
        } catch (err) {
          this.deps.log.warn({ err, id }, 'stopping container at shutdown failed');
        }
      }),
    );
  }

  // ---- steps ------------------------------------------------------------------------------

  /**
   * Status changes a reconcile has made but not yet written. A reconcile's steps stage theirs and
   * the reconcile writes them in one store transaction when it ends (each write is a SQLite commit
   * and wakes every watcher); setStatus writes at once what others must see without waiting
   * (an exit, a removal). Keys are never reconciled concurrently, so one entry per id suffices.
   */
  private readonly staged = new Map<string, (s: ContainerStatus) => ContainerStatus>();

  /** The status as this reconciler sees it: the store's, with the staged changes applied. */
  private status(id: string): ContainerStatus {
    const s = this.store.get<ContainerSpec, ContainerStatus>(KIND.container, id)!.status;
    const fn = this.staged.get(id);
    return fn ? fn(s) : s;
  }

  private stageStatus(id: string, fn: (s: ContainerStatus) => ContainerStatus): void {
    const prev = this.staged.get(id);
    this.staged.set(id, prev ? (s) => fn(prev(s)) : fn);
  }

  private flushStatus(id: string): void {
    const fn = this.staged.get(id);
    if (!fn) return;
    this.staged.delete(id);
    if (this.store.get(KIND.container, id)) this.store.updateStatus<ContainerSpec, ContainerStatus>(KIND.container, id, fn);
  }

  /** Written now, together with anything staged before it. */
  private setStatus(id: string, fn: (s: ContainerStatus) => ContainerStatus): void {
    this.stageStatus(id, fn);
    this.flushStatus(id);
  }

  private containerDir(id: string): string {
    return join(this.deps.dataRoot, 'containers', id);
  }

  private fifoDir(id: string): string {
    return join(this.deps.execRoot, 'supervisor', id);
  }

  /** Create step: the container's directory, /etc files and read-write layer. */
  private async prepare(id: string, spec: ContainerSpec): Promise<void> {
    const dir = this.containerDir(id);
    mkdirSync(dir, { recursive: true, mode: 0o710 });
    const files = await this.deps.spec.writeEtcFiles(dir, spec.config, spec.hostConfig);
    const ep = await this.deps.network?.allocate(id, spec.hostConfig.NetworkMode);
    if (ep) appendFileSync(files.hosts, `${ep.IPAddress}\t${spec.config.Hostname}\n`);
    const image = this.store.get<ImageSpec, ImageStatus>(KIND.image, spec.imageId);
    await this.deps.layers.createRW(id, image?.spec.chainId ?? null);
    this.stageStatus(id, (s) => ({
      ...s,
      prepared: true,
      endpoint: ep ?? null,
      logPath: spec.hostConfig.LogConfig.Type === 'none' ? '' : join(dir, `${id}-json.log`),
      hostnamePath: files.hostname,
      hostsPath: files.hosts,
      resolvConfPath: files.resolvConf,
      driver: this.deps.layers.driverName,
    }));
  }

  private async startRun(id: string, ctx: ReconcileContext): Promise<void> {
    const spec = this.store.get<ContainerSpec, ContainerStatus>(KIND.container, id)!.spec;
    const status = this.status(id);
    if (!nextPhase(status.phase, 'START')) return;
    const sup = this.deps.supervisor;
    let io: ProcessIOLike | undefined;
    let logger: LoggerLike | null = null;
    let created = false;
    let creating: Promise<boolean> | undefined;
    try {
      const rootfs = await this.deps.layers.mountRW(id);
      const oci = await this.deps.spec.build({
        id,
        config: spec.config,
        hostConfig: spec.hostConfig,
        path: spec.path,
        args: spec.args,
        rootfs,
        imageEnv: [],
        files: { hostname: status.hostnamePath, hosts: status.hostsPath, resolvConf: status.resolvConfPath },
        cgroupsPath: `${this.deps.cgroupParent}/${id}`,
      });
      const mode = spec.hostConfig.NetworkMode;
      if (mode.startsWith('container:')) this.joinNetworkOf(oci as Record<string, unknown>, mode.slice('container:'.length));
      const runtime = this.deps.runtimes.resolve(spec.hostConfig.Runtime);
      this.supervisorClean.delete(id);
      // The supervisor's record is created while the FIFOs and the log file are prepared here.
      const record = this.createRecord(id, { id, spec: oci, runtime, labels: { 'engine/container': 'true' } });
      creating = record.then(() => true, () => false);
      io = await this.deps.stdio.open({ dir: this.fifoDir(id), procId: 'init', stdin: !!spec.config.OpenStdin, tty: !!spec.config.Tty });
      const taskCreated = Promise.withResolvers<void>();
      taskCreated.promise.catch(() => {});
      const hub = withCloseIO(this.deps.stdio.hub(io), () => sup.closeIO(id, undefined), taskCreated.promise);
      this.runs.announce(id, hub, (err) => ctx.log.warn({ err }, 'attach watcher failed'));
      if (status.logPath) {
        logger = this.deps.logging.open(id, status.logPath, spec.hostConfig.LogConfig);
        if (logger) {
          const l = logger;
          hub.subscribe((stream, chunk) => l.log(stream, chunk));
        }
      }
      await record;
      created = true;
      const task = await sup.createTask({ containerId: id, stdin: io.paths.stdin, stdout: io.paths.stdout, stderr: io.paths.stderr, terminal: !!spec.config.Tty }).catch((err) => {
        taskCreated.reject(err);
        throw err;
      });
      taskCreated.resolve();
      const ep = this.status(id).endpoint;
      if (ep && this.deps.network) await this.deps.network.attach(id, task.pid, ep);
      const run = this.runs.add(id, { io, hub, logger, pid: task.pid, startedAt: Date.now(), oci: oci as Run['oci'], rootfs });
      const { pid } = await sup.startTask(id);
      run.pid = pid;
      this.stageStatus(id, (s) => ({
        ...s,
        phase: 'running',
        pid,
        sandboxKey: mode === 'host' ? '' : `/proc/${pid}/ns/net`,
        startedAt: rfc3339Nano(),
        finishedAt: s.finishedAt || ZERO_TIME,
        exitCode: 0,
        error: '',
        errorCode: '',
        oomKilled: false,
      }));
    } catch (err) {
      this.runs.delete(id);
      io?.close();
      await logger?.close().catch(() => {});
      if (!created && creating) created = await creating;
      if (created) await this.clearSupervisor(id);
      await this.deps.layers.unmountRW(id).catch(() => {});
      const message = err instanceof Error ? err.message : String(err);
      const exitCode = runtimeExitCode(message);
      ctx.log.info({ err: message }, 'container start failed');
      this.stageStatus(id, (s) => ({
        ...s,
        error: message,
        errorCode: exitCode !== null ? 'InvalidArgument' : errorCode(err),
        exitCode: exitCode ?? 128,
        pid: 0,
      }));
    }
  }

  /**
   * The supervisor's container record. One left behind by a crash between steps (the id is
   * ours, so it is recognised) is cleared with its task and created anew.
   */
  private async createRecord(id: string, req: Parameters<ContainerReconcilerDeps['supervisor']['createContainer']>[0]): Promise<void> {
    try {
      await this.deps.supervisor.createContainer(req);
    } catch (err) {
      if (!isCode(err, 'AlreadyExists')) throw err;
      await this.clearSupervisor(id);
      await this.deps.supervisor.createContainer(req);
    }
  }

  private async signal(id: string, sig: number): Promise<void> {
    try {
      await this.deps.supervisor.killTask(id, sig);
    } catch (err) {
      if (!isCode(err, 'NotFound')) throw err;
    }
  }

  private async stopRun(id: string, run: Run, spec: ContainerSpec): Promise<void> {
    if (!run.exit) {
      const timeout = spec.stop.timeout ?? spec.config.StopTimeout ?? 10;
      await this.stopProcess(id, run, spec.stop.signal || spec.config.StopSignal, timeout);
    }
    await this.finishRun(id, run);
  }

  /** Stop signal, up to `timeoutS` seconds (negative: forever), then SIGKILL. */
  private async stopProcess(id: string, run: Run, stopSignal: string | undefined, timeoutS: number): Promise<void> {
    if (this.status(id).phase === 'paused') {
      await this.deps.supervisor.resume(id).catch(() => {});
    }
    await this.signal(id, parseSignal(stopSignal, 'SIGTERM'));
    if (timeoutS >= 0) {
      const done = await Promise.race([run.exited.then(() => true), sleep(timeoutS * 1000).then(() => false)]);
      if (done) return;
      await this.deps.supervisor.killTask(id, 9, { all: true }).catch((err) => {
        if (!isCode(err, 'NotFound')) throw err;
      });
    }
    await Promise.race([run.exited, sleep(30_000)]);
  }

  /** Collect an exited run: exit code, drain output, unmount, record exited. */
  private async finishRun(id: string, run: Run): Promise<void> {
    const exit = run.exit ?? (await run.exited);
    const exitStatus = exit.exitStatus;
    const exitedAt = exit.exitedAt;
    // The task's deletion (the shim's teardown, the slow part) runs beside the output drain and
    // the network cleanup. The exit is published once the output is in the log (a `logs` right
    // after `wait` sees all of it), before the teardown ends: this reconcile still holds the key,
    // so a start or remove that follows waits for the rest. Once the task is gone its root
    // filesystem is unmounted while the supervisor's record goes.
    const task = (async () => {
      try {
        await this.deps.supervisor.deleteTask(id);
      } catch (err) {
        if (!isCode(err, 'NotFound')) this.deps.log.warn({ err, id }, 'delete task failed');
      }
      const [gone] = await Promise.all([
        this.deleteRecord(id),
        this.deps.layers.unmountRW(id).catch((err) => this.deps.log.warn({ err, id }, 'unmount failed')),
      ]);
      if (gone) this.supervisorClean.add(id);
    })();
    const net = this.deps.network?.detach(id).catch((err) => this.deps.log.warn({ err, id }, 'network detach failed'));
    await within(run.hub.ended, 2000);
    this.runs.stopWatching(run);
    run.io.close();
    await run.logger?.close().catch(() => {});
    const ranMs = Date.now() - run.startedAt;
    this.setStatus(id, (s) => ({
      ...s,
      phase: 'exited',
      pid: 0,
      exitCode: exitStatus,
      oomKilled: run.oom,
      finishedAt: rfc3339Nano(exitedAt ?? new Date()),
      exitSeq: s.exitSeq + 1,
    }));
    await Promise.all([task, net, this.deps.stdio.remove(this.fifoDir(id), 'init').catch(() => {})]);
    this.runs.delete(id, run);
    this.lastRunMs.set(id, ranMs);
  }

  private readonly lastRunMs = new Map<string, number>();
  private readonly restartDelay = new Map<string, { delay: number; at: number }>();

  /** After an exit: auto-remove, or schedule a restart per policy. Returns a requeue delay. */
  private afterExit(id: string): number | undefined {
    const r = this.store.get<ContainerSpec, ContainerStatus>(KIND.container, id);
    if (!r || r.status.phase !== 'exited' || this.runs.get(id)) return undefined;
    const ranMs = this.lastRunMs.get(id);
    if (ranMs === undefined) return undefined;
    this.lastRunMs.delete(id);
    const decision = decideRestart(r.spec.hostConfig.RestartPolicy, r.status.exitCode, r.status.restartCount, r.spec.manuallyStopped);
    if (decision) {
      const prev = this.restartDelay.get(id);
      const delay = ranMs >= 10_000 || !prev ? 100 : Math.min(prev.delay * 2, 60_000);
      this.restartDelay.set(id, { delay, at: Date.now() + delay });
      this.setStatus(id, (s) => ({ ...s, phase: 'restarting' }));
      return delay;
    }
    this.restartDelay.delete(id);
    if (r.spec.hostConfig.AutoRemove) {
      this.store.updateSpec<ContainerSpec, ContainerStatus>(KIND.container, id, (sp) => ({ ...sp, desired: 'removed', remove: { force: true, volumes: true } }));
    }
    return undefined;
  }

  private async restartIfDue(id: string, ctx: ReconcileContext): Promise<number | undefined> {
    const r = this.store.get<ContainerSpec, ContainerStatus>(KIND.container, id)!;
    if (r.spec.manuallyStopped || r.spec.desired === 'stopped') {
      this.setStatus(id, (s) => ({ ...s, phase: 'exited' }));
      return undefined;
    }
    const due = this.restartDelay.get(id);
    if (due && due.at > Date.now()) return due.at - Date.now();
    this.setStatus(id, (s) => ({ ...s, phase: 'exited', restartCount: s.restartCount + 1 }));
    await this.startRun(id, ctx);
    return undefined;
  }

  /** The record says running but this process has no handle (daemon restarted): settle it. */
  private async recoverOrphan(id: string, ctx: ReconcileContext): Promise<void> {
    const sup = this.deps.supervisor;
    let exitStatus = 255;
    let exitedAt: Date | null = null;
    try {
      const task = await sup.getTask(id);
      if (task.status !== 'STOPPED') {
        ctx.log.info('stopping container left running by a previous daemon');
        const waiting = sup.waitTask(id).catch(() => null);
        await sup.killTask(id, 15).catch(() => {});
        const res = await Promise.race([waiting, sleep(10_000).then(() => null)]);
        if (!res) {
          await sup.killTask(id, 9, { all: true }).catch(() => {});
          await Promise.race([waiting, sleep(10_000)]);
        }
      }
      const d = await sup.deleteTask(id);
      exitStatus = d.exitStatus;
      exitedAt = d.exitedAt;
    } catch (err) {
      if (!isCode(err, 'NotFound')) ctx.log.warn({ err }, 'recovering task failed');
    }
    await sup.deleteContainer(id).catch(() => {});
    await this.deps.network?.detach(id).catch(() => {});
    await this.deps.layers.unmountRW(id).catch(() => {});
    const spec = this.store.get<ContainerSpec, ContainerStatus>(KIND.container, id)!.spec;
    this.setStatus(id, (s) => ({
      ...s,
      restartOnBoot: wantsRestartOnBoot(spec),
      phase: 'exited',
      pid: 0,
      exitCode: exitStatus,
      finishedAt: rfc3339Nano(exitedAt ?? new Date()),
      exitSeq: s.exitSeq + 1,
    }));
  }

  /** `--network container:<id>`: share the other container's network namespace. */
  private joinNetworkOf(oci: Record<string, unknown>, ref: string): void {
    const others = this.store.list<ContainerSpec, ContainerStatus>(KIND.container);
    const other = others.find((c) => c.name === ref || c.spec.name === `/${ref}` || c.spec.name === ref) ?? others.filter((c) => c.name.startsWith(ref)).at(0);
    const run = other ? this.runs.get(other.name) : undefined;
    if (!other || !run || run.exit) throw conflict(`cannot join network of a non running container: ${ref}`);
    const linux = (oci.linux ?? {}) as { namespaces?: Array<{ type: string; path?: string }> };
    const ns = (linux.namespaces ?? []).filter((n) => n.type !== 'network');
    ns.push({ type: 'network', path: `/proc/${run.pid}/ns/net` });
    linux.namespaces = ns;
    oci.linux = linux;
  }

  /**
   * Ids the supervisor holds nothing for, as far as this process knows: their task and record
   * were deleted here. A removal skips the probe for leftovers (two round trips) for them.
   */
  private readonly supervisorClean = new Set<string>();

  /** Remove whatever the supervisor still holds under this id (a crash between steps). */
  private async clearSupervisor(id: string): Promise<void> {
    const sup = this.deps.supervisor;
    try {
      const t = await sup.getTask(id);
      if (t.status !== 'STOPPED' && t.status !== 'CREATED') {
        await sup.killTask(id, 9, { all: true }).catch(() => {});
        await Promise.race([sup.waitTask(id).catch(() => null), sleep(5000)]);
      }
      await sup.deleteTask(id).catch(() => {});
    } catch {
      // no task
    }
    if (await this.deleteRecord(id)) this.supervisorClean.add(id);
  }

  /** Delete the supervisor's container record; true when it is gone (the supervisor refuses while a task exists). */
  private async deleteRecord(id: string): Promise<boolean> {
    try {
      await this.deps.supervisor.deleteContainer(id);
      return true;
    } catch (err) {
      return isCode(err, 'NotFound');
    }
  }

  /**
   * The container's directory: a few files, unlinked side by side then the directory (what
   * fs.promises.rm does one lstat, unlink or rmdir at a time, twice the round trips). All
   * asynchronously: freeing their blocks can wait on the disk.
   */
  private async removeContainerDir(id: string): Promise<void> {
    const dir = this.containerDir(id);
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw err;
    }
    await Promise.all(
      names.map((n) =>
        unlink(join(dir, n)).catch((err: NodeJS.ErrnoException) => {
          if (err.code === 'EISDIR' || err.code === 'EPERM') return rm(join(dir, n), { recursive: true, force: true });
          if (err.code !== 'ENOENT') throw err;
        }),
      ),
    );
    await rmdir(dir).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOTEMPTY' || err.code === 'EEXIST') return rm(dir, { recursive: true, force: true });
      if (err.code !== 'ENOENT') throw err;
    });
  }

  private async remove(id: string, ctx: ReconcileContext): Promise<void> {
    const run = this.runs.get(id);
    if (run) {
      if (!run.exit) {
        await this.signal(id, 9);
        await Promise.race([run.exited, sleep(15_000)]);
      }
      await this.finishRun(id, run);
    } else if (!this.supervisorClean.has(id)) {
      await this.clearSupervisor(id);
    }
    this.setStatus(id, (s) => ({ ...s, phase: 'removing' }));
    const network = this.deps.network;
    await Promise.all([
      network ? network.detach(id).catch(() => {}).then(() => network.release(id)) : undefined,
      this.deps.layers.removeRW(id),
      this.removeContainerDir(id),
    ]);
    // Normally gone with the run's FIFOs already: one lstat.
    rmSync(this.fifoDir(id), { recursive: true, force: true });
    this.restartDelay.delete(id);
    this.lastRunMs.delete(id);
    this.supervisorClean.delete(id);
    this.staged.delete(id);
    this.store.delete(KIND.container, id);
    if (this.deps.log.isLevelEnabled?.('debug') ?? true) ctx.log.debug('container removed');
  }
}

/** A hub whose closeStdin also tells the supervisor, so the process sees EOF. */
export function withCloseIO(hub: HubLike, closeIO: () => Promise<void>, ready: Promise<unknown> = Promise.resolve()): HubLike {
  let closed = false;
  return {
    subscribe: (fn, onEnd) => hub.subscribe(fn, onEnd),
    ended: hub.ended,
    writeStdin: (buf) => hub.writeStdin(buf),
    closeStdin: () => {
      if (closed) return;
      closed = true;
      // Until the shim holds the FIFO, ours is its only open end: closing it would drop bytes
      // already written (stdin piped to `run -i` ends before the task exists).
      ready.then(
        () => {
          hub.closeStdin();
          closeIO().catch(() => {});
        },
        () => hub.closeStdin(),
      );
    },
  };
}

/** Containers the daemon (not the user) stopped come back at the next start when their policy says so. */
function wantsRestartOnBoot(spec: ContainerSpec): boolean {
  const p = spec.hostConfig.RestartPolicy?.Name ?? '';
  return !spec.manuallyStopped && spec.desired !== 'stopped' && spec.desired !== 'removed' && (p === 'always' || p === 'unless-stopped');
}

/** 127 when the command was not found, 126 when it could not be executed, else null. */
function runtimeExitCode(message: string): 126 | 127 | null {
  if (/executable file not found|no such file or directory/i.test(message)) return 127;
  if (/permission denied|not a directory|is a directory/i.test(message)) return 126;
  return null;
}

export type { C as ContainerResource };

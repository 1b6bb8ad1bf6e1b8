// Exec reconciler: each exec record's process started when its spec asks (the lifecycle machine of
// ./machine.ts on the machine host; its `startProcess` effect opens the stdio, creates and starts
// the process in the container's task), its exit recorded once observed (./processes.ts), and the
// record deleted when it can no longer matter: its container gone, a created exec whose container
// no longer runs, an exec that ended GC_AFTER_MS ago (a requeue, no timer of its own), or a
// healthcheck probe as soon as it ended.
import { join } from 'node:path';
import type { Logger } from 'pino';
import { fromPromise, type SnapshotFrom } from 'xstate';
import { isUnreachable } from '../../lib/errors.ts';
import { TerminalError, type ReconcileContext, type ReconcileResult } from '../../controllers/controller.ts';
import { topState } from '../../controllers/machine-driver.ts';
import { MachineHost, type Held } from '../../controllers/machine-host.ts';
import { isRunning as containerRunning, Containers } from '../../store/kinds/container.ts';
import { Execs, type ExecResource, type ExecStatus } from '../../store/kinds/exec.ts';
import type { ReconcilerStore } from '../store-like.ts';
import { withCloseIO } from '../container/close-io.ts';
import type { StdioPort, SupervisorPort } from '../container/deps.ts';
import { execLifecycle, type ExecEffectInput, type ExecEvent, type ExecStartOutput, type ExecState } from './machine.ts';
import type { ExecProcesses } from './processes.ts';

type Machine = ReturnType<typeof execLifecycle.provide>;
type Snapshot = SnapshotFrom<Machine>;

/** How long an exec that ended stays to be inspected. */
export const GC_AFTER_MS = 5 * 60_000;

export interface ExecHost {
  runInfo(containerId: string): { pid: number; oci: { process?: Record<string, unknown> }; rootfs: string } | undefined;
}

export interface ExecReconcilerDeps {
  supervisor: SupervisorPort;
  stdio: StdioPort;
  host: ExecHost;
  processes: ExecProcesses;
  execRoot: string;
  log: Logger;
  /** uid/gid for a user spec inside the container's rootfs (InvalidArgument when unknown). */
  resolveUser: (rootfs: string, user: string) => Promise<{ uid: number; gid: number; additionalGids?: number[] }>;
}

const ALL_CAPS = [
  'CAP_CHOWN', 'CAP_DAC_OVERRIDE', 'CAP_DAC_READ_SEARCH', 'CAP_FOWNER', 'CAP_FSETID', 'CAP_KILL', 'CAP_SETGID', 'CAP_SETUID',
  'CAP_SETPCAP', 'CAP_LINUX_IMMUTABLE', 'CAP_NET_BIND_SERVICE', 'CAP_NET_BROADCAST', 'CAP_NET_ADMIN', 'CAP_NET_RAW',
  'CAP_IPC_LOCK', 'CAP_IPC_OWNER', 'CAP_SYS_MODULE', 'CAP_SYS_RAWIO', 'CAP_SYS_CHROOT', 'CAP_SYS_PTRACE', 'CAP_SYS_PACCT',
  'CAP_SYS_ADMIN', 'CAP_SYS_BOOT', 'CAP_SYS_NICE', 'CAP_SYS_RESOURCE', 'CAP_SYS_TIME', 'CAP_SYS_TTY_CONFIG', 'CAP_MKNOD',
  'CAP_LEASE', 'CAP_AUDIT_WRITE', 'CAP_AUDIT_CONTROL', 'CAP_SETFCAP', 'CAP_MAC_OVERRIDE', 'CAP_MAC_ADMIN', 'CAP_SYSLOG',
  'CAP_WAKE_ALARM', 'CAP_BLOCK_SUSPEND', 'CAP_AUDIT_READ', 'CAP_PERFMON', 'CAP_BPF', 'CAP_CHECKPOINT_RESTORE',
];

function mergeEnv(base: string[], extra: string[]): string[] {
  const out = new Map<string, string>();
  for (const e of [...base, ...extra]) {
    const i = e.indexOf('=');
    out.set(i < 0 ? e : e.slice(0, i), e);
  }
  return [...out.values()];
}

export class ExecReconciler {
  readonly name = 'exec';
  readonly kind = Execs.name;
  private readonly store: ReconcilerStore;
  private readonly deps: ExecReconcilerDeps;
  private readonly machines: MachineHost<Machine>;

  constructor(store: ReconcilerStore, deps: ExecReconcilerDeps) {
    this.store = store;
    this.deps = deps;
    const machine = execLifecycle.provide({
      actors: {
        startProcess: fromPromise<ExecStartOutput, ExecEffectInput>(({ input }) => this.startProcess(input.id)),
      },
    });
    this.machines = new MachineHost(machine, { name: 'exec' });
  }

  /** Daemon shutdown: a start under way is aborted. */
  stop(): void {
    this.machines.stop();
  }

  async reconcile(id: string, ctx: ReconcileContext): Promise<ReconcileResult> {
    const r = this.store.get(Execs, id);
    if (!r) return this.forget(id);
    const c = this.store.get(Containers, r.spec.containerId);
    // Owned by its container: gone with it. A created exec of a container that stopped never runs.
    if (!c || (r.status.phase === 'created' && r.spec.desired === 'created' && !containerRunning(c.status))) return this.remove(id);
    if (r.spec.desired === 'started' && r.status.phase === 'created' && !this.deps.host.runInfo(r.spec.containerId)) {
      // Nothing to start it in, ever: the reason in status, no retry.
      this.writeStatus(r, { phase: 'exited', pid: 0, exitCode: 126, error: `container ${r.spec.containerId} is not running`, errorCode: 'Conflict', finishedAt: new Date().toISOString() });
      throw new TerminalError(`exec ${id}: container ${r.spec.containerId} is not running`);
    }
    const events: ExecEvent[] = [];
    if (r.spec.desired === 'started') events.push({ type: 'START' });
    const exitCode = this.deps.processes.exitOf(id);
    if (typeof exitCode === 'number') events.push({ type: 'EXITED', exitCode });
    const held = this.machines.current(id, () => this.restore(r));
    const pass = await this.machines.run(id, held, events, { signal: ctx.signal, now: Date.now });
    const state = topState(pass.snapshot) as ExecState;
    this.machines.keep(id, pass, state !== 'starting');
    const { pid, exitCode: code, error, errorCode } = pass.snapshot.context;
    const ended = state === 'exited';
    this.writeStatus(r, { phase: state, pid, exitCode: code, error, errorCode, finishedAt: ended ? r.status.finishedAt || new Date().toISOString() : '' });
    if (!ended) return undefined;
    if (r.spec.probe) return this.remove(id);
    const left = Date.parse(this.store.get(Execs, id)?.status.finishedAt ?? '') + GC_AFTER_MS - Date.now();
    if (left > 0) return { requeueAfter: left };
    return this.remove(id);
  }

  /** The machine of a settled exec, rebuilt from its status (a start cut off short ends as failed). */
  private restore(r: ExecResource): Held<Machine> {
    const s = r.status;
    const value = s.phase === 'starting' ? 'exited' : s.phase;
    const cut = s.phase === 'starting';
    const context = { id: r.name, pid: s.pid, exitCode: cut ? 126 : s.exitCode, error: cut ? 'the start was cut off' : s.error, errorCode: cut ? 'Unavailable' : s.errorCode };
    return { snapshot: this.machines.machine.resolveState({ value, context }) as Snapshot, timers: [] };
  }

  private writeStatus(r: ExecResource, patch: Omit<ExecStatus, 'observedGeneration'>): void {
    const next: ExecStatus = { observedGeneration: r.generation, ...patch };
    const cur = r.status;
    if ((Object.keys(next) as Array<keyof ExecStatus>).every((k) => cur[k] === next[k])) return;
    if (this.store.get(Execs, r.name)) this.store.updateStatus(Execs, r.name, () => next);
  }

  private remove(id: string): undefined {
    this.store.delete(Execs, id);
    return this.forget(id);
  }

  private forget(id: string): undefined {
    this.machines.forget(id);
    this.deps.processes.forget(id);
    return undefined;
  }

  /**
   * The `startProcess` effect: opens the exec's stdio, announces its hub, creates and starts the
   * process; on failure cleans up and throws (the machine exits with 126/127). Once the process
   * ends, its stdio is collected and the exit recorded in the process registry, which wakes the
   * reconciler.
   */
  private async startProcess(id: string): Promise<ExecStartOutput> {
    const r = this.store.get(Execs, id);
    if (!r?.spec.start) throw new Error(`exec ${id}: no start asked for`);
    const run = this.deps.host.runInfo(r.spec.containerId);
    if (!run) throw new Error(`container ${r.spec.containerId} is not running`);
    const { containerId, config } = r.spec;
    const { tty, consoleSize } = r.spec.start;
    const sup = this.deps.supervisor;
    const dir = join(this.deps.execRoot, 'supervisor', containerId);
    let io;
    try {
      const base = (run.oci.process ?? {}) as Record<string, unknown>;
      const user = config.User ? await this.deps.resolveUser(run.rootfs, config.User) : base.user;
      const caps = config.Privileged ? { bounding: ALL_CAPS, effective: ALL_CAPS, permitted: ALL_CAPS } : base.capabilities;
      const env = mergeEnv((base.env as string[]) ?? [], config.Env);
      if (tty && !env.some((e) => e.startsWith('TERM='))) env.push('TERM=xterm');
      const size = consoleSize ?? config.ConsoleSize;
      const process = {
        ...base,
        terminal: tty,
        args: config.Cmd,
        env,
        cwd: config.WorkingDir || (base.cwd as string) || '/',
        user,
        capabilities: caps,
        ...(size && size[0] && size[1] ? { consoleSize: { height: size[0], width: size[1] } } : { consoleSize: undefined }),
      };
      io = await this.deps.stdio.open({ dir, procId: id, stdin: config.AttachStdin, tty });
      // The shim opens an exec's stdin FIFO only when the process starts: a stdin EOF passed on
      // before that is lost, with what was written ahead of it, and the process never ends.
      const procStarted = Promise.withResolvers<void>();
      procStarted.promise.catch(() => {});
      const hub = withCloseIO(this.deps.stdio.hub(io), () => sup.closeIO(containerId, id), procStarted.promise);
      this.deps.processes.add(id, hub);
      await sup
        .execProcess({ containerId, execId: id, spec: process, stdin: io.paths.stdin, stdout: io.paths.stdout, stderr: io.paths.stderr, terminal: tty })
        .catch((err) => {
          procStarted.reject(err);
          throw err;
        });
      const waiting = sup.waitTask(containerId, id);
      waiting.catch(() => {});
      const { pid } = await sup.startProcess(containerId, id).catch((err) => {
        procStarted.reject(err);
        throw err;
      });
      procStarted.resolve();
      const openIo = io;
      void (async () => {
        const code = await exitOf(waiting, () => sup.waitTask(containerId, id), (err) => this.deps.log.debug({ err, exec: id }, 'exec wait failed'));
        await Promise.race([hub.ended, new Promise((res) => setTimeout(res, 2000).unref())]);
        await sup.deleteProcess(containerId, id).catch(() => {});
        openIo.close();
        await this.deps.stdio.remove(dir, id).catch(() => {});
        this.deps.processes.exited(id, code);
      })();
      return { pid };
    } catch (err) {
      io?.close();
      await sup.deleteProcess(containerId, id).catch(() => {});
      await this.deps.stdio.remove(dir, id).catch(() => {});
      throw err;
    }
  }
}

/** How long an exec's wait is asked again while the supervisor is out of reach (restarting). */
const REWAIT_WINDOW_MS = 60_000;
const REWAIT_EVERY_MS = 500;

/**
 * The exit status of an exec, from its first wait and, when the supervisor dropped it (killed
 * and restarted: the process runs on under its shim, which keeps its exit), from asking again
 * until it is back; 137 when it cannot be known.
 */
export async function exitOf(first: Promise<{ exitStatus: number }>, again: () => Promise<{ exitStatus: number }>, failed: (err: unknown) => void): Promise<number> {
  const until = Date.now() + REWAIT_WINDOW_MS;
  for (let wait = first; ; wait = again()) {
    try {
      return (await wait).exitStatus;
    } catch (err) {
      if (!isUnreachable(err) || Date.now() > until) {
        failed(err);
        return 137;
      }
    }
    await new Promise((r) => setTimeout(r, REWAIT_EVERY_MS).unref());
  }
}

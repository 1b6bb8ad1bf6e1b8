// Exec instances: processes started inside a running container. They are not desired state
// (the reference daemon forgets them at restart too), so they live in memory, owned by their
// container, and are collected a while after they finish. Each one's lifecycle is the machine in
// exec-machine.ts: this keeps its snapshot, steps it, and provides its start effect.
import { join } from 'node:path';
import type { Logger } from 'pino';
import { fromPromise, initialTransition, toPromise, type SnapshotFrom } from 'xstate';
import { effectActor, step } from '../../controllers/machine-driver.ts';
import { conflict, notFound, unavailable } from '../../lib/errors.ts';
import { newId } from '../../lib/ids.ts';
import type { HubLike, StdioPort, SupervisorPort } from './deps.ts';
import { execLifecycle, type ExecEffectInput, type ExecEvent, type ExecStartOutput, type ExecState } from './exec-machine.ts';
import { withCloseIO } from './close-io.ts';

export interface ExecConfig {
  User: string;
  Privileged: boolean;
  Tty: boolean;
  AttachStdin: boolean;
  AttachStdout: boolean;
  AttachStderr: boolean;
  DetachKeys: string;
  Env: string[];
  WorkingDir: string;
  Cmd: string[];
  ConsoleSize?: [number, number] | null;
}

type ExecMachine = ReturnType<typeof execLifecycle.provide>;
type ExecSnapshot = SnapshotFrom<ExecMachine>;

interface ExecRecord {
  id: string;
  containerId: string;
  config: ExecConfig;
  /** The lifecycle machine's snapshot: state, pid and exit code. */
  snapshot: ExecSnapshot;
  /** When it reached `exited` (epoch ms), for the GC; 0 before. */
  finishedAt: number;
}

type RunInfo = NonNullable<ReturnType<ExecHost['runInfo']>>;

/** What `start()` hands its effect: the run it starts in, the caller's options; the effect adds the exit. */
interface StartRequest {
  run: RunInfo;
  opts: { tty: boolean; consoleSize?: [number, number] | null };
  onHub?: (hub: HubLike) => void;
  /** Resolves with the exit code once the process ended and its stdio and record are gone. */
  exited?: Promise<number>;
}

function stateOf(ex: ExecRecord): ExecState {
  return ex.snapshot.value as ExecState;
}

/** Running for inspect, idsOf and resize: from START on (as the start claims it) until the exit. */
function isRunning(ex: ExecRecord): boolean {
  const s = stateOf(ex);
  return s === 'starting' || s === 'running';
}

export interface ExecHost {
  runInfo(containerId: string): { pid: number; oci: { process?: Record<string, unknown> }; rootfs: string } | undefined;
}

export interface ExecDeps {
  supervisor: SupervisorPort;
  stdio: StdioPort;
  host: ExecHost;
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

const GC_AFTER_MS = 5 * 60_000;
/** How long a resize waits for an exec that is starting (the reference's 10 s). */
const RESIZE_WAIT_MS = 10_000;

export class ExecManager {
  private readonly execs = new Map<string, ExecRecord>();
  private readonly deps: ExecDeps;
  private readonly machine: ExecMachine;
  /** The start in flight per exec, for its effect (an exec starts at most once). */
  private readonly starts = new Map<string, StartRequest>();
  /** Settles when the start in flight has its process running (or failed): a resize waits for it. */
  private readonly starting = new Map<string, Promise<void>>();

  constructor(deps: ExecDeps) {
    this.deps = deps;
    this.machine = execLifecycle.provide({
      actors: {
        startProcess: fromPromise<ExecStartOutput, ExecEffectInput>(({ input }) => this.startEffect(input.id)),
      },
    });
    setInterval(() => this.collect(), 60_000).unref();
  }

  create(containerId: string, config: ExecConfig): string {
    if (!this.deps.host.runInfo(containerId)) throw conflict(`container ${containerId} is not running`);
    const id = newId();
    const [snapshot] = initialTransition(this.machine, { id });
    this.execs.set(id, { id, containerId, config, snapshot, finishedAt: 0 });
    return id;
  }

  private get(id: string): ExecRecord {
    const ex = this.execs.get(id);
    if (!ex) throw notFound(`No such exec instance: ${id}`);
    return ex;
  }

  /** One transition of the exec's machine; the effects it asks for (started by the caller). */
  private advance(ex: ExecRecord, event: ExecEvent | { type: string }) {
    const r = step(this.machine, ex.snapshot, event as ExecEvent, [], Date.now());
    ex.snapshot = r.snapshot;
    if (stateOf(ex) === 'exited' && !ex.finishedAt) ex.finishedAt = Date.now();
    return r.effects;
  }

  inspect(id: string) {
    const ex = this.get(id);
    const [entrypoint, ...args] = ex.config.Cmd;
    const { pid, exitCode } = ex.snapshot.context;
    return {
      ID: ex.id,
      Running: isRunning(ex),
      ExitCode: exitCode,
      ProcessConfig: { tty: ex.config.Tty, entrypoint, arguments: args, privileged: ex.config.Privileged, user: ex.config.User },
      OpenStdin: ex.config.AttachStdin,
      OpenStderr: ex.config.AttachStderr,
      OpenStdout: ex.config.AttachStdout,
      CanRemove: false,
      ContainerID: ex.containerId,
      DetachKeys: ex.config.DetachKeys,
      Pid: pid,
    };
  }

  /** Execs of a container that are still running (inspect's ExecIDs). */
  idsOf(containerId: string): string[] {
    return [...this.execs.values()].filter((e) => e.containerId === containerId && isRunning(e)).map((e) => e.id);
  }

  async start(id: string, opts: { tty: boolean; consoleSize?: [number, number] | null }, onHub?: (hub: HubLike) => void): Promise<{ exited: Promise<number> }> {
    const ex = this.get(id);
    // Only a created exec accepts START; the state says why another is refused.
    if (!ex.snapshot.can({ type: 'START' })) throw conflict(stateOf(ex) === 'exited' ? `exec command ${id} has already run` : `exec command ${id} is already running`);
    const run = this.deps.host.runInfo(ex.containerId);
    if (!run) throw conflict(`container ${ex.containerId} is not running`);
    const req: StartRequest = { run, opts, onHub };
    let settle = () => {};
    this.starting.set(id, new Promise<void>((r) => (settle = r)));
    try {
      this.starts.set(id, req);
      // Claimed before the first await: a concurrent start now finds it starting.
      const effects = this.advance(ex, { type: 'START' });
      const effect = effects.find((e) => e.src === 'startProcess');
      if (!effect) throw new Error(`exec ${id}: START did not start the process (state ${stateOf(ex)})`);
      let output: ExecStartOutput;
      try {
        const actor = effectActor(effect);
        actor.start();
        output = (await toPromise(actor)) as ExecStartOutput;
      } catch (error) {
        this.advance(ex, { type: `xstate.error.actor.${effect.id}`, error } as { type: string });
        throw error;
      }
      this.advance(ex, { type: `xstate.done.actor.${effect.id}`, output } as { type: string });
      const ended = req.exited!;
      const exited = ended.then((code) => {
        this.advance(ex, { type: 'EXITED', exitCode: code });
        return code;
      });
      return { exited };
    } finally {
      this.starts.delete(id);
      this.starting.delete(id);
      settle();
    }
  }

  /**
   * The machine's `startProcess` effect: opens the exec's stdio, creates and starts the process;
   * on failure cleans up and throws (the machine exits with 126/127). Leaves in the request the
   * promise of the exit code, which cleans up after the process once it ends.
   */
  private async startEffect(id: string): Promise<ExecStartOutput> {
    const ex = this.get(id);
    const req = this.starts.get(id);
    if (!req) throw new Error(`exec ${id}: start effect outside a start`);
    const { run, opts, onHub } = req;
    const sup = this.deps.supervisor;
    const dir = join(this.deps.execRoot, 'supervisor', ex.containerId);
    const tty = opts.tty;
    let io;
    try {
      const base = (run.oci.process ?? {}) as Record<string, unknown>;
      const user = ex.config.User ? await this.deps.resolveUser(run.rootfs, ex.config.User) : base.user;
      const caps = ex.config.Privileged
        ? { bounding: ALL_CAPS, effective: ALL_CAPS, permitted: ALL_CAPS }
        : base.capabilities;
      const env = mergeEnv((base.env as string[]) ?? [], ex.config.Env);
      if (tty && !env.some((e) => e.startsWith('TERM='))) env.push('TERM=xterm');
      const size = opts.consoleSize ?? ex.config.ConsoleSize;
      const process = {
        ...base,
        terminal: tty,
        args: ex.config.Cmd,
        env,
        cwd: ex.config.WorkingDir || (base.cwd as string) || '/',
        user,
        capabilities: caps,
        ...(size && size[0] && size[1] ? { consoleSize: { height: size[0], width: size[1] } } : { consoleSize: undefined }),
      };
      io = await this.deps.stdio.open({ dir, procId: id, stdin: ex.config.AttachStdin, tty });
      // The shim opens an exec's stdin FIFO only when the process starts: a stdin EOF passed on
      // before that is lost, with what was written ahead of it, and the process never ends.
      const procStarted = Promise.withResolvers<void>();
      procStarted.promise.catch(() => {});
      const hub = withCloseIO(this.deps.stdio.hub(io), () => sup.closeIO(ex.containerId, id), procStarted.promise);
      onHub?.(hub);
      await sup
        .execProcess({ containerId: ex.containerId, execId: id, spec: process, stdin: io.paths.stdin, stdout: io.paths.stdout, stderr: io.paths.stderr, terminal: tty })
        .catch((err) => {
          procStarted.reject(err);
          throw err;
        });
      const waiting = sup.waitTask(ex.containerId, id);
      waiting.catch(() => {});
      const { pid } = await sup.startProcess(ex.containerId, id).catch((err) => {
        procStarted.reject(err);
        throw err;
      });
      procStarted.resolve();
      const openIo = io;
      req.exited = (async () => {
        let code = 137;
        try {
          code = (await waiting).exitStatus;
        } catch (err) {
          this.deps.log.debug({ err, exec: id }, 'exec wait failed');
        }
        await Promise.race([hub.ended, new Promise((r) => setTimeout(r, 2000).unref())]);
        await sup.deleteProcess(ex.containerId, id).catch(() => {});
        openIo.close();
        await this.deps.stdio.remove(dir, id).catch(() => {});
        return code;
      })();
      return { pid };
    } catch (err) {
      io?.close();
      await sup.deleteProcess(ex.containerId, id).catch(() => {});
      await this.deps.stdio.remove(dir, id).catch(() => {});
      throw err;
    }
  }

  /**
   * As the reference: a resize that comes while the exec is starting waits (up to 10 s) for its
   * process, then resizes its terminal; one sent before the process existed would be lost.
   */
  async resize(id: string, width: number, height: number): Promise<void> {
    const ex = this.get(id);
    if (!isRunning(ex)) throw conflict(`Exec ${id} is not running, so it can not be resized.`);
    const starting = this.starting.get(id);
    if (starting) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const late = new Promise<'late'>((r) => (timer = setTimeout(() => r('late'), RESIZE_WAIT_MS)));
      const ready = await Promise.race([starting.then(() => 'ready' as const), late]);
      clearTimeout(timer);
      if (ready === 'late') throw unavailable('timeout waiting for exec session ready');
      if (!isRunning(this.get(id))) throw conflict(`Exec ${id} is not running, so it can not be resized.`);
    }
    await this.deps.supervisor.resizePty(ex.containerId, id, width, height);
  }

  /** Forget finished execs after a while, and those of containers that stopped. */
  private collect(): void {
    const now = Date.now();
    for (const ex of this.execs.values()) {
      const state = stateOf(ex);
      if (state === 'exited' && ex.finishedAt && now - ex.finishedAt > GC_AFTER_MS) this.execs.delete(ex.id);
      if (state === 'created' && !this.deps.host.runInfo(ex.containerId)) this.execs.delete(ex.id);
    }
  }
}

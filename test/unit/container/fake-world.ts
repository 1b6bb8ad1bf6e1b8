// A fake world for the container reconciler: supervisor, stdio, logging, layers, OCI spec and
// runtimes held in memory, so ContainerReconciler can run against the real store and the real
// Controller without containerd, runc, overlayfs or networks. Tests drive it from outside:
// a task ignoring a signal, a process dying on its own, a task left by a previous daemon.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import type { Logger } from 'pino';
import { alreadyExists, failedPrecondition, notFound, notImplemented } from '../../../lib/errors.ts';
import { rfc3339Nano, shortId, ZERO_TIME } from '../../../lib/ids.ts';
import type {
  ContainerReconcilerDeps,
  HubLike,
  LayersPort,
  LoggerLike,
  LoggingPort,
  ProcessIOLike,
  RuntimePort,
  SpecPort,
  StdioPort,
  SupervisorPort,
  TaskState,
} from '../../../reconcilers/container/deps.ts';
import { Controller } from '../../../controllers/controller.ts';
import { ContainerReconciler } from '../../../reconcilers/container/reconciler.ts';
import { RunRegistry } from '../../../reconcilers/container/runs.ts';
import type { Store } from '../../../store/store.ts';
import type { ContainerConfig, ContainerSpec, ContainerStatus, HostConfig } from '../../../store/kinds/container.ts';
import { fakeLog, type LogLine } from '../controllers/fake-log.ts';
import { containerController } from '../../../reconcilers/container/controller.ts';

type Exit = { exitStatus: number; exitedAt: Date | null };

export interface FakeTask {
  pid: number;
  status: TaskState['status'];
  exitStatus: number;
  exitedAt: Date | null;
  /** The stdout path given at createTask: its stdio streams end when the task exits. */
  stdout?: string;
  exited: PromiseWithResolvers<Exit>;
}

function abortError(signal: AbortSignal): Error {
  return signal.reason instanceof Error && signal.reason.name === 'AbortError'
    ? signal.reason
    : new DOMException('The operation was aborted', 'AbortError');
}

/**
 * The supervisor (containerd-like) in memory. Containers and tasks are keyed by container id.
 * A task exits on SIGKILL always and on any other signal unless `ignore(id, sig)` was called;
 * an exit is reported to `onExit` (the registry's notifyExit) on a later turn (setImmediate).
 */
export class FakeSupervisor implements SupervisorPort {
  readonly containers = new Map<string, { spec: object; runtime: { name: string; options?: object }; labels?: Record<string, string> }>();
  readonly tasks = new Map<string, FakeTask>();
  /** Every killTask call, in order (also those that found no task). */
  readonly signals: Array<{ id: string; signal: number }> = [];
  /** Every call as [method, containerId], in order. */
  readonly calls: Array<[string, string]> = [];
  /** Signals each container's task ignores (SIGKILL cannot be ignored). */
  readonly ignored = new Map<string, Set<number>>();
  /** Called with every exit; fakeWorld wires it to the registry and the stdio fake. */
  onExit: (id: string, task: FakeTask) => void = () => {};
  private nextPid = 1000;

  /** Makes the task of `id` exit now with `code` (no-op when it has exited already). */
  exit(id: string, code: number): void {
    const t = this.tasks.get(id);
    if (!t || t.status === 'STOPPED') return;
    t.status = 'STOPPED';
    t.exitStatus = code;
    t.exitedAt = new Date();
    t.exited.resolve({ exitStatus: code, exitedAt: t.exitedAt });
    this.onExit(id, t);
  }

  /** A container record and a RUNNING task put straight in, as a previous daemon left them. */
  leftover(id: string): number {
    this.containers.set(id, { spec: {}, runtime: { name: 'io.containerd.runc.v2' }, labels: { 'engine/container': 'true' } });
    const t = this.newTask();
    t.status = 'RUNNING';
    this.tasks.set(id, t);
    return t.pid;
  }

  private newTask(stdout?: string): FakeTask {
    const exited = Promise.withResolvers<Exit>();
    exited.promise.catch(() => {});
    return { pid: this.nextPid++, status: 'CREATED', exitStatus: 0, exitedAt: null, stdout, exited };
  }

  private task(id: string): FakeTask {
    const t = this.tasks.get(id);
    if (!t) throw notFound(`task ${id} not found`);
    return t;
  }

  async createContainer(req: { id: string; spec: object; runtime: { name: string; options?: object }; labels?: Record<string, string> }): Promise<void> {
    this.calls.push(['createContainer', req.id]);
    if (this.containers.has(req.id)) throw alreadyExists(`container "${req.id}" already exists`);
    this.containers.set(req.id, { spec: req.spec, runtime: req.runtime, labels: req.labels });
  }

  async deleteContainer(id: string): Promise<void> {
    this.calls.push(['deleteContainer', id]);
    if (!this.containers.has(id)) throw notFound(`container "${id}" not found`);
    if (this.tasks.has(id)) throw failedPrecondition(`cannot delete container ${id}: it has a task`);
    this.containers.delete(id);
  }

  async createTask(req: { containerId: string; stdin?: string; stdout?: string; stderr?: string; terminal: boolean }): Promise<{ pid: number }> {
    const id = req.containerId;
    this.calls.push(['createTask', id]);
    if (!this.containers.has(id)) throw notFound(`container "${id}" not found`);
    if (this.tasks.has(id)) throw alreadyExists(`task ${id} already exists`);
    const t = this.newTask(req.stdout);
    this.tasks.set(id, t);
    return { pid: t.pid };
  }

  async startTask(id: string): Promise<{ pid: number }> {
    this.calls.push(['startTask', id]);
    const t = this.task(id);
    if (t.status !== 'CREATED') throw failedPrecondition(`task ${id} is ${t.status}, not CREATED`);
    t.status = 'RUNNING';
    return { pid: t.pid };
  }

  async getTask(id: string): Promise<TaskState> {
    this.calls.push(['getTask', id]);
    const t = this.task(id);
    return { pid: t.pid, status: t.status, exitStatus: t.exitStatus, exitedAt: t.exitedAt };
  }

  async killTask(id: string, signal: number, _opts?: { all?: boolean }): Promise<void> {
    this.calls.push(['killTask', id]);
    this.signals.push({ id, signal });
    const t = this.task(id);
    if (t.status === 'STOPPED') throw notFound(`process already finished: ${id}`);
    if (signal !== 9 && this.ignored.get(id)?.has(signal)) return;
    this.exit(id, 128 + signal);
  }

  waitTask(id: string, execId?: string, opts?: { signal?: AbortSignal }): Promise<Exit> {
    this.calls.push(['waitTask', id]);
    if (execId) return Promise.reject(notImplemented('fake supervisor: exec'));
    const t = this.tasks.get(id);
    if (!t) return Promise.reject(notFound(`task ${id} not found`));
    const signal = opts?.signal;
    if (!signal) return t.exited.promise;
    if (signal.aborted) return Promise.reject(abortError(signal));
    return new Promise<Exit>((resolve, reject) => {
      const onAbort = () => reject(abortError(signal));
      signal.addEventListener('abort', onAbort, { once: true });
      t.exited.promise.then((v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      });
    });
  }

  async deleteTask(id: string): Promise<{ pid: number; exitStatus: number; exitedAt: Date | null }> {
    this.calls.push(['deleteTask', id]);
    const t = this.task(id);
    // As containerd: a running (or paused) task must be stopped before deletion.
    if (t.status === 'RUNNING' || t.status === 'PAUSED') throw failedPrecondition(`task ${id} must be stopped before deletion: ${t.status.toLowerCase()}`);
    this.tasks.delete(id);
    return { pid: t.pid, exitStatus: t.exitStatus, exitedAt: t.exitedAt };
  }

  async pause(id: string): Promise<void> {
    this.calls.push(['pause', id]);
    const t = this.task(id);
    if (t.status !== 'RUNNING') throw failedPrecondition(`task ${id} is ${t.status}, not RUNNING`);
    t.status = 'PAUSED';
  }

  async resume(id: string): Promise<void> {
    this.calls.push(['resume', id]);
    const t = this.task(id);
    if (t.status !== 'PAUSED') throw failedPrecondition(`task ${id} is ${t.status}, not PAUSED`);
    t.status = 'RUNNING';
  }

  async execProcess(): Promise<void> {
    throw notImplemented('fake supervisor: exec');
  }

  async startProcess(): Promise<{ pid: number }> {
    throw notImplemented('fake supervisor: exec');
  }

  async killProcess(): Promise<void> {
    throw notImplemented('fake supervisor: exec');
  }

  async deleteProcess(): Promise<Exit> {
    throw notImplemented('fake supervisor: exec');
  }

  async resizePty(): Promise<void> {}

  async closeIO(): Promise<void> {}
  async listContainers(): Promise<string[]> {
    return [...this.containers.keys()];
  }
  /** Resources of every updateTask, in order. */
  readonly updates: Array<{ id: string; resources: object }> = [];
  async updateTask(id: string, resources: object): Promise<void> {
    this.updates.push({ id, resources });
  }
}

/** Stdio with PassThrough streams; `paths` are plain strings (no FIFOs are made). */
export class FakeStdio implements StdioPort {
  /** Open ios by their stdout path (closed ones are dropped). */
  readonly ios = new Map<string, ProcessIOLike>();
  readonly removed: Array<{ dir: string; procId: string }> = [];

  async open(opts: { dir: string; procId: string; stdin: boolean; tty: boolean }): Promise<ProcessIOLike> {
    const base = join(opts.dir, opts.procId);
    const paths = { stdin: opts.stdin ? `${base}-stdin` : undefined, stdout: `${base}-stdout`, stderr: opts.tty ? undefined : `${base}-stderr` };
    const stdout = new PassThrough();
    const stderr = opts.tty ? null : new PassThrough();
    const stdin = opts.stdin ? new PassThrough() : null;
    const io: ProcessIOLike = {
      paths,
      stdout,
      stderr,
      stdin,
      close: () => {
        this.ios.delete(paths.stdout);
        for (const s of [stdout, stderr, stdin]) s?.destroy();
      },
    };
    this.ios.set(paths.stdout, io);
    return io;
  }

  /** The process behind `stdoutPath` is gone: its output streams end (EOF). */
  end(stdoutPath: string | undefined): void {
    const io = stdoutPath ? this.ios.get(stdoutPath) : undefined;
    if (!io) return;
    (io.stdout as PassThrough).end();
    (io.stderr as PassThrough | null)?.end();
  }

  hub(io: ProcessIOLike): HubLike {
    const subs = new Set<{ fn: (s: 'stdout' | 'stderr', c: Buffer) => unknown; onEnd?: () => void }>();
    let isEnded = false;
    const endedOf = (r: NodeJS.ReadableStream & { readableEnded?: boolean; destroyed?: boolean }) =>
      new Promise<void>((resolve) => {
        if (r.readableEnded || r.destroyed) return resolve();
        r.once('end', () => resolve());
        r.once('close', () => resolve());
        r.once('error', () => resolve());
      });
    io.stdout.on('data', (c: Buffer) => subs.forEach((s) => s.fn('stdout', c)));
    io.stderr?.on('data', (c: Buffer) => subs.forEach((s) => s.fn('stderr', c)));
    const ended = Promise.all([endedOf(io.stdout), io.stderr ? endedOf(io.stderr) : undefined]).then(() => {
      isEnded = true;
      for (const s of subs) s.onEnd?.();
      subs.clear();
    });
    return {
      subscribe(fn, onEnd) {
        if (isEnded) {
          queueMicrotask(() => onEnd?.());
          return () => {};
        }
        const s = { fn, onEnd };
        subs.add(s);
        return () => subs.delete(s);
      },
      ended,
      writeStdin(buf) {
        if (io.stdin && !io.stdin.writableEnded) io.stdin.write(buf);
      },
      closeStdin() {
        io.stdin?.end();
      },
    };
  }

  async remove(dir: string, procId: string): Promise<void> {
    this.removed.push({ dir, procId });
  }
}

/** Logging: null for the `none` driver; otherwise a logger keeping the chunks in memory. */
export class FakeLogging implements LoggingPort {
  readonly chunks = new Map<string, Array<{ stream: 'stdout' | 'stderr'; data: string }>>();

  open(containerId: string, _path: string, config: { Type: string; Config: Record<string, string> }): LoggerLike | null {
    if (config.Type === 'none') return null;
    const list = this.chunks.get(containerId) ?? [];
    this.chunks.set(containerId, list);
    return {
      log: (stream, chunk) => {
        list.push({ stream, data: chunk.toString() });
      },
      close: async () => {},
    };
  }
}

/** Read-write layers as a set of ids; a mount is a directory under `root`. */
export class FakeLayers implements LayersPort {
  readonly driverName = 'fake';
  readonly rw = new Set<string>();
  readonly mounted = new Set<string>();
  private readonly root: string;

  constructor(root: string) {
    this.root = root;
  }

  async createRW(id: string, _parentChainId: string | null): Promise<void> {
    this.rw.add(id);
  }

  async mountRW(id: string): Promise<string> {
    if (!this.rw.has(id)) throw notFound(`no read-write layer for ${id}`);
    const p = join(this.root, id);
    mkdirSync(p, { recursive: true });
    this.mounted.add(id);
    return p;
  }

  async unmountRW(id: string): Promise<void> {
    this.mounted.delete(id);
  }

  async removeRW(id: string): Promise<void> {
    this.mounted.delete(id);
    this.rw.delete(id);
  }

  hasRW(id: string): boolean {
    return this.rw.has(id);
  }
}

const fakeSpec: SpecPort = {
  updateResources(h) {
    return { memory: h.Memory ? { limit: h.Memory } : undefined };
  },
  async build(input) {
    return { process: { args: [input.path, ...input.args] }, root: { path: input.rootfs } };
  },
  async writeEtcFiles(dir) {
    const files = { hostname: join(dir, 'hostname'), hosts: join(dir, 'hosts'), resolvConf: join(dir, 'resolv.conf') };
    for (const f of Object.values(files)) writeFileSync(f, '');
    return files;
  },
};

const fakeRuntimes: RuntimePort = {
  resolve: () => ({ name: 'io.containerd.runc.v2' }),
};

export interface FakeWorldOptions {
  /** Passed to the RunRegistry. Default: events are live (runs rely on notifyExit first). */
  exitEventsLive?: () => boolean;
}

export interface FakeWorld {
  /** Temp root: dataRoot, execRoot, layer mounts live under it; a test may put its store here. */
  dir: string;
  deps: ContainerReconcilerDeps;
  runs: RunRegistry;
  supervisor: FakeSupervisor;
  stdio: FakeStdio;
  logging: FakeLogging;
  layers: FakeLayers;
  log: Logger & { lines: LogLine[] };
  /** supervisor.signals: every (id, signal) killTask was called with. */
  signals: Array<{ id: string; signal: number }>;
  /** The task of `id` ignores `signal` from now on (SIGKILL still kills it). */
  ignore(id: string, signal: number): void;
  /** The task exits on its own with `code` (the process died), with the usual exit event. */
  exitBehindBack(id: string, code: number): void;
  /**
   * What a previous daemon left for `id`: a container record and a RUNNING task in the supervisor
   * (no exit event) and its read-write layer, still mounted (a record with prepared: true can
   * start again). Returns the task's pid.
   */
  crashLeftover(id: string): number;
  /** Writes output as the process of `id` would (to its current run's stdout/stderr). */
  write(id: string, stream: 'stdout' | 'stderr', data: string): void;
  /** Removes the temp root. */
  cleanup(): void;
}

export function fakeWorld(opts: FakeWorldOptions = {}): FakeWorld {
  const dir = mkdtempSync(join(tmpdir(), 'engine-fake-world-'));
  const supervisor = new FakeSupervisor();
  const stdio = new FakeStdio();
  const logging = new FakeLogging();
  const layers = new FakeLayers(join(dir, 'mounts'));
  const log = fakeLog();
  const runs = new RunRegistry({ supervisor, exitEventsLive: opts.exitEventsLive ?? (() => true) });
  supervisor.onExit = (id, task) => {
    stdio.end(task.stdout);
    const info = { pid: task.pid, exitStatus: task.exitStatus, exitedAt: task.exitedAt };
    setImmediate(() => world.runs.notifyExit(id, info));
  };
  const deps: ContainerReconcilerDeps = {
    supervisor,
    stdio,
    logging,
    layers,
    spec: fakeSpec,
    runtimes: fakeRuntimes,
    dataRoot: join(dir, 'data'),
    execRoot: join(dir, 'exec'),
    cgroupParent: '/engine',
    log,
  };
  const world: FakeWorld = {
    dir,
    deps,
    runs,
    supervisor,
    stdio,
    logging,
    layers,
    log,
    signals: supervisor.signals,
    ignore(id, signal) {
      let set = supervisor.ignored.get(id);
      if (!set) supervisor.ignored.set(id, (set = new Set()));
      set.add(signal);
    },
    exitBehindBack(id, code) {
      const t = supervisor.tasks.get(id);
      if (!t || t.status === 'STOPPED') throw new Error(`fake world: ${id} has no live task`);
      supervisor.exit(id, code);
    },
    crashLeftover(id) {
      layers.rw.add(id);
      layers.mounted.add(id);
      return supervisor.leftover(id);
    },
    write(id, stream, data) {
      const io = stdio.ios.get(supervisor.tasks.get(id)?.stdout ?? '');
      const s = (stream === 'stdout' ? io?.stdout : io?.stderr) as PassThrough | null | undefined;
      if (!s) throw new Error(`fake world: ${id} has no open ${stream}`);
      s.write(data);
    },
    cleanup() {
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return world;
}

export interface ContainerRecordOverrides {
  spec?: Partial<ContainerSpec>;
  status?: Partial<ContainerStatus>;
  config?: Partial<ContainerConfig>;
  hostConfig?: Partial<HostConfig>;
}

/**
 * A container record as `POST /containers/create` writes it (api/containers/routes.ts and
 * create-request.ts, for `{Image, Cmd: ['true'], HostConfig: {NetworkMode: 'none', LogConfig: {Type: 'none'}}}`
 * and an image with an empty config): `store.create(Containers, id, r.spec, r.status)`.
 * `config`/`hostConfig` overrides are merged into the defaults; a Cmd/Entrypoint override
 * also sets path/args unless `spec` overrides those.
 */
export function containerRecord(id: string, overrides: ContainerRecordOverrides = {}): { spec: ContainerSpec; status: ContainerStatus } {
  const config: ContainerConfig = {
    Hostname: shortId(id), Domainname: '', User: '', AttachStdin: false, AttachStdout: false, AttachStderr: false,
    ExposedPorts: null, Tty: false, OpenStdin: false, StdinOnce: false, Env: [], Cmd: ['true'], Image: 'fake',
    Volumes: null, WorkingDir: '', Entrypoint: null, OnBuild: null, Labels: {},
    ...overrides.config,
  };
  const hostConfig: HostConfig = {
    Binds: null, NetworkMode: 'none', RestartPolicy: { Name: 'no', MaximumRetryCount: 0 }, AutoRemove: false,
    LogConfig: { Type: 'none', Config: {} }, Privileged: false, ReadonlyRootfs: false, ShmSize: 64 * 1024 * 1024,
    Runtime: 'stdrt', CapAdd: null, CapDrop: null, Dns: [], DnsOptions: [], DnsSearch: [], ExtraHosts: null,
    ...overrides.hostConfig,
  };
  const command = [...(config.Entrypoint ?? []), ...(config.Cmd ?? [])];
  // The spec and status field sets: the one place to change when the record shape changes.
  const spec: ContainerSpec = {
    id, name: `/c-${shortId(id)}`, created: rfc3339Nano(), imageId: `sha256:${'0'.repeat(64)}`, config, hostConfig,
    networkingConfig: null, path: command[0] ?? '', args: command.slice(1), desired: 'created', manuallyStopped: false,
    runGeneration: 0,
    ...overrides.spec,
  };
  const status: ContainerStatus = {
    observedGeneration: 0, phase: 'created', pid: 0, exitCode: 0, error: '', errorCode: '', startedAt: ZERO_TIME,
    finishedAt: ZERO_TIME, oomKilled: false, restartCount: 0, exitSeq: 0,
    logPath: '', hostnamePath: '', hostsPath: '', resolvConfPath: '', driver: '', rootfs: '', prepared: false,
    runGeneration: 0,
    ...overrides.status,
  };
  return { spec, status };
}

/**
 * The container controller as cmd wires it, on `store` in `world`: the reconciler and the
 * registry's exits feed one queue. Stop it and start another on the same store and world to play
 * a daemon restart (the supervisor's tasks stay, the registry is new).
 */
export async function startContainerController(world: FakeWorld, store: Store, opts: { workers?: number } = {}): Promise<Controller> {
  const runs = new RunRegistry({ supervisor: world.supervisor, exitEventsLive: () => true });
  world.runs = runs;
  const reconciler = new ContainerReconciler(store, world.deps, runs);
  const controller = containerController(runs, reconciler).build({ store, reconciler, log: world.log, workers: opts.workers ?? 2 });
  await controller.start();
  return controller;
}

// Typed wrapper over the supervisor's (containerd's) container and task services.
// Every call carries the namespace metadata and a deadline (except Wait); gRPC statuses become
// EngineErrors with containerd's message kept intact (callers match "executable file not found").
import type { Logger } from 'pino';
import { invalidArgument } from '../../lib/errors.ts';
import { CreateContainerRequest, DeleteContainerRequest, ListContainersRequest } from './gen/containers.ts';
import { Empty } from './gen/google/protobuf/empty.ts';
import { Options as RuncOptions } from './gen/runc-options.ts';
import { Options as RuntimeOptions } from './gen/runtime-options.ts';
import type { Process } from './gen/task-types.ts';
import {
  CloseIORequest, CreateTaskRequest, DeleteProcessRequest, DeleteTaskRequest, ExecProcessRequest, GetRequest, KillRequest, ListPidsRequest,
  ListTasksRequest, PauseTaskRequest, ResizePtyRequest, ResumeTaskRequest, StartRequest, UpdateTaskRequest, WaitRequest,
} from './gen/tasks.ts';
import { anyOf, connectSupervisor, jsonAny, toDate, unary, type UnaryMethod } from './rpc.ts';
import { killShim, listeningSockets, listShims, removeStaleBundle, startTicks, taskShimAddresses } from './shims.ts';
import { createSupervisorStorage, type SupervisorStorage } from './storage.ts';
import type { SupervisorTasks, TaskState, TaskStatus } from '../../lib/ports/supervisor.ts';

export type { TaskState, TaskStatus };

const SPEC_URL = 'types.containerd.io/opencontainers/runtime-spec/1/Spec';
const PROCESS_URL = 'types.containerd.io/opencontainers/runtime-spec/1/Process';
const RESOURCES_URL = 'types.containerd.io/opencontainers/runtime-spec/1/LinuxResources';
const RUNC_OPTIONS_URL = 'containerd.runc.v1.Options';
const RUNTIME_OPTIONS_URL = 'runtimeoptions.v1.Options';

export interface TaskInfo extends TaskState {
  containerId: string;
  id: string;
  stdin: string;
  stdout: string;
  stderr: string;
  terminal: boolean;
}

/** Shim options as runtimes.ts produces them: the runc shim's, or a generic shim's, by their proto field names. */
export type ShimOptions =
  | { typeUrl: typeof RUNC_OPTIONS_URL; fields: Partial<RuncOptions> }
  | { typeUrl: typeof RUNTIME_OPTIONS_URL; fields: Partial<RuntimeOptions> };

export interface SupervisorClient extends SupervisorTasks {
  version(): Promise<{ version: string; revision: string }>;
  /** Ids of the containers with a shim started before this daemon process (an earlier life's, a lost one included). */
  staleShimIds(): Promise<string[]>;
  /** Kills the shim of container `id` (and what it started) if one is running; true when there was one. Only for a container with no task. */
  reapShim(id: string): Promise<boolean>;
  listTasks(): Promise<TaskInfo[]>;
  pids(containerId: string): Promise<number[]>;
  /** The content, lease, snapshot, diff and image services on the same channel (./storage.ts). */
  storage(): SupervisorStorage;
  close(): void;
}

export interface SupervisorClientOptions {
  address: string;
  namespace: string;
  log: Logger;
  /** Deadline of ordinary calls (ms). */
  timeoutMs?: number;
  /** Deadline of calls that start shims or runtimes: task create/start/delete, exec start (ms). */
  slowTimeoutMs?: number;
  /**
   * Containers have no cgroups of their own (rootless mode on cgroup v1): a kill of "all" their
   * processes would find them by a cgroup they do not have, so only the init is signalled (the
   * end of its PID namespace ends the rest), as the reference kills.
   */
  noCgroups?: boolean;
  /** The supervisor's state directory: a lost shim still serving another task of its group is never reaped. */
  stateDir?: string;
}

export function isShimOptions(o: unknown): o is ShimOptions {
  return !!o && typeof o === 'object' && typeof (o as ShimOptions).typeUrl === 'string' && typeof (o as ShimOptions).fields === 'object';
}

/** Shim options as the Any a container record carries (bare type URL, as containerd writes it). */
export function encodeShimOptions(o: object | undefined): { type_url: string; value: Buffer } | undefined {
  if (o === undefined) return undefined;
  if (!isShimOptions(o)) throw invalidArgument('runtime options must be {typeUrl, fields}');
  try {
    if (o.typeUrl === RUNC_OPTIONS_URL) return anyOf(o.typeUrl, RuncOptions, RuncOptions.fromPartial(o.fields));
    if (o.typeUrl === RUNTIME_OPTIONS_URL) return anyOf(o.typeUrl, RuntimeOptions, RuntimeOptions.fromPartial(o.fields));
  } catch (err) {
    throw invalidArgument(`invalid runtime options for ${o.typeUrl}: ${(err as Error).message}`, err);
  }
  throw invalidArgument(`unknown runtime options type ${(o as { typeUrl: string }).typeUrl}`);
}

function taskState(p: Process | undefined): TaskState {
  return {
    pid: p?.pid ?? 0,
    status: (p?.status ?? 'UNKNOWN') as TaskStatus,
    exitStatus: p?.exit_status ?? 0,
    exitedAt: toDate(p?.exited_at),
  };
}

export function createSupervisorClient(opts: SupervisorClientOptions): SupervisorClient {
  const conn = connectSupervisor(opts.address);
  const { containers, tasks } = conn;
  const ns = opts.namespace;
  let storage: SupervisorStorage | undefined;
  const fast = opts.timeoutMs ?? 30_000;
  const slow = opts.slowTimeoutMs ?? 120_000;
  const log = opts.log.child({ component: 'supervisor-client', namespace: ns });

  const call = <Req, Res>(what: string, method: UnaryMethod<Req, Res>, req: Req, timeoutMs = fast, signal?: AbortSignal) =>
    unary(what, method, req, { namespace: ns, timeoutMs, signal: signal ? AbortSignal.any([signal, conn.closed]) : conn.closed });

  return {
    async version() {
      const r = await call('Version', conn.version.version.bind(conn.version), Empty.fromPartial({}), 5_000);
      return { version: r.version, revision: r.revision };
    },

    async createContainer(req) {
      const options = encodeShimOptions(req.runtime.options);
      const container = {
        id: req.id,
        labels: req.labels ?? {},
        runtime: { name: req.runtime.name, options },
        spec: jsonAny(SPEC_URL, req.spec),
      };
      await call('Containers.Create', containers.create.bind(containers), CreateContainerRequest.fromPartial({ container }));
      log.debug({ id: req.id, runtime: req.runtime.name }, 'container record created');
    },

    async deleteContainer(id) {
      await call('Containers.Delete', containers.delete.bind(containers), DeleteContainerRequest.fromPartial({ id }));
    },

    async listContainers() {
      const r = await call('Containers.List', containers.list.bind(containers), ListContainersRequest.fromPartial({}));
      return r.containers.map((c) => c.id);
    },

    async staleShimIds() {
      const self = await startTicks(process.pid);
      return (await listShims(opts.address, ns)).filter((s) => s.startTicks >= 0 && s.startTicks < self).map((s) => s.id);
    },

    async reapShim(id) {
      let shims = (await listShims(opts.address, ns)).filter((s) => s.id === id);
      // A grouped shim is named by its group's first container: it may serve the group's others still.
      if (shims.length && opts.stateDir) {
        const others = new Set([...(await taskShimAddresses(opts.stateDir, ns))].filter(([task]) => task !== id).map(([, a]) => a));
        const serving = await Promise.all(shims.map(async (s) => (await listeningSockets(s.pid)).some((a) => others.has(a))));
        const kept = shims.filter((_, i) => serving[i]);
        if (kept.length) log.info({ id, pids: kept.map((s) => s.pid) }, 'kept a shim that serves other tasks of its group');
        shims = shims.filter((_, i) => !serving[i]);
      }
      for (const s of shims) await killShim(s.pid);
      if (shims.length) log.warn({ id, pids: shims.map((s) => s.pid) }, 'killed a shim the supervisor had lost');
      // With no task and no shim of its own, what a cut-off create left of its bundle goes too.
      if (opts.stateDir && !(await listShims(opts.address, ns)).some((s) => s.id === id)) {
        if (await removeStaleBundle(opts.stateDir, ns, id).catch(() => false)) log.warn({ id }, 'removed the bundle a cut-off task create left');
      }
      return shims.length > 0;
    },

    async createTask(req) {
      const r = await call(
        'Tasks.Create',
        tasks.create.bind(tasks),
        CreateTaskRequest.fromPartial({ container_id: req.containerId, stdin: req.stdin ?? '', stdout: req.stdout ?? '', stderr: req.stderr ?? '', terminal: req.terminal }),
        slow,
      );
      return { pid: r.pid };
    },

    async startTask(containerId) {
      const r = await call('Tasks.Start', tasks.start.bind(tasks), StartRequest.fromPartial({ container_id: containerId }), slow);
      return { pid: r.pid };
    },

    async getTask(containerId) {
      const r = await call('Tasks.Get', tasks.get.bind(tasks), GetRequest.fromPartial({ container_id: containerId }));
      return taskState(r.process);
    },

    async listTasks() {
      const r = await call('Tasks.List', tasks.list.bind(tasks), ListTasksRequest.fromPartial({}));
      return r.tasks.map((p) => ({
        ...taskState(p),
        // Tasks.List and Get leave container_id empty: the task's id is the container id.
        containerId: p.container_id || p.id,
        id: p.id,
        stdin: p.stdin,
        stdout: p.stdout,
        stderr: p.stderr,
        terminal: p.terminal,
      }));
    },

    async killTask(containerId, signal, o) {
      await call('Tasks.Kill', tasks.kill.bind(tasks), KillRequest.fromPartial({ container_id: containerId, signal, all: !!o?.all && !opts.noCgroups }));
    },

    async waitTask(containerId, execId, o) {
      const r = await call('Tasks.Wait', tasks.wait.bind(tasks), WaitRequest.fromPartial({ container_id: containerId, exec_id: execId ?? '' }), 0, o?.signal);
      return { exitStatus: r.exit_status, exitedAt: toDate(r.exited_at) };
    },

    async deleteTask(containerId) {
      const r = await call('Tasks.Delete', tasks.delete.bind(tasks), DeleteTaskRequest.fromPartial({ container_id: containerId }), slow);
      return { pid: r.pid, exitStatus: r.exit_status, exitedAt: toDate(r.exited_at) };
    },

    async pause(id) {
      await call('Tasks.Pause', tasks.pause.bind(tasks), PauseTaskRequest.fromPartial({ container_id: id }));
    },

    async resume(id) {
      await call('Tasks.Resume', tasks.resume.bind(tasks), ResumeTaskRequest.fromPartial({ container_id: id }));
    },

    async updateTask(containerId, resources) {
      await call('Tasks.Update', tasks.update.bind(tasks), UpdateTaskRequest.fromPartial({ container_id: containerId, resources: jsonAny(RESOURCES_URL, resources) }));
    },

    async execProcess(req) {
      const exec = {
        container_id: req.containerId,
        exec_id: req.execId,
        stdin: req.stdin ?? '',
        stdout: req.stdout ?? '',
        stderr: req.stderr ?? '',
        terminal: req.terminal,
        spec: jsonAny(PROCESS_URL, req.spec),
      };
      await call('Tasks.Exec', tasks.exec.bind(tasks), ExecProcessRequest.fromPartial(exec));
    },

    async startProcess(containerId, execId) {
      const r = await call('Tasks.Start', tasks.start.bind(tasks), StartRequest.fromPartial({ container_id: containerId, exec_id: execId }), slow);
      return { pid: r.pid };
    },

    async killProcess(containerId, execId, signal) {
      await call('Tasks.Kill', tasks.kill.bind(tasks), KillRequest.fromPartial({ container_id: containerId, exec_id: execId, signal, all: false }));
    },

    async deleteProcess(containerId, execId) {
      const r = await call('Tasks.DeleteProcess', tasks.deleteProcess.bind(tasks), DeleteProcessRequest.fromPartial({ container_id: containerId, exec_id: execId }), slow);
      return { exitStatus: r.exit_status, exitedAt: toDate(r.exited_at) };
    },

    async resizePty(containerId, execId, width, height) {
      await call('Tasks.ResizePty', tasks.resizePty.bind(tasks), ResizePtyRequest.fromPartial({ container_id: containerId, exec_id: execId ?? '', width, height }));
    },

    async closeIO(containerId, execId) {
      await call('Tasks.CloseIO', tasks.closeIo.bind(tasks), CloseIORequest.fromPartial({ container_id: containerId, exec_id: execId ?? '', stdin: true }));
    },

    async pids(containerId) {
      const r = await call('Tasks.ListPids', tasks.listPids.bind(tasks), ListPidsRequest.fromPartial({ container_id: containerId }));
      return r.processes.map((p) => p.pid);
    },

    storage() {
      storage ??= createSupervisorStorage(conn, { namespace: ns });
      return storage;
    },

    close() {
      conn.close();
    },
  };
}

// Typed wrapper over the supervisor's (containerd's) container and task services.
// Every call carries the namespace metadata and a deadline (except Wait); gRPC statuses become
// EngineErrors with containerd's message kept intact (callers match "executable file not found").
import type { Logger } from 'pino';
import type { GrpcClient } from './grpc.ts';
import { invalidArgument } from '../../lib/errors.ts';
import { anyOf, jsonAny, newGrpcClient, toDate, unary } from './proto.ts';
import type { Decoded } from './proto.ts';
import { killShim, listShims, startTicks } from './shims.ts';

const SPEC_URL = 'types.containerd.io/opencontainers/runtime-spec/1/Spec';
const PROCESS_URL = 'types.containerd.io/opencontainers/runtime-spec/1/Process';
const RESOURCES_URL = 'types.containerd.io/opencontainers/runtime-spec/1/LinuxResources';

const VERSION_SVC = 'containerd.services.version.v1.Version';
const CONTAINERS_SVC = 'containerd.services.containers.v1.Containers';
const TASKS_SVC = 'containerd.services.tasks.v1.Tasks';
const C = 'containerd.services.containers.v1.';
const T = 'containerd.services.tasks.v1.';
const EMPTY = 'google.protobuf.Empty';

export type TaskStatus = 'UNKNOWN' | 'CREATED' | 'RUNNING' | 'STOPPED' | 'PAUSED' | 'PAUSING';

export interface TaskState {
  pid: number;
  status: TaskStatus;
  exitStatus: number;
  exitedAt: Date | null;
}

export interface TaskInfo extends TaskState {
  containerId: string;
  id: string;
  stdin: string;
  stdout: string;
  stderr: string;
  terminal: boolean;
}

/**
 * Shim options as runtimes.ts produces them: `typeUrl` names a message of our protos
 * (`containerd.runc.v1.Options` or `runtimeoptions.v1.Options`), `fields` uses its proto field names.
 */
export interface ShimOptions {
  typeUrl: string;
  fields: Record<string, unknown>;
}

export interface SupervisorClient {
  version(): Promise<{ version: string; revision: string }>;
  createContainer(req: { id: string; spec: object; runtime: { name: string; options?: object }; labels?: Record<string, string> }): Promise<void>;
  deleteContainer(id: string): Promise<void>;
  listContainers(): Promise<string[]>;
  /** Ids of the containers with a shim started before this daemon process (an earlier life's, a lost one included). */
  staleShimIds(): Promise<string[]>;
  /** Kills the shim of container `id` (and what it started) if one is running; true when there was one. Only for a container with no task. */
  reapShim(id: string): Promise<boolean>;
  createTask(req: { containerId: string; stdin?: string; stdout?: string; stderr?: string; terminal: boolean }): Promise<{ pid: number }>;
  startTask(containerId: string): Promise<{ pid: number }>;
  getTask(containerId: string): Promise<TaskState>;
  listTasks(): Promise<TaskInfo[]>;
  killTask(containerId: string, signal: number, opts?: { all?: boolean }): Promise<void>;
  waitTask(containerId: string, execId?: string, opts?: { signal?: AbortSignal }): Promise<{ exitStatus: number; exitedAt: Date | null }>;
  deleteTask(containerId: string): Promise<{ pid: number; exitStatus: number; exitedAt: Date | null }>;
  pause(id: string): Promise<void>;
  resume(id: string): Promise<void>;
  updateTask(containerId: string, resources: object): Promise<void>;
  execProcess(req: { containerId: string; execId: string; spec: object; stdin?: string; stdout?: string; stderr?: string; terminal: boolean }): Promise<void>;
  startProcess(containerId: string, execId: string): Promise<{ pid: number }>;
  killProcess(containerId: string, execId: string, signal: number): Promise<void>;
  deleteProcess(containerId: string, execId: string): Promise<{ exitStatus: number; exitedAt: Date | null }>;
  resizePty(containerId: string, execId: string | undefined, width: number, height: number): Promise<void>;
  closeIO(containerId: string, execId: string | undefined): Promise<void>;
  pids(containerId: string): Promise<number[]>;
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
}

export function isShimOptions(o: unknown): o is ShimOptions {
  return !!o && typeof o === 'object' && typeof (o as ShimOptions).typeUrl === 'string' && typeof (o as ShimOptions).fields === 'object';
}

function encodeShimOptions(o: object | undefined): { type_url: string; value: Buffer } | undefined {
  if (o === undefined) return undefined;
  if (!isShimOptions(o)) throw invalidArgument('runtime options must be {typeUrl, fields}');
  try {
    return anyOf(o.typeUrl, o.fields);
  } catch (err) {
    throw invalidArgument(`invalid runtime options for ${o.typeUrl}: ${(err as Error).message}`, err);
  }
}

function taskState(p: Decoded | undefined): TaskState {
  return {
    pid: p?.pid ?? 0,
    status: (p?.status ?? 'UNKNOWN') as TaskStatus,
    exitStatus: p?.exit_status ?? 0,
    exitedAt: toDate(p?.exited_at),
  };
}

export function createSupervisorClient(opts: SupervisorClientOptions): SupervisorClient {
  const grpcClient: GrpcClient = newGrpcClient(opts.address);
  const ns = opts.namespace;
  const fast = opts.timeoutMs ?? 30_000;
  const slow = opts.slowTimeoutMs ?? 120_000;
  const log = opts.log.child({ component: 'supervisor-client', namespace: ns });

  const call = (svc: string, method: string, reqType: string, resType: string, req: object, timeoutMs = fast, signal?: AbortSignal) =>
    unary(grpcClient, svc, method, reqType, resType, req, { namespace: ns, timeoutMs, signal });
  const task = (method: string, reqType: string, resType: string, req: object, timeoutMs = fast) =>
    call(TASKS_SVC, method, T + reqType, resType.includes('.') ? resType : T + resType, req, timeoutMs);

  return {
    async version() {
      const r = await call(VERSION_SVC, 'Version', EMPTY, 'containerd.services.version.v1.VersionResponse', {}, 5_000);
      return { version: r.version, revision: r.revision };
    },

    async createContainer(req) {
      const options = encodeShimOptions(req.runtime.options);
      await call(CONTAINERS_SVC, 'Create', C + 'CreateContainerRequest', C + 'CreateContainerResponse', {
        container: {
          id: req.id,
          labels: req.labels ?? {},
          runtime: { name: req.runtime.name, ...(options ? { options } : {}) },
          spec: jsonAny(SPEC_URL, req.spec),
        },
      });
      log.debug({ id: req.id, runtime: req.runtime.name }, 'container record created');
    },

    async deleteContainer(id) {
      await call(CONTAINERS_SVC, 'Delete', C + 'DeleteContainerRequest', EMPTY, { id });
    },

    async listContainers() {
      const r = await call(CONTAINERS_SVC, 'List', C + 'ListContainersRequest', C + 'ListContainersResponse', {});
      return (r.containers as Decoded[]).map((c) => c.id as string);
    },

    async staleShimIds() {
      const self = await startTicks(process.pid);
      return (await listShims(opts.address, ns)).filter((s) => s.startTicks >= 0 && s.startTicks < self).map((s) => s.id);
    },

    async reapShim(id) {
      const shims = (await listShims(opts.address, ns)).filter((s) => s.id === id);
      for (const s of shims) await killShim(s.pid);
      if (shims.length) log.warn({ id, pids: shims.map((s) => s.pid) }, 'killed a shim the supervisor had lost');
      return shims.length > 0;
    },

    async createTask(req) {
      const r = await task(
        'Create',
        'CreateTaskRequest',
        'CreateTaskResponse',
        {
          container_id: req.containerId,
          stdin: req.stdin ?? '',
          stdout: req.stdout ?? '',
          stderr: req.stderr ?? '',
          terminal: req.terminal,
        },
        slow,
      );
      return { pid: r.pid };
    },

    async startTask(containerId) {
      const r = await task('Start', 'StartRequest', 'StartResponse', { container_id: containerId }, slow);
      return { pid: r.pid };
    },

    async getTask(containerId) {
      const r = await task('Get', 'GetRequest', 'GetResponse', { container_id: containerId });
      return taskState(r.process);
    },

    async listTasks() {
      const r = await task('List', 'ListTasksRequest', 'ListTasksResponse', {});
      return (r.tasks as Decoded[]).map((p) => ({
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
      await task('Kill', 'KillRequest', EMPTY, { container_id: containerId, signal, all: !!o?.all });
    },

    async waitTask(containerId, execId, o) {
      const r = await call(TASKS_SVC, 'Wait', T + 'WaitRequest', T + 'WaitResponse', { container_id: containerId, exec_id: execId ?? '' }, 0, o?.signal);
      return { exitStatus: r.exit_status, exitedAt: toDate(r.exited_at) };
    },

    async deleteTask(containerId) {
      const r = await task('Delete', 'DeleteTaskRequest', 'DeleteResponse', { container_id: containerId }, slow);
      return { pid: r.pid, exitStatus: r.exit_status, exitedAt: toDate(r.exited_at) };
    },

    async pause(id) {
      await task('Pause', 'PauseTaskRequest', EMPTY, { container_id: id });
    },

    async resume(id) {
      await task('Resume', 'ResumeTaskRequest', EMPTY, { container_id: id });
    },

    async updateTask(containerId, resources) {
      await task('Update', 'UpdateTaskRequest', EMPTY, { container_id: containerId, resources: jsonAny(RESOURCES_URL, resources) });
    },

    async execProcess(req) {
      await task('Exec', 'ExecProcessRequest', EMPTY, {
        container_id: req.containerId,
        exec_id: req.execId,
        stdin: req.stdin ?? '',
        stdout: req.stdout ?? '',
        stderr: req.stderr ?? '',
        terminal: req.terminal,
        spec: jsonAny(PROCESS_URL, req.spec),
      });
    },

    async startProcess(containerId, execId) {
      const r = await task('Start', 'StartRequest', 'StartResponse', { container_id: containerId, exec_id: execId }, slow);
      return { pid: r.pid };
    },

    async killProcess(containerId, execId, signal) {
      await task('Kill', 'KillRequest', EMPTY, { container_id: containerId, exec_id: execId, signal, all: false });
    },

    async deleteProcess(containerId, execId) {
      const r = await task('DeleteProcess', 'DeleteProcessRequest', 'DeleteResponse', { container_id: containerId, exec_id: execId }, slow);
      return { exitStatus: r.exit_status, exitedAt: toDate(r.exited_at) };
    },

    async resizePty(containerId, execId, width, height) {
      await task('ResizePty', 'ResizePtyRequest', EMPTY, { container_id: containerId, exec_id: execId ?? '', width, height });
    },

    async closeIO(containerId, execId) {
      await task('CloseIO', 'CloseIORequest', EMPTY, { container_id: containerId, exec_id: execId ?? '', stdin: true });
    },

    async pids(containerId) {
      const r = await task('ListPids', 'ListPidsRequest', 'ListPidsResponse', { container_id: containerId });
      return (r.processes as Decoded[]).map((p) => p.pid as number);
    },

    close() {
      grpcClient.close();
    },
  };
}

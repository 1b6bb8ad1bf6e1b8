// The supervisor's (containerd's) container and task calls as the layers above the driver use them
// (the container and exec reconcilers), declared below both: drivers/supervisor/client.ts
// implements them, the reconcilers' ports pick from them; neither re-declares a call.

export type TaskStatus = 'UNKNOWN' | 'CREATED' | 'RUNNING' | 'STOPPED' | 'PAUSED' | 'PAUSING';

export interface TaskState {
  pid: number;
  status: TaskStatus;
  exitStatus: number;
  exitedAt: Date | null;
}

export interface ExitStatus {
  exitStatus: number;
  exitedAt: Date | null;
}

export interface SupervisorTasks {
  createContainer(req: { id: string; spec: object; runtime: { name: string; options?: object }; labels?: Record<string, string> }): Promise<void>;
  deleteContainer(id: string): Promise<void>;
  /** Ids of every container record the supervisor holds in our namespace. */
  listContainers(): Promise<string[]>;
  createTask(req: { containerId: string; stdin?: string; stdout?: string; stderr?: string; terminal: boolean }): Promise<{ pid: number }>;
  startTask(containerId: string): Promise<{ pid: number }>;
  getTask(containerId: string): Promise<TaskState>;
  killTask(containerId: string, signal: number, opts?: { all?: boolean }): Promise<void>;
  waitTask(containerId: string, execId?: string, opts?: { signal?: AbortSignal }): Promise<ExitStatus>;
  deleteTask(containerId: string): Promise<{ pid: number } & ExitStatus>;
  pause(id: string): Promise<void>;
  resume(id: string): Promise<void>;
  /** New cgroup limits for a running task (`docker update`). */
  updateTask(containerId: string, resources: object): Promise<void>;
  execProcess(req: { containerId: string; execId: string; spec: object; stdin?: string; stdout?: string; stderr?: string; terminal: boolean }): Promise<void>;
  startProcess(containerId: string, execId: string): Promise<{ pid: number }>;
  killProcess(containerId: string, execId: string, signal: number): Promise<void>;
  deleteProcess(containerId: string, execId: string): Promise<ExitStatus>;
  resizePty(containerId: string, execId: string | undefined, width: number, height: number): Promise<void>;
  closeIO(containerId: string, execId: string | undefined): Promise<void>;
}

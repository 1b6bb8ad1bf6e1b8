// Narrow interfaces the API layer needs for byte streams. `api` declares them; `cmd` fills them
// with driver implementations. `api` imports no driver and no reconciler.
import type { ExecConfig } from '../store/kinds/exec.ts';
import type { Readable } from 'node:stream';

// ---- logs -------------------------------------------------------------------------------------

export interface LogReadOptions {
  stdout: boolean;
  stderr: boolean;
  /** Keep streaming new entries until `stopFollowing` fires (then drain what is left and end). */
  follow: boolean;
  /** Unix time in seconds (fractional allowed); entries strictly before are skipped. 0 = none. */
  since: number;
  /** Unix time in seconds (fractional allowed); entries after are skipped. 0 = none. */
  until: number;
  /** Number of entries from the end, -1 = all. */
  tail: number;
}

export interface LogEntry {
  stream: 'stdout' | 'stderr';
  /** The payload, including its trailing "\n" unless the entry is partial. */
  line: Buffer;
  /** RFC 3339 with 9 fractional digits. */
  time: string;
  attrs?: Record<string, string>;
}

export interface ContainerLogReader {
  /**
   * Entries of one container's log in order. `signal` aborts at once (client gone);
   * `stopFollowing` ends follow mode gracefully (container stopped).
   */
  read(containerId: string, opts: LogReadOptions, signal: AbortSignal, stopFollowing?: AbortSignal): AsyncIterable<LogEntry>;
}

// ---- image archives ---------------------------------------------------------------------------

// The image archive and commit ports are drivers' contracts too: declared in lib/image-ports.ts,
// below both, so the drivers that fill them import nothing above themselves.
export type { ImageArchivePort, ImportOptions, LoadedImage, SaveImage } from '../lib/image-ports.ts';

// ---- system facts -----------------------------------------------------------------------------

export interface SystemInfoPort {
  /** Figures for GET /info that come from the machine and drivers (cached, never slow). */
  info(): Promise<Record<string, unknown>>;
  /** Component versions for GET /version (supervisor, stdrt). */
  components(): Promise<Array<{ Name: string; Version: string; Details?: Record<string, unknown> }>>;
}

// ---- attach and exec --------------------------------------------------------------------------

/** The in-memory stdio of one running process: output fan-out and stdin. */
export interface StreamHub {
  /** `fn` may return a Promise to pause the output until it settles (backpressure). */
  subscribe(fn: (stream: 'stdout' | 'stderr', chunk: Buffer) => void | Promise<unknown>, onEnd?: () => void): () => void;
  ended: Promise<void>;
  writeStdin(buf: Buffer): void;
  closeStdin(): void;
}

export interface ContainerStreamsPort {
  /**
   * Calls `fn` with the hub of the container's current run (when running) and then with the hub
   * of every later run, synchronously before that run's process starts, until unsubscribed.
   */
  watchRuns(containerId: string, fn: (hub: StreamHub) => void): () => void;
  /**
   * Settles at once unless the container's process has exited and its stop is not recorded yet;
   * then once it is (bounded): what inspect waits on so it never shows running a container whose
   * process is gone.
   */
  settled(containerId: string): Promise<void>;
  resize(containerId: string, width: number, height: number): Promise<void>;
}

/** What an exec is created with: the exec kind's config (store/kinds/exec.ts). */
export type ExecCreateConfig = ExecConfig;

export interface ExecInspect {
  ID: string;
  Running: boolean;
  ExitCode: number | null;
  ProcessConfig: { tty: boolean; entrypoint: string; arguments: string[]; privileged: boolean; user: string };
  OpenStdin: boolean;
  OpenStderr: boolean;
  OpenStdout: boolean;
  CanRemove: boolean;
  ContainerID: string;
  DetachKeys: string;
  Pid: number;
}

export interface ExecPort {
  create(containerId: string, config: ExecCreateConfig): string;
  inspect(execId: string): ExecInspect;
  /**
   * Start the exec'd process. `onHub` runs before the process starts so no output is lost.
   * Resolves once the process runs; `exited` resolves with the exit code once it is recorded.
   */
  start(execId: string, opts: { tty: boolean; consoleSize?: [number, number] | null }, onHub?: (hub: StreamHub) => void): Promise<{ exited: Promise<number> }>;
  resize(execId: string, width: number, height: number): Promise<void>;
}

// ---- container inspection and files -----------------------------------------------------------

export interface PathStat {
  name: string;
  size: number;
  /** Go os.FileMode bits (type bits in the high bits, as the reference daemon encodes them). */
  mode: number;
  mtime: string;
  linkTarget: string;
}

/** One-off signals to a container's task (`docker kill`): not desired state, like stdio. */
export interface ContainerSignalPort {
  /** NotFound when the container has no task. */
  kill(containerId: string, signal: number): Promise<void>;
}

export interface ContainerOpsPort {
  top(containerId: string, psArgs: string): Promise<{ Titles: string[]; Processes: string[][] }>;
  /** One stats sample (without precpu_stats). */
  stats(containerId: string): Promise<Record<string, unknown>>;
  changes(containerId: string): Promise<Array<{ Path: string; Kind: number }>>;
  exportRootfs(containerId: string, signal: AbortSignal): Promise<Readable>;
  statPath(containerId: string, path: string): Promise<PathStat>;
  getArchive(containerId: string, path: string, signal: AbortSignal): Promise<{ stat: PathStat; stream: Readable }>;
  putArchive(containerId: string, path: string, body: Readable, opts: { noOverwriteDirNonDir: boolean; copyUIDGID: boolean }, signal: AbortSignal): Promise<void>;
}

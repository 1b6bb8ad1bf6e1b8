// Narrow interfaces the API layer needs for byte streams. `api` declares the ones only it uses;
// `cmd` fills them with driver implementations. A contract a driver implements by name (logs,
// stdio, files, image archives) is declared once in lib/ports/, below both, and re-exported here.
// `api` imports no driver and no reconciler.
import type { ExecConfig } from '../store/kinds/exec.ts';
import type { Readable } from 'node:stream';
import type { StdioHub } from '../lib/ports/stdio.ts';
import type { PathStat } from '../lib/ports/files.ts';

// ---- logs -------------------------------------------------------------------------------------

export type { ContainerLogReader, LogEntry, LogReadOptions } from '../lib/ports/logs.ts';

// ---- image archives ---------------------------------------------------------------------------

export type { ImageArchivePort, ImportOptions, LoadedImage, SaveImage, SavePlatform } from '../lib/ports/images.ts';

// ---- system facts -----------------------------------------------------------------------------

export interface SystemInfoPort {
  /** Figures for GET /info that come from the machine and drivers (cached, never slow). */
  info(): Promise<Record<string, unknown>>;
  /** Component versions for GET /version (supervisor, stdrt). */
  components(): Promise<Array<{ Name: string; Version: string; Details?: Record<string, unknown> }>>;
}

// ---- attach and exec --------------------------------------------------------------------------

/** The in-memory stdio of one running process: output fan-out and stdin (lib/ports/stdio.ts). */
export type StreamHub = StdioHub;

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

export type { PathStat };

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

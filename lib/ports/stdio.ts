// A process's stdio as the layers above the stdio driver (drivers/stdio) see it: the FIFOs'
// streams, the hub that fans the output out (log driver, attach clients), and the port that makes
// them. Declared below both: the container and exec reconcilers and the API's attach use these
// types; the driver implements them.
import type { Readable, Writable } from 'node:stream';

export type StdStream = 'stdout' | 'stderr';

export interface ProcessIO {
  paths: { stdin?: string; stdout: string; stderr?: string };
  stdout: Readable;
  /** null with a tty: the pty merges both streams onto stdout. */
  stderr: Readable | null;
  stdin: Writable | null;
  close(): void;
}

/**
 * A subscriber gets every chunk, in order. One that cannot keep up (a log file on a slow disk, an
 * attach client that reads slowly) returns a Promise (e.g. the 'drain' of its socket): reading
 * the process's output pauses until it settles, so the pipe fills and the process waits on its
 * writes, as with the reference daemon. Nothing is dropped and nothing piles up in memory.
 */
export type Subscriber = (stream: StdStream, chunk: Buffer) => void | Promise<unknown>;

export interface SubscribeOptions {
  /**
   * The subscriber keeps no reference to a chunk once it has returned (it copies what it keeps:
   * the file log writers). When every subscriber of a chunk says so, the hub frees the chunk's
   * memory as soon as they have seen it, instead of leaving it to a collection (lib/release-buffer.ts).
   */
  copies?: boolean;
}

export interface StdioHub {
  subscribe(fn: Subscriber, onEnd?: () => void, opts?: SubscribeOptions): () => void;
  /** Resolves when every output stream has reached EOF (or was closed). */
  ended: Promise<void>;
  writeStdin(buf: Buffer): void;
  closeStdin(): void;
}

export interface StdioPort {
  open(opts: { dir: string; procId: string; stdin: boolean; tty: boolean }): Promise<ProcessIO>;
  hub(io: ProcessIO): StdioHub;
  remove(dir: string, procId: string): Promise<void>;
}

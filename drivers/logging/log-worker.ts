// The log thread's side (a worker_threads entry; ./log-thread.ts starts it): the file writers of
// busy container logs — turning output into entries, batching, rotating, writing — so that work
// and its garbage stay out of the thread that serves the API. Each log's chunks are fed to its
// writer in order; a chunk is acknowledged once the writer took it without asking to wait, which
// is how the daemon's side keeps its backpressure on the container.
import { parentPort } from 'node:worker_threads';
import { releaseBuffer } from '../../lib/release-buffer.ts';
import type { BatchedLogFile, FileLog, Held } from './batched-file.ts';
import { newFileWriter, type FileWriterSpec } from './file-writer.ts';

type Stream = 'stdout' | 'stderr';

/** Messages to the log thread. */
export type ToLogThread =
  | { t: 'open'; id: number; spec: FileWriterSpec; held: Held; limit?: number }
  | { t: 'log'; id: number; stream: Stream; data: Uint8Array }
  | { t: 'limit'; id: number; bytes: number }
  | { t: 'close'; id: number };

/** Messages from it: acknowledged bytes, a log closed (or failed to open), a writer's warning. */
export type FromLogThread =
  | { t: 'ack'; id: number; bytes: number }
  | { t: 'closed'; id: number; error?: string }
  | { t: 'say'; id: number; level: 'info' | 'warn'; fields: Record<string, unknown>; msg: string };

/** An error as it crosses threads. */
export interface PostedError {
  message: string;
  code?: string;
}

interface OpenLog {
  writer: BatchedLogFile<string | Buffer>;
  backlog: Array<[Stream, Buffer]>;
  /** The writer asked to wait: chunks stay in the backlog until it is ready. */
  blocked: boolean;
  closing: boolean;
}

const port = parentPort;
const logs = new Map<number, OpenLog>();
const acks = new Map<number, number>();
let acksScheduled = false;

function post(m: FromLogThread): void {
  port!.postMessage(m);
}

/** Acknowledgements go back once per turn of the loop, not once per chunk. */
function ack(id: number, bytes: number): void {
  acks.set(id, (acks.get(id) ?? 0) + bytes);
  if (acksScheduled) return;
  acksScheduled = true;
  setImmediate(() => {
    acksScheduled = false;
    for (const [i, n] of acks) post({ t: 'ack', id: i, bytes: n });
    acks.clear();
  });
}

/** A writer's log: its messages posted to the daemon's thread, errors as message and code. */
function sayer(id: number): FileLog {
  const say = (level: 'info' | 'warn') => (a: unknown, b?: unknown) => {
    const [obj, msg] = typeof a === 'string' ? [{}, a] : [(a ?? {}) as Record<string, unknown>, String(b ?? '')];
    const fields: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(obj)) fields[k] = v instanceof Error ? ({ message: v.message, code: (v as NodeJS.ErrnoException).code } satisfies PostedError) : v;
    post({ t: 'say', id, level, fields, msg });
  };
  return { info: say('info'), warn: say('warn') } as FileLog;
}

function pump(id: number, l: OpenLog): void {
  while (!l.blocked && l.backlog.length > 0) {
    const [stream, data] = l.backlog.shift()!;
    const bytes = data.length;
    const wait = l.writer.log(stream, data);
    // The writer took what it needs (entries, its own copy of a piece waiting for its newline).
    releaseBuffer(data);
    if (!wait) {
      ack(id, bytes);
      continue;
    }
    l.blocked = true;
    void wait.then(() => {
      l.blocked = false;
      ack(id, bytes);
      pump(id, l);
    });
  }
  if (!l.blocked && l.closing && logs.get(id) === l) {
    logs.delete(id);
    l.writer.close().then(
      () => post({ t: 'closed', id }),
      (err: unknown) => post({ t: 'closed', id, error: (err as Error).message }),
    );
  }
}

function onMessage(m: ToLogThread): void {
  if (m.t === 'open') {
    try {
      const held: Held = { stdout: m.held.stdout && Buffer.from(m.held.stdout), stderr: m.held.stderr && Buffer.from(m.held.stderr) };
      const writer = newFileWriter(m.spec, sayer(m.id), held);
      if (m.limit !== undefined) writer.limitQueue(m.limit);
      logs.set(m.id, { writer, backlog: [], blocked: false, closing: false });
    } catch (err) {
      post({ t: 'closed', id: m.id, error: (err as Error).message });
    }
    return;
  }
  const l = logs.get(m.id);
  if (!l) return;
  if (m.t === 'log') {
    l.backlog.push([m.stream, Buffer.from(m.data.buffer, m.data.byteOffset, m.data.byteLength)]);
  } else if (m.t === 'limit') {
    l.writer.limitQueue(m.bytes);
    return;
  } else {
    l.closing = true;
  }
  pump(m.id, l);
}

port?.on('message', onMessage);

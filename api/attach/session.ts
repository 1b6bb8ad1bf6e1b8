// One attach or exec session over a taken-over connection: copies the process's output to the
// client (multiplexed frames without a TTY, raw bytes with one or on a websocket) and the client's bytes to the
// process's stdin, with the half-close and detach-key rules clients depend on (PROTOCOL.md 6.4).
import type { Duplex } from 'node:stream';
import { invalidArgument } from '../../lib/errors.ts';
import type { StreamHub } from '../ports.ts';
import { frame } from '../stdcopy.ts';

/**
 * Parse `detachKeys` ("ctrl-p,ctrl-q", "a,ctrl-@", ...) into bytes; InvalidArgument when malformed,
 * in the reference's words: "detach keys" for an attach, "escape keys" for an exec's create body.
 */
export function parseDetachKeys(spec: string | undefined, called: 'detach' | 'escape' = 'detach'): Buffer {
  if (spec === undefined || spec === '') return Buffer.from([0x10, 0x11]);
  const out: number[] = [];
  for (const part of spec.split(',')) {
    const k = part.trim();
    if (k.length === 1) {
      out.push(k.charCodeAt(0));
      continue;
    }
    const m = /^ctrl-(.)$/i.exec(k);
    if (!m) throw invalidArgument(`Invalid ${called} keys (${spec}) provided`);
    const c = m[1].toLowerCase();
    if (c >= 'a' && c <= 'z') out.push(c.charCodeAt(0) - 96);
    else if (c === '@') out.push(0);
    else if (c === '[') out.push(27);
    else if (c === '\\') out.push(28);
    else if (c === ']') out.push(29);
    else if (c === '^') out.push(30);
    else if (c === '_') out.push(31);
    else throw invalidArgument(`Invalid ${called} keys (${spec}) provided`);
  }
  return Buffer.from(out);
}

export interface SessionOptions {
  tty: boolean;
  /** Frame output by stream (no TTY on a hijacked connection); raw bytes otherwise. Default: !tty. */
  multiplex?: boolean;
  stdin: boolean;
  stdout: boolean;
  stderr: boolean;
  /** Close the process's stdin when the client's stdin ends (exec, or containers with StdinOnce). */
  closeStdinOnEof: boolean;
  detachKeys: Buffer;
  /** End the session when the process's output ends (attach); exec sessions are closed by their owner. */
  closeOnEnd?: boolean;
  /** Called when the detach keys were seen. */
  onDetach?: () => void;
}

/**
 * Scans client bytes for the detach sequence; returns the bytes to forward and whether the
 * sequence completed. Bytes of a partial match are held back until the match fails.
 */
export class DetachScanner {
  private readonly keys: Buffer;
  private matched = 0;
  constructor(keys: Buffer) {
    this.keys = keys;
  }
  feed(chunk: Buffer): { data: Buffer; detach: boolean } {
    const out: number[] = [];
    for (const b of chunk) {
      if (b === this.keys[this.matched]) {
        this.matched++;
        if (this.matched === this.keys.length) return { data: Buffer.from(out), detach: true };
        continue;
      }
      if (this.matched > 0) {
        for (let i = 0; i < this.matched; i++) out.push(this.keys[i]);
        this.matched = 0;
        if (b === this.keys[0]) {
          this.matched = 1;
          continue;
        }
      }
      out.push(b);
    }
    return { data: Buffer.from(out), detach: false };
  }
}

/** A live session between one client connection and the runs of one process (or container). */
export class AttachSession {
  private readonly sock: Duplex;
  private readonly o: SessionOptions;
  private readonly multiplex: boolean;
  private hub: StreamHub | null = null;
  private unsub: (() => void) | null = null;
  private closed = false;
  private readonly scanner: DetachScanner;
  private readonly pendingStdin: Buffer[] = [];
  private stdinEnded = false;
  private stdinEofGate: Promise<unknown> = Promise.resolve();
  private drainWait: Promise<void> | null = null;
  private stopDrainWait: (() => void) | null = null;
  readonly done: Promise<void>;
  private resolveDone!: () => void;

  constructor(sock: Duplex, o: SessionOptions) {
    this.sock = sock;
    this.o = o;
    this.multiplex = o.multiplex ?? !o.tty;
    this.scanner = new DetachScanner(o.detachKeys);
    this.done = new Promise((r) => (this.resolveDone = r));
    sock.on('error', () => this.close());
    sock.on('close', () => this.close());
    if (o.stdin) {
      sock.on('data', (chunk: Buffer) => this.onClientData(chunk));
      sock.on('end', () => this.onClientEnd());
    } else {
      sock.on('data', () => {});
      sock.on('end', () => {});
    }
    // Node pauses upgraded sockets; a 'data' listener alone does not restart an explicit pause.
    sock.resume();
  }

  /** Begin copying from one run's hub. Output ends when the hub ends. */
  bind(hub: StreamHub): void {
    if (this.closed) return;
    this.unsub?.();
    this.hub = hub;
    for (const b of this.pendingStdin.splice(0)) hub.writeStdin(b);
    if (this.stdinEnded && this.o.closeStdinOnEof && !this.o.tty) this.closeHubStdin(hub);
    this.unsub = hub.subscribe(
      (stream, chunk) => {
        if (stream === 'stdout' && !this.o.stdout) return;
        if (stream === 'stderr' && !this.o.stderr) return;
        // A client reading slower than the process writes pauses the output (nothing is dropped).
        if (!this.write(this.multiplex ? frame(stream === 'stdout' ? 1 : 2, chunk) : chunk)) return this.drained();
      },
      () => {
        if (this.o.closeOnEnd !== false) this.close();
      },
    );
  }

  /** Whether output goes out in multiplexed frames. */
  get multiplexed(): boolean {
    return this.multiplex;
  }

  /** Write stored output (logs=1 replay) or a daemon error frame; false when the client is behind. */
  write(buf: Buffer): boolean {
    if (this.closed || buf.length === 0) return true;
    try {
      return this.sock.write(buf);
    } catch {
      this.close();
      return true;
    }
  }

  /** Settles when the client has taken what was written, or the session ended. */
  drained(): Promise<void> {
    if (this.closed) return Promise.resolve();
    // One wait at a time, whoever asks: no listeners pile up on a long, slow session.
    this.drainWait ??= new Promise<void>((resolve) => {
      const done = () => {
        this.sock.off('drain', done);
        this.sock.off('close', done);
        this.drainWait = null;
        this.stopDrainWait = null;
        resolve();
      };
      this.stopDrainWait = done;
      this.sock.on('drain', done);
      this.sock.on('close', done);
    });
    return this.drainWait;
  }

  /**
   * Hold the client's stdin EOF back until `p` settles. An exec's stdin must stay open until its
   * process has started: the shim opens its end of the FIFO only then, so an EOF passed on
   * earlier is lost (the process never sees it) along with what was written before it.
   */
  closeStdinAfter(p: Promise<unknown>): void {
    this.stdinEofGate = p.catch(() => {});
  }

  systemError(message: string): void {
    this.write(this.multiplex ? frame(3, Buffer.from(message)) : Buffer.from(message));
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.stopDrainWait?.();
    this.unsub?.();
    this.unsub = null;
    this.sock.end();
    const sock = this.sock;
    setTimeout(() => sock.destroy(), 5000).unref();
    this.resolveDone();
  }

  get isClosed(): boolean {
    return this.closed;
  }

  private onClientData(chunk: Buffer): void {
    let data = chunk;
    if (this.o.tty) {
      const r = this.scanner.feed(chunk);
      data = r.data;
      if (r.detach) {
        if (data.length) this.forward(data);
        this.o.onDetach?.();
        this.close();
        return;
      }
    }
    if (data.length) this.forward(data);
  }

  private forward(data: Buffer): void {
    if (this.hub) this.hub.writeStdin(data);
    else this.pendingStdin.push(data);
  }

  private closeHubStdin(hub: StreamHub): void {
    void this.stdinEofGate.then(() => hub.closeStdin());
  }

  private onClientEnd(): void {
    this.stdinEnded = true;
    if (this.o.closeStdinOnEof && !this.o.tty) {
      if (this.hub) this.closeHubStdin(this.hub);
      return;
    }
    // TTY, or a container without StdinOnce: the session ends, the process keeps its stdin.
    this.close();
  }
}

// POST /build?version=2: the classic builder runs the Dockerfile, and its progress is told the way
// BuildKit clients read it, as the reference's builder-next writes it: every StatusResponse
// (vertexes, statuses, logs) marshalled and sent as the base64 `aux` of a `moby.buildkit.trace`
// line, and the image ID last as `{"id":"moby.image.id","aux":{"ID":...}}`.
//
// The classic builder's output is read back into vertexes: each "Step N/T : TEXT" starts one
// (named "[N/T] TEXT"), " ---> Using cache" marks it cached, the " ---> <id>" that ends each step
// completes it, and what a step prints in between (a RUN's output, stderr in red) is its logs. Pull
// progress of a FROM becomes statuses of its vertex. The bookkeeping lines BuildKit has no word for
// (" ---> Running in", "Removing intermediate container") are dropped.
import { createHash } from 'node:crypto';
import type { BuildOutput } from '../../lib/ports/build.ts';
import type { JsonMessage } from '../streams.ts';
import { StatusResponse, type Vertex, type VertexLog, type VertexStatus } from './gen/control.ts';
import type { Timestamp } from './gen/google/protobuf/timestamp.ts';

export const TRACE_ID = 'moby.buildkit.trace';
export const IMAGE_ID = 'moby.image.id';

export interface BuildkitProgress {
  /** What the builder writes to. */
  out: BuildOutput;
  /** The build succeeded: complete what is open, then the `moby.image.id` line. */
  done(imageId: string): void;
  /** The build failed: the open vertex (or a new one) completes with `message` as its error. */
  failed(message: string): void;
}

export function timestamp(d: Date): Timestamp {
  const ms = d.getTime();
  const seconds = Math.floor(ms / 1000);
  return { seconds, nanos: (ms - seconds * 1000) * 1_000_000 };
}

/** The `aux` of a trace line: base64 of the StatusResponse bytes (what Go's json does to a []byte). */
export function encodeTrace(sr: StatusResponse): string {
  return Buffer.from(StatusResponse.encode(sr).finish()).toString('base64');
}

export function decodeTrace(aux: string): StatusResponse {
  return StatusResponse.decode(Buffer.from(aux, 'base64'));
}

const STEP = /^Step (\d+)\/(\d+) : (.*)\n?$/s;
const STEP_END = /^ ---> ([0-9a-f]*)\n$/;
const RED = /^\u001b\[91m([\s\S]*)\u001b\[0m$/;
const DROPPED = [/^ ---> Running in [0-9a-f]+\n$/, /^Removing intermediate container [0-9a-f]+\n$/];

/** Adapts the classic builder's BuildOutput into BuildKit trace lines written through `write`. */
export function buildkitProgress(write: (m: JsonMessage) => void, now: () => Date = () => new Date()): BuildkitProgress {
  // Distinct per build, stable per step within it.
  const salt = `${process.pid}:${Date.now()}:${Math.random()}`;
  const digestOf = (key: string) => `sha256:${createHash('sha256').update(`${salt}\0${key}`).digest('hex')}`;

  let current: Vertex | undefined;
  let previous: Vertex | undefined;

  const emit = (sr: Partial<StatusResponse>) =>
    write({ id: TRACE_ID, aux: encodeTrace({ vertexes: [], statuses: [], logs: [], ...sr }) });
  const snapshot = (v: Vertex): Vertex => ({ ...v, inputs: [...v.inputs] });

  const start = (key: string, name: string) => {
    complete();
    const v: Vertex = { digest: digestOf(key), inputs: previous ? [previous.digest] : [], name, cached: false, started: timestamp(now()), error: '' };
    current = v;
    emit({ vertexes: [snapshot(v)] });
  };
  const complete = (error = '') => {
    const v = current;
    if (!v) return;
    current = undefined;
    previous = v;
    v.completed = timestamp(now());
    v.error = error;
    emit({ vertexes: [snapshot(v)] });
  };
  /** The vertex output goes to: the open one, else the last, else an internal one made for it. */
  const target = (): Vertex => {
    if (current) return current;
    if (previous) return previous;
    start('internal', '[internal] load build definition from Dockerfile');
    return current!;
  };
  const log = (text: string, stream: number) => {
    if (text === '') return;
    const l: VertexLog = { vertex: target().digest, timestamp: timestamp(now()), stream, msg: Buffer.from(text) };
    emit({ logs: [l] });
  };

  const out: BuildOutput = {
    stream(text) {
      const step = STEP.exec(text);
      if (step) {
        const [, n, total, original] = step;
        start(`step:${n}/${total}:${original}`, `[${n}/${total}] ${original.replace(/\n$/, '')}`);
        return;
      }
      if (text === ' ---> Using cache\n') {
        if (current) {
          current.cached = true;
          emit({ vertexes: [snapshot(current)] });
        }
        return;
      }
      if (current && STEP_END.test(text)) return complete();
      if (DROPPED.some((re) => re.test(text))) return;
      const red = RED.exec(text);
      if (red) return log(red[1], 2);
      log(text, 1);
    },
    // The classic builder's per-stage `{ID}` aux: BuildKit's stream has only the final moby.image.id.
    aux() {},
    progress(line) {
      const status = typeof line.status === 'string' ? line.status : '';
      const id = typeof line.id === 'string' ? line.id : '';
      if (!id) return log(status ? `${status}\n` : '', 1);
      const detail = (line.progressDetail ?? {}) as { current?: number; total?: number };
      const t = timestamp(now());
      const s: VertexStatus = {
        ID: id, vertex: target().digest, name: status, current: detail.current ?? 0, total: detail.total ?? 0,
        timestamp: t, started: t, completed: /complete|already exists/i.test(status) ? t : undefined,
      };
      emit({ statuses: [s] });
    },
  };

  return {
    out,
    done(imageId) {
      complete();
      write({ id: IMAGE_ID, aux: { ID: imageId } });
    },
    failed(message) {
      if (!current) start('failure', previous ? 'exporting to image' : '[internal] load build definition from Dockerfile');
      complete(message);
    },
  };
}

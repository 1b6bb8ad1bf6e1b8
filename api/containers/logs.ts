// GET /containers/{id}/logs: headers flushed at once, one frame per entry (multiplexed without a
// TTY), follow until the container stops, errors after the header go in band.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ContainerSpec, ContainerStatus, Resource } from '../../store/types.ts';
import { KIND } from '../../store/types.ts';
import type { ContainerLogReader } from '../ports.ts';
import type { ApiStore } from './store.ts';

export interface LogsQuery {
  stdout: boolean;
  stderr: boolean;
  follow: boolean;
  timestamps: boolean;
  details: boolean;
  since: number;
  until: number;
  tail: number;
  apiVersion: number;
}

export function frame(stream: number, payload: Buffer): Buffer {
  const h = Buffer.alloc(8);
  h[0] = stream;
  h.writeUInt32BE(payload.length, 4);
  return Buffer.concat([h, payload]);
}

/** The abort reason when the answer ends (made once: a default AbortError costs a stack trace per request). */
const DONE = new Error('logs request ended');

const running = (s: ContainerStatus) => s.phase === 'running' || s.phase === 'paused' || s.phase === 'restarting';

export async function streamLogs(
  req: FastifyRequest,
  reply: FastifyReply,
  c: Resource<ContainerSpec, ContainerStatus>,
  store: ApiStore,
  reader: ContainerLogReader,
  o: LogsQuery,
): Promise<void> {
  const tty = !!c.spec.config.Tty;
  const contentType = !tty && o.apiVersion >= 1.42 ? 'application/vnd.docker.multiplexed-stream' : 'application/vnd.docker.raw-stream';
  const abort = new AbortController();
  const stopFollowing = new AbortController();
  reply.hijack();
  const res = reply.raw;
  res.on('close', () => abort.abort(DONE));
  res.writeHead(200, { 'Content-Type': contentType });
  const follow = o.follow && running(c.status);
  // A follower learns at once that the stream is open; history alone goes out with its first
  // bytes (a short log: headers and body in one write).
  if (follow) {
    res.flushHeaders();
    store
      .waitFor<ContainerSpec, ContainerStatus>(KIND.container, c.name, (r) => !r || !running(r.status), { signal: abort.signal })
      .then(() => stopFollowing.abort(), () => {});
  }
  try {
    const iter = reader.read(c.name, { stdout: o.stdout, stderr: o.stderr, follow, since: o.since, until: o.until, tail: o.tail }, abort.signal, stopFollowing.signal);
    let batch: Buffer[] = [];
    let size = 0;
    for await (const e of iter) {
      let prefix = '';
      if (o.timestamps) prefix += `${e.time} `;
      if (o.details) {
        const attrs = e.attrs ? Object.keys(e.attrs).sort().map((k) => `${encodeURIComponent(k)}=${encodeURIComponent(e.attrs![k])}`).join(',') : '';
        prefix += `${attrs} `;
      }
      const payload = prefix ? Buffer.concat([Buffer.from(prefix), e.line]) : e.line;
      const out = tty ? payload : frame(e.stream === 'stdout' ? 1 : 2, payload);
      batch.push(out);
      size += out.length;
      // Coalesce writes when reading history; flush each entry promptly when following.
      if (size > 64 * 1024 || follow) {
        if (!res.write(Buffer.concat(batch))) await new Promise((r) => res.once('drain', r));
        batch = [];
        size = 0;
      }
    }
    res.end(batch.length ? Buffer.concat(batch) : undefined);
  } catch (err) {
    if (!abort.signal.aborted) {
      const msg = Buffer.from(`Error grabbing logs: ${err instanceof Error ? err.message : String(err)}`);
      res.write(tty ? msg : frame(3, msg));
    }
  } finally {
    abort.abort(DONE);
    if (!res.writableEnded) res.end();
  }
  void req;
}

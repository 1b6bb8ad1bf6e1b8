// JSON-lines progress responses (load, import, pull, push, build): a chunked `application/json`
// body of one JSON object per line, flushed as written. Errors before the first line can still be
// real HTTP errors; after it they travel in band as `{"errorDetail":{...},"error":...}`.
import type { FastifyReply } from 'fastify';
import { toHttpError } from './errors.ts';
import type { JsonMessage } from '../lib/ports/registry.ts';

export type { JsonMessage };

export interface JsonLinesWriter {
  /** True once the 200 header has been sent. */
  readonly started: boolean;
  /** True when the client went away (writes are dropped). */
  readonly closed: boolean;
  /** Aborted when the client disconnects. */
  readonly signal: AbortSignal;
  /** Send the 200 header now (flushes it to the client). Idempotent. */
  begin(): void;
  write(msg: JsonMessage): void;
  stream(text: string): void;
  status(text: string, extra?: Omit<JsonMessage, 'status'>): void;
  /** Write the in-band error line (begins the response if needed). */
  error(err: unknown): void;
  end(): void;
}

export function errorLine(err: unknown): JsonMessage {
  const { message } = toHttpError(err);
  return { errorDetail: { message }, error: message };
}

/** Take over the reply and write JSON lines to it; nothing is sent until `begin()` or the first write. */
export function jsonLines(reply: FastifyReply): JsonLinesWriter {
  const res = reply.raw;
  const abort = new AbortController();
  let started = false;
  let closed = false;
  res.on('close', () => {
    if (!res.writableFinished) {
      closed = true;
      abort.abort();
    }
  });
  res.on('error', () => {
    closed = true;
    abort.abort();
  });

  const begin = (): void => {
    if (started) return;
    started = true;
    reply.hijack();
    res.statusCode = 200;
    res.setHeader('Content-Type', 'application/json');
    res.flushHeaders();
  };
  const write = (msg: JsonMessage): void => {
    begin();
    if (closed || res.writableEnded) return;
    res.write(`${JSON.stringify(msg)}\n`);
  };
  return {
    get started() {
      return started;
    },
    get closed() {
      return closed;
    },
    signal: abort.signal,
    begin,
    write,
    stream: (text) => write({ stream: text }),
    status: (text, extra) => write({ status: text, ...extra }),
    error: (err) => write(errorLine(err)),
    end: () => {
      begin();
      if (!res.writableEnded) res.end();
    },
  };
}

/**
 * Run a progress operation. With `errorsBeforeStartAsHttp`, a failure before any output is
 * rethrown (so the error handler answers with its real status); any other failure becomes the
 * final in-band error line. The response is always ended.
 */
export async function runJsonLines(
  reply: FastifyReply,
  fn: (out: JsonLinesWriter) => Promise<void>,
  opts: { errorsBeforeStartAsHttp?: boolean } = {},
): Promise<void> {
  const out = jsonLines(reply);
  try {
    await fn(out);
  } catch (err) {
    if (!out.started && opts.errorsBeforeStartAsHttp) throw err;
    if (toHttpError(err).status >= 500) reply.log.error({ err }, 'progress stream failed');
    out.error(err);
  }
  out.end();
}

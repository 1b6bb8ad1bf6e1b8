// The one table that turns error classes into HTTP statuses, and the answers to every failure with
// the `{"message": ...}` body Engine API clients parse.
import type { HttpReply, HttpRequest } from './server/reply.ts';
import { EngineError, errorCode, isSystemError, systemErrorMessage, type ErrorCode } from '../lib/errors.ts';

/**
 * EngineError code → HTTP status, as the reference daemon maps its error classes.
 * FailedPrecondition is 400 like moby's mapping of gRPC FailedPrecondition; Canceled is a plain 500
 * there (the client has usually gone by then anyway).
 */
export const HTTP_STATUS: Readonly<Record<ErrorCode, number>> = {
  NotFound: 404,
  AlreadyExists: 409,
  Conflict: 409,
  InvalidArgument: 400,
  FailedPrecondition: 400,
  NotModified: 304,
  PermissionDenied: 403,
  Unauthorized: 401,
  Unavailable: 503,
  NotImplemented: 501,
  Canceled: 500,
  Internal: 500,
};

export interface HttpError {
  status: number;
  message: string;
}

/** Status and message for anything a handler may throw: EngineErrors, HTTP-level errors (HttpStatusError), zod errors, junk. */
export function toHttpError(err: unknown): HttpError {
  if (err instanceof EngineError) return { status: HTTP_STATUS[err.code], message: err.message };
  const fe = err as { issues?: unknown[]; name?: string; message?: unknown; statusCode?: unknown };
  if (fe && typeof fe === 'object') {
    if (fe.name === 'ZodError' && Array.isArray(fe.issues)) return { status: 400, message: zodMessage(fe.issues) };
    const code = errorCode(err);
    if (code !== 'Internal') return { status: HTTP_STATUS[code], message: String(fe.message ?? '') };
    if (typeof fe.statusCode === 'number' && fe.statusCode >= 400 && fe.statusCode < 500) {
      return { status: fe.statusCode, message: String(fe.message ?? '') };
    }
  }
  if (isSystemError(err)) return { status: 500, message: systemErrorMessage(err) };
  const message = err instanceof Error ? err.message : String(err);
  return { status: 500, message: message || 'internal error' };
}

function zodMessage(issues: unknown[]): string {
  const first = issues[0] as { path?: unknown[]; message?: string } | undefined;
  if (!first) return 'invalid request';
  const path = Array.isArray(first.path) && first.path.length ? `${first.path.join('.')}: ` : '';
  return `${path}${first.message ?? 'invalid value'}`;
}

/** HTTP status for anything thrown (hand-written responses: upgrade paths). */
export function errorStatus(err: unknown): number {
  return toHttpError(err).status;
}

/** Send an error response, or only log it when the response is already under way (streams, hijack). */
export function sendError(err: unknown, req: HttpRequest, reply: HttpReply): void {
  const { status, message } = toHttpError(err);
  if (status >= 500) req.log.error({ err }, 'request failed');
  else req.log.debug({ err: message, status }, 'request rejected');
  if (reply.sent || reply.raw.headersSent) {
    if (!reply.raw.writableEnded) reply.raw.destroy();
    return;
  }
  if (status === 304) {
    reply.code(304).send();
    return;
  }
  reply.code(status).type('application/json').send({ message });
}

/** The answer when no route matches; an OPTIONS pre-flight is simply 200. */
export function notFound(req: HttpRequest, reply: HttpReply): void {
  if (req.method === 'OPTIONS') {
    reply.code(200).send();
    return;
  }
  reply.code(404).type('application/json').send({ message: 'page not found' });
}

// The one table that turns error classes into HTTP statuses, and the fastify hooks that answer
// every failure with the `{"message": ...}` body Engine API clients parse.
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
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

/** Status and message for anything a handler may throw: EngineErrors, fastify's own errors, zod errors, junk. */
export function toHttpError(err: unknown): HttpError {
  if (err instanceof EngineError) return { status: HTTP_STATUS[err.code], message: err.message };
  const fe = err as Partial<FastifyError> & { issues?: unknown[]; name?: string };
  if (fe && typeof fe === 'object') {
    if (fe.name === 'ZodError' && Array.isArray(fe.issues)) return { status: 400, message: zodMessage(fe.issues) };
    if (typeof fe.code === 'string' && fe.code.startsWith('FST_')) return fastifyError(fe);
    if (fe.validation) return { status: 400, message: String(fe.message ?? 'invalid request') };
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

function fastifyError(fe: Partial<FastifyError>): HttpError {
  const message = String(fe.message ?? '');
  switch (fe.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return { status: 413, message: 'request body too large' };
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_VALIDATION':
      return { status: 400, message };
    default: {
      const status = typeof fe.statusCode === 'number' && fe.statusCode >= 400 ? fe.statusCode : 500;
      return { status: status === 415 ? 400 : status, message };
    }
  }
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
export function sendError(err: unknown, req: FastifyRequest, reply: FastifyReply): void {
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

/** Error handler, 404 handler and the OPTIONS pre-flight answer. */
export function installErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((err, req, reply) => sendError(err, req, reply));
  app.setNotFoundHandler((req, reply) => {
    if (req.method === 'OPTIONS') {
      reply.code(200).send();
      return;
    }
    reply.code(404).type('application/json').send({ message: 'page not found' });
  });
}

// The fixed set of error classes every layer throws. Converted to HTTP in exactly one table
// (api/errors.ts). Drivers translate their own failures (gRPC status, errno, exit codes) into these.

export type ErrorCode =
  | 'NotFound'
  | 'AlreadyExists'
  | 'Conflict'
  | 'InvalidArgument'
  | 'FailedPrecondition'
  | 'Unavailable'
  | 'NotImplemented'
  | 'PermissionDenied'
  | 'Unauthorized'
  | 'Canceled'
  | 'NotModified'
  | 'Internal';

export class EngineError extends Error {
  readonly code: ErrorCode;
  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.name = `EngineError(${code})`;
  }
}

export const notFound = (msg: string, cause?: unknown) => new EngineError('NotFound', msg, { cause });
export const alreadyExists = (msg: string, cause?: unknown) => new EngineError('AlreadyExists', msg, { cause });
export const conflict = (msg: string, cause?: unknown) => new EngineError('Conflict', msg, { cause });
export const invalidArgument = (msg: string, cause?: unknown) => new EngineError('InvalidArgument', msg, { cause });
export const failedPrecondition = (msg: string, cause?: unknown) => new EngineError('FailedPrecondition', msg, { cause });
export const unavailable = (msg: string, cause?: unknown) => new EngineError('Unavailable', msg, { cause });
export const notImplemented = (msg: string, cause?: unknown) => new EngineError('NotImplemented', msg, { cause });
export const permissionDenied = (msg: string, cause?: unknown) => new EngineError('PermissionDenied', msg, { cause });
export const notModified = (msg = '') => new EngineError('NotModified', msg);
export const internal = (msg: string, cause?: unknown) => new EngineError('Internal', msg, { cause });

export function errorCode(err: unknown): ErrorCode {
  if (err instanceof EngineError) return err.code;
  if (err && typeof err === 'object' && 'code' in err && typeof (err as { code: unknown }).code === 'string') {
    const c = (err as { code: string }).code;
    if (isErrorCode(c)) return c;
  }
  return 'Internal';
}

export function isCode(err: unknown, code: ErrorCode): boolean {
  return errorCode(err) === code;
}

/**
 * A dependency that could not be reached at all (its connection refused or dropped: the
 * supervisor restarting), as the driver marks it: worth the same request again once it is back,
 * unlike a refusal or a deadline.
 */
export function isUnreachable(err: unknown): boolean {
  return isCode(err, 'Unavailable') && (err as { unreachable?: unknown }).unreachable === true;
}

const CODES = new Set<string>([
  'NotFound', 'AlreadyExists', 'Conflict', 'InvalidArgument', 'FailedPrecondition', 'Unavailable',
  'NotImplemented', 'PermissionDenied', 'Unauthorized', 'Canceled', 'NotModified', 'Internal',
]);
function isErrorCode(c: string): c is ErrorCode {
  return CODES.has(c);
}

/** An error from a system call (Node's fs, net): it has an errno and names the call. */
export function isSystemError(err: unknown): err is NodeJS.ErrnoException & { syscall: string } {
  return err instanceof Error && typeof (err as NodeJS.ErrnoException).syscall === 'string' && typeof (err as NodeJS.ErrnoException).errno === 'number';
}

/**
 * A system error as the reference words it (Go's *PathError): `write /var/lib/engine/tmp/x: no
 * space left on device`, not Node's `ENOSPC: no space left on device, write`.
 */
export function systemErrorMessage(err: NodeJS.ErrnoException & { syscall: string }): string {
  const text = /^[A-Z0-9_]+: ([^,]+)/.exec(err.message)?.[1] ?? err.message;
  return `${err.syscall}${err.path ? ` ${err.path}` : ''}: ${text}`;
}

// Runs the host's network tools (ip, iptables, nsenter) and translates their failures into the
// engine's error classes, so callers branch on codes instead of parsing stderr.
import { execa } from 'execa';
import { EngineError, type ErrorCode } from '../../lib/errors.ts';

export interface RunOptions {
  /** Written to the tool's stdin (e.g. an `ip -batch -` script). */
  input?: string;
  signal?: AbortSignal;
  /** Deadline for the tool; defaults to 10 s (iptables may wait on the xtables lock). */
  timeoutMs?: number;
}

export class CommandError extends EngineError {
  readonly stderr: string;
  readonly exitCode: number | undefined;
  constructor(code: ErrorCode, message: string, stderr: string, exitCode: number | undefined, cause?: unknown) {
    super(code, message, { cause });
    this.stderr = stderr;
    this.exitCode = exitCode;
  }
}

export async function run(file: string, args: readonly string[], opts: RunOptions = {}): Promise<string> {
  const res = await execa(file, args, {
    input: opts.input,
    cancelSignal: opts.signal,
    timeout: opts.timeoutMs ?? 10_000,
    reject: false,
    stripFinalNewline: true,
    env: { LC_ALL: 'C' },
    extendEnv: true,
  });
  if (!res.failed) return res.stdout;
  const stderr = String(res.stderr ?? '').trim();
  const cmd = `${file} ${args.join(' ')}`;
  if ((res.cause as NodeJS.ErrnoException | undefined)?.code === 'ENOENT') {
    throw new CommandError('Unavailable', `${file} is not installed`, stderr, undefined, res.cause);
  }
  if (res.isCanceled) throw new CommandError('Canceled', `${cmd}: canceled`, stderr, res.exitCode, res.cause);
  if (res.timedOut) throw new CommandError('Unavailable', `${cmd}: timed out`, stderr, res.exitCode, res.cause);
  throw new CommandError(classify(stderr), `${cmd}: ${stderr || `exit code ${res.exitCode}`}`, stderr, res.exitCode);
}

function classify(stderr: string): ErrorCode {
  if (/Cannot find device|does not exist|No such (file|device|process)|No chain\/target\/match|Bad rule \(does a matching rule exist/i.test(stderr)) return 'NotFound';
  if (/File exists|Chain already exists/i.test(stderr)) return 'AlreadyExists';
  if (/Operation not permitted|Permission denied/i.test(stderr)) return 'PermissionDenied';
  if (/Invalid argument|invalid|Error: argument|bad argument|unknown option/i.test(stderr)) return 'InvalidArgument';
  return 'Internal';
}

// Runs the host's network tools (ip, iptables, nsenter) and translates their failures into the
// engine's error classes, so callers branch on codes instead of parsing stderr.
import { spawn } from 'node:child_process';
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

/**
 * Run a tool and return its stdout. Plain child_process rather than execa: this sits on the
 * container start path (veth attach) and the wrapper's per-spawn overhead showed up there.
 */
export function run(file: string, args: readonly string[], opts: RunOptions = {}): Promise<string> {
  const cmd = `${file} ${args.join(' ')}`;
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, {
      stdio: [opts.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
      env: { ...process.env, LC_ALL: 'C' },
      signal: opts.signal,
      killSignal: 'SIGKILL',
    });
    // Our own timer: spawn's `timeout` outlives a failed spawn (ENOENT) and holds the loop open.
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, opts.timeoutMs ?? 10_000);
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout!.on('data', (b: Buffer) => out.push(b));
    child.stderr!.on('data', (b: Buffer) => err.push(b));
    if (opts.input !== undefined) {
      child.stdin!.on('error', () => {}); // the tool may exit before reading everything
      child.stdin!.end(opts.input);
    }
    let spawnError: NodeJS.ErrnoException | undefined;
    child.on('error', (e: NodeJS.ErrnoException) => {
      spawnError = e;
    });
    child.on('close', (code, sig) => {
      clearTimeout(timer);
      const stdout = Buffer.concat(out).toString('utf8').replace(/\n$/, '');
      const stderr = Buffer.concat(err).toString('utf8').trim();
      if (spawnError?.code === 'ENOENT') return reject(new CommandError('Unavailable', `${file} is not installed`, stderr, undefined, spawnError));
      if (spawnError?.name === 'AbortError' || opts.signal?.aborted) return reject(new CommandError('Canceled', `${cmd}: canceled`, stderr, undefined, spawnError));
      if (spawnError) return reject(new CommandError('Internal', `${cmd}: ${spawnError.message}`, stderr, undefined, spawnError));
      if (timedOut) return reject(new CommandError('Unavailable', `${cmd}: timed out after ${opts.timeoutMs ?? 10_000} ms`, stderr, undefined));
      if (sig) return reject(new CommandError('Internal', `${cmd}: killed by ${sig}`, stderr, undefined));
      if (code === 0) return resolve(stdout);
      reject(new CommandError(classify(stderr), `${cmd}: ${stderr || `exit code ${code}`}`, stderr, code ?? undefined));
    });
  });
}

function classify(stderr: string): ErrorCode {
  if (/Cannot find device|does not exist|No such (file|device|process)|No chain\/target\/match|Bad rule \(does a matching rule exist/i.test(stderr)) return 'NotFound';
  if (/File exists|Chain already exists/i.test(stderr)) return 'AlreadyExists';
  if (/Operation not permitted|Permission denied/i.test(stderr)) return 'PermissionDenied';
  if (/Invalid argument|invalid|Error: argument|bad argument|unknown option/i.test(stderr)) return 'InvalidArgument';
  return 'Internal';
}

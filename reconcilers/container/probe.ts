// Healthcheck probes as exec processes in the running container (what `docker exec` runs them
// through): output of stdout and stderr together, cut at 4 KiB; a probe past its timeout is
// killed and answers -1 with the reference daemon's text; one that cannot start answers -1 with why.
import { rfc3339Nano } from '../../lib/ids.ts';
import type { SupervisorPort } from './deps.ts';
import type { ExecService } from '../exec/port.ts';
import { formatGoDuration } from '../../lib/units.ts';
import { MAX_OUTPUT, type ProbePort, type ProbeResult } from './health.ts';

const SIGKILL = 9;

/**
 * `counted`, when given, hears of every probe and whether it could not be run at all (what the
 * reference's failed-health-checks counter counts: not a non-zero exit, not a timeout).
 */
export function execProbes(execs: Pick<ExecService, 'create' | 'start'>, supervisor: Pick<SupervisorPort, 'killProcess'>, counted?: (failed: boolean) => void): ProbePort {
  return {
    async run(containerId: string, cmd: string[], timeoutMs: number): Promise<ProbeResult> {
      const start = rfc3339Nano();
      const done = (exitCode: number, output: string, failed = false): ProbeResult => {
        counted?.(failed);
        return { exitCode, output, start, end: rfc3339Nano() };
      };
      const chunks: Buffer[] = [];
      let size = 0;
      let execId = '';
      try {
        execId = execs.create(containerId, {
          User: '', Privileged: false, Tty: false, AttachStdin: false, AttachStdout: true, AttachStderr: true,
          DetachKeys: '', Env: [], WorkingDir: '', Cmd: cmd,
        }, { probe: true });
        const { exited } = await execs.start(execId, { tty: false }, (hub) => {
          hub.subscribe((_stream, chunk) => {
            if (size >= MAX_OUTPUT) return;
            chunks.push(chunk);
            size += chunk.length;
          });
        });
        let timer: NodeJS.Timeout | undefined;
        const timedOut = new Promise<'timeout'>((resolve) => {
          timer = setTimeout(() => resolve('timeout'), timeoutMs);
        });
        const code = await Promise.race([exited, timedOut]);
        clearTimeout(timer);
        if (code === 'timeout') {
          await supervisor.killProcess(containerId, execId, SIGKILL).catch(() => {});
          return done(-1, `Health check exceeded timeout (${formatGoDuration(timeoutMs * 1e6)})`);
        }
        return done(code, Buffer.concat(chunks).subarray(0, MAX_OUTPUT).toString('utf8'));
      } catch (err) {
        return done(-1, err instanceof Error ? err.message : String(err), true);
      }
    },
  };
}

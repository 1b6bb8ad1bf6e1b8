import { constants } from 'node:os';
import { invalidArgument } from '../../lib/errors.ts';
import type { ContainerSpec, ContainerStatus } from '../../store/kinds/container.ts';

const BY_NAME = constants.signals as Record<string, number>;

/** Signal number from "SIGTERM", "TERM", "term" or "15"; InvalidArgument otherwise. */
export function parseSignal(input: string | number | undefined, fallback = 'SIGTERM'): number {
  const raw = input === undefined || input === '' ? fallback : input;
  if (typeof raw === 'number' || /^\d+$/.test(raw)) {
    const n = Number(raw);
    if (n > 0 && n <= 64) return n;
    throw invalidArgument(`Invalid signal: ${raw}`);
  }
  const up = raw.toUpperCase();
  const name = up.startsWith('SIG') ? up : `SIG${up}`;
  const rt = /^SIGRTMIN(?:\+(\d+))?$/.exec(name) ?? /^SIGRTMAX(?:-(\d+))?$/.exec(name);
  if (rt) return name.startsWith('SIGRTMIN') ? 34 + Number(rt[1] ?? 0) : 64 - Number(rt[1] ?? 0);
  const n = BY_NAME[name];
  if (n === undefined) throw invalidArgument(`Invalid signal: ${raw}`);
  return n;
}

/**
 * The signal and grace period (seconds, negative: no end) of a stop. The options of `docker
 * stop/restart` apply to the stop they asked for; a container stopped by the daemon (a leftover)
 * uses its own configuration.
 */
export function stopParams(r: { spec: ContainerSpec; status: ContainerStatus }): { signal: string | undefined; timeout: number } {
  const spec = r.spec;
  const asked = spec.desired === 'stopped' || spec.runGeneration > r.status.runGeneration;
  const opts = asked ? spec.stopOptions : undefined;
  return { signal: opts?.signal || spec.config.StopSignal, timeout: opts?.timeout ?? spec.config.StopTimeout ?? 10 };
}

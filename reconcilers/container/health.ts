// Healthchecks: the container's Config.Healthcheck (merged with the image's at create) probed
// inside the running container, as the reference daemon does it: the first probe an interval after
// the start (the start interval while the start period lasts), a probe that does not finish within
// the timeout fails with exit code -1, exit 0 is healthy and anything else a failure; `retries`
// failures in a row make it unhealthy, failures inside the start period do not count until a first
// success. State.Health keeps the failing streak and the last five results.
//
// Not a lifecycle state of its own: a step of the reconcile while the machine is running. The
// next probe's due time is a fact in status (`healthNextAt`) and the wait is a requeue; a probe
// runs beside the reconcile (never holding a worker) and its end enqueues the container.
import type { ContainerConfig, ContainerStatus, HealthState } from '../../store/kinds/container.ts';
import type { StagedStatus } from './staged-status.ts';
import { KeySource } from '../../controllers/source.ts';

const MS = 1_000_000; // nanoseconds per millisecond, the API's unit
export const HEALTH_DEFAULTS = { intervalMs: 30_000, timeoutMs: 30_000, startPeriodMs: 0, startIntervalMs: 5_000, retries: 3 } as const;
const MAX_LOG = 5;
export const MAX_OUTPUT = 4096;

export interface HealthConfig {
  /** The probe's argv inside the container. */
  cmd: string[];
  intervalMs: number;
  timeoutMs: number;
  startPeriodMs: number;
  startIntervalMs: number;
  retries: number;
}

interface HealthcheckField {
  Test?: string[] | null;
  Interval?: number;
  Timeout?: number;
  StartPeriod?: number;
  StartInterval?: number;
  Retries?: number;
}

const ms = (ns: number | undefined, dflt: number) => (ns && ns > 0 ? Math.max(1, Math.round(ns / MS)) : dflt);

/** The healthcheck to run for a container's config, or null (none, or NONE). */
export function healthConfigOf(config: Pick<ContainerConfig, 'Healthcheck'> & { Shell?: string[] | null }): HealthConfig | null {
  const hc = config.Healthcheck as HealthcheckField | null | undefined;
  const test = hc?.Test ?? [];
  if (!hc || test.length === 0 || test[0] === 'NONE') return null;
  let cmd: string[];
  if (test[0] === 'CMD') cmd = test.slice(1);
  else if (test[0] === 'CMD-SHELL') cmd = [...(config.Shell?.length ? config.Shell : ['/bin/sh', '-c']), test.slice(1).join(' ')];
  else return null;
  if (cmd.length === 0) return null;
  return {
    cmd,
    intervalMs: ms(hc.Interval, HEALTH_DEFAULTS.intervalMs),
    timeoutMs: ms(hc.Timeout, HEALTH_DEFAULTS.timeoutMs),
    startPeriodMs: ms(hc.StartPeriod, HEALTH_DEFAULTS.startPeriodMs),
    startIntervalMs: ms(hc.StartInterval, HEALTH_DEFAULTS.startIntervalMs),
    retries: hc.Retries && hc.Retries > 0 ? hc.Retries : HEALTH_DEFAULTS.retries,
  };
}


export interface ProbeResult {
  exitCode: number;
  output: string;
  start: string;
  end: string;
}

/** Runs one probe command in a running container; never rejects (a failure to run is exit code -1). */
export interface ProbePort {
  run(containerId: string, cmd: string[], timeoutMs: number): Promise<ProbeResult>;
}

/** The health state after one probe, as the reference daemon counts it. */
export function applyProbe(h: HealthState, r: ProbeResult, hc: HealthConfig, startedAt: string): HealthState {
  const log = [...h.Log, { Start: r.start, End: r.end, ExitCode: r.exitCode, Output: r.output }].slice(-MAX_LOG);
  if (r.exitCode === 0) return { Status: 'healthy', FailingStreak: 0, Log: log };
  // Never healthy yet and still in the start period: the failure does not count.
  const inStart = h.Status === 'starting' && Date.parse(r.start) - Date.parse(startedAt) < hc.startPeriodMs;
  if (inStart) return { ...h, Log: log };
  const streak = h.FailingStreak + 1;
  return { Status: streak >= hc.retries ? 'unhealthy' : h.Status, FailingStreak: streak, Log: log };
}

/** When the probe after one at `now` is due: the start interval while starting inside the start period. */
function nextDue(now: number, h: HealthState, hc: HealthConfig, startedAt: string): number {
  const inStart = h.Status === 'starting' && now - Date.parse(startedAt) < hc.startPeriodMs;
  return now + (inStart ? hc.startIntervalMs : hc.intervalMs);
}

interface InFlight {
  run: string;
  result?: ProbeResult;
}

export class HealthChecks {
  private readonly probes: ProbePort;
  private readonly inFlight = new Map<string, InFlight>();
  /** A probe ended: the container's key, for its controller. */
  readonly ends = new KeySource();

  constructor(probes: ProbePort) {
    this.probes = probes;
  }

  /**
   * One step while the container runs: reset the state for a new run, record a finished probe,
   * start a due one. Stages what changed; returns in how many ms to look again (undefined: no
   * healthcheck).
   */
  step(id: string, config: ContainerConfig, status: StagedStatus, now = Date.now()): number | undefined {
    const hc = healthConfigOf(config);
    if (!hc) return undefined;
    let s: ContainerStatus = status.get(id);
    const run = s.startedAt;
    if (s.healthRun !== run || !s.health) {
      const first = Date.parse(run) + (hc.startPeriodMs > 0 ? hc.startIntervalMs : hc.intervalMs);
      status.stage(id, (x) => ({ ...x, health: { Status: 'starting', FailingStreak: 0, Log: [] }, healthRun: run, healthNextAt: first }));
      s = status.get(id);
    }
    const f = this.inFlight.get(id);
    if (f && f.run === run) {
      if (!f.result) return hc.timeoutMs + 1000;
      this.inFlight.delete(id);
      const result = f.result;
      const health = applyProbe(s.health!, result, hc, run);
      const at = Date.parse(result.end) || now;
      status.stage(id, (x) => ({ ...x, health, healthNextAt: nextDue(at, health, hc, run) }));
      s = status.get(id);
    } else if (f) {
      this.inFlight.delete(id);
    }
    const due = s.healthNextAt ?? now;
    if (now < due) return due - now;
    const entry: InFlight = { run };
    this.inFlight.set(id, entry);
    void this.probes.run(id, hc.cmd, hc.timeoutMs).then((r) => {
      entry.result = r;
      this.ends.emit(id);
    });
    return hc.timeoutMs + 1000;
  }

  /** The run ended: a probe still going is of no interest. */
  forget(id: string): void {
    this.inFlight.delete(id);
  }
}

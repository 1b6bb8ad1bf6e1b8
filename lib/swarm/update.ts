// A service's rolling update and rollback as swarmkit's updater runs them, one pure step at a time
// (lib/swarm/orchestrate.ts calls it per service): the slots whose live task no longer has the
// service's spec are replaced UpdateConfig.Parallelism at a time (RollbackConfig while rolling
// back), the next batch once the last one's replacements have run for Delay; stop-first shuts the
// old task down and starts its replacement once it has stopped, start-first starts the replacement
// and shuts the old task down once the new one runs. A replacement that fails or ends within
// Monitor of running is a failure; more than MaxFailureRatio of the slots failing is the
// FailureAction's: pause, continue, or rollback (to PreviousSpec). UpdateStatus tells it with the
// reference's states and messages; the update is complete once the last replacements have run
// for Monitor.
import { canonicalJson } from '../canonical-json.ts';
import { shownTaskSpec, type ServiceSpec } from './service-spec.ts';
import { isTerminal, type TaskRecord } from './task.ts';

export type UpdateState = 'updating' | 'paused' | 'completed' | 'rollback_started' | 'rollback_paused' | 'rollback_completed';

export interface UpdateStatus {
  State: UpdateState;
  StartedAt?: string;
  CompletedAt?: string;
  Message: string;
}

export interface UpdateConfig {
  Parallelism: number;
  /** ns */
  Delay: number;
  FailureAction: string;
  /** ns */
  Monitor: number;
  MaxFailureRatio: number;
  Order: string;
}

export const UPDATE_DEFAULTS: UpdateConfig = { Parallelism: 1, Delay: 0, FailureAction: 'pause', Monitor: 5_000_000_000, MaxFailureRatio: 0, Order: 'stop-first' };

/** The states a task's run ends in by itself. */
export const ENDED: ReadonlySet<string> = new Set(['complete', 'failed', 'rejected']);

/** A task meant to run (a job's: to run to completion) whose run has not ended. */
export const isLive = (t: TaskRecord) => (t.DesiredState === 'running' || t.DesiredState === 'ready' || t.DesiredState === 'complete') && !isTerminal(t.Status.State);

/** The template a task runs: the service's TaskTemplate without Runtime, as the reference shows a task's Spec. */
export const taskSpecOf = (s: ServiceSpec): Record<string, unknown> => {
  const { Runtime: _r, ...spec } = s.TaskTemplate;
  return spec;
};

/** A task template's identity for an update: without the pull credentials (swarmkit's IsTaskDirty ignores PullOptions). */
/** Specs are read, never changed in place: each one's key is worked out once (a pass asks for it per task per step). */
const specKeys = new WeakMap<object, string>();
export function taskSpecKey(spec: Record<string, unknown>): string {
  let k = specKeys.get(spec);
  if (k === undefined) {
    k = canonicalJson(shownTaskSpec(spec));
    specKeys.set(spec, k);
  }
  return k;
}

export function updateConfigOf(spec: ServiceSpec, rollingBack: boolean): UpdateConfig {
  const c = (rollingBack ? spec.RollbackConfig : spec.UpdateConfig) ?? {};
  const num = (k: keyof UpdateConfig) => (typeof c[k] === 'number' ? (c[k] as number) : (UPDATE_DEFAULTS[k] as number));
  return {
    Parallelism: num('Parallelism'),
    Delay: num('Delay'),
    FailureAction: typeof c['FailureAction'] === 'string' && c['FailureAction'] ? c['FailureAction'] : UPDATE_DEFAULTS.FailureAction,
    Monitor: num('Monitor') || UPDATE_DEFAULTS.Monitor,
    MaxFailureRatio: num('MaxFailureRatio'),
    Order: c['Order'] === 'start-first' ? 'start-first' : 'stop-first',
  };
}

export interface RolloutInput {
  now: number;
  spec: ServiceSpec;
  status: UpdateStatus | undefined;
  hasPrevious: boolean;
  /** The service's tasks by slot (a global service's: by node), newest first, this step's changes applied. */
  slots: ReadonlyMap<string, readonly TaskRecord[]>;
  /** The slots the service wants (1..Replicas; a global service's eligible nodes). */
  wanted: readonly string[];
}

export interface RolloutResult {
  /** Outdated tasks to shut down now. */
  shutdown: TaskRecord[];
  /** Slots whose replacement starts while their outdated task still runs (start-first). */
  startFirst: Set<string>;
  /** The service's UpdateStatus, when it changes. */
  status?: UpdateStatus;
  /** Roll back: the service's spec becomes its PreviousSpec. */
  rollback?: boolean;
  /** When (epoch ms) a Delay or a Monitor ends. */
  wakeAt?: number;
}

const ms = (ns: number) => Math.round(ns / 1e6);

export function rollout(input: RolloutInput): RolloutResult {
  const { now, spec, status } = input;
  const nowIso = new Date(now).toISOString();
  const out: RolloutResult = { shutdown: [], startFirst: new Set() };
  const key = taskSpecKey(taskSpecOf(spec));
  const current = (t: TaskRecord) => taskSpecKey(t.Spec) === key;
  const state = status?.State;
  const inUpdate = state === 'updating' || state === 'rollback_started';
  const rollingBack = state?.startsWith('rollback') ?? false;
  const cfg = updateConfigOf(spec, rollingBack);
  const startedAt = status?.StartedAt ? Date.parse(status.StartedAt) : now;

  const dirty: Array<{ slot: string; old: TaskRecord[] }> = [];
  let inFlight = 0;
  for (const slot of input.wanted) {
    const g = input.slots.get(slot) ?? [];
    const live = g.filter(isLive);
    const old = live.filter((t) => !current(t));
    const fresh = live.filter(current);
    if (fresh.some((t) => t.Status.State !== 'running')) inFlight++;
    if (!old.length) continue;
    // start-first: the outdated task goes once its replacement runs.
    if (fresh.length) {
      if (fresh.some((t) => t.Status.State === 'running')) out.shutdown.push(...old);
      continue;
    }
    dirty.push({ slot, old });
  }
  // A slot whose outdated task this update shut down and that has no replacement yet.
  const replacing = input.wanted.filter((slot) => {
    const g = input.slots.get(slot) ?? [];
    return !g.some(isLive) && !!g[0] && !current(g[0]) && !ENDED.has(g[0].Status.State) && g[0].DesiredState === 'shutdown';
  }).length;

  // The replacements this update made: a failure is one that ended within Monitor of running.
  const made = [...input.slots.values()].flat().filter((t) => current(t) && Date.parse(t.CreatedAt) >= startedAt);
  const failures = made.filter((t) => ENDED.has(t.Status.State) && (!t.RunningSince || Date.parse(t.Status.Timestamp) - Date.parse(t.RunningSince) <= ms(cfg.Monitor)));
  const lastRunning = Math.max(0, ...made.filter((t) => t.RunningSince).map((t) => Date.parse(t.RunningSince!)));

  if (state === 'paused' || state === 'rollback_paused') return out;
  if (!inUpdate && !dirty.length) return out;
  // More failures than MaxFailureRatio of the slots allows: the FailureAction's (continue: none).
  const tooMany = failures.length > 0 && failures.length > cfg.MaxFailureRatio * Math.max(1, input.wanted.length) && cfg.FailureAction !== 'continue';
  if (!dirty.length && !inFlight && !replacing && !tooMany) {
    if (lastRunning && now < lastRunning + ms(cfg.Monitor)) return { ...out, wakeAt: lastRunning + ms(cfg.Monitor) };
    out.status = rollingBack
      ? { ...status, State: 'rollback_completed', Message: 'rollback completed', CompletedAt: nowIso }
      : { ...status, State: 'completed', Message: 'update completed', CompletedAt: nowIso };
    return out;
  }
  let next: UpdateStatus = inUpdate ? status! : { State: 'updating', StartedAt: nowIso, Message: 'update in progress' };
  if (!inUpdate) out.status = next;
  if (inUpdate && tooMany) {
    const id = failures[0]!.ID;
    if (cfg.FailureAction === 'rollback' && !rollingBack && input.hasPrevious) {
      out.status = { ...next, State: 'rollback_started', Message: `update rolled back due to failure or early termination of task ${id}` };
      out.rollback = true;
      out.shutdown = [];
      return out;
    }
    out.status = { ...next, State: rollingBack ? 'rollback_paused' : 'paused', Message: `update paused due to failure or early termination of task ${id}` };
    out.shutdown = [];
    return out;
  }
  next = out.status ?? next;
  // The next batch once the last one's replacements have run for Delay.
  if (lastRunning && now < lastRunning + ms(cfg.Delay)) return { ...out, wakeAt: lastRunning + ms(cfg.Delay) };
  const room = cfg.Parallelism > 0 ? cfg.Parallelism - inFlight - replacing : dirty.length;
  for (const d of dirty.slice(0, Math.max(0, room))) {
    if (cfg.Order === 'start-first') out.startFirst.add(d.slot);
    else out.shutdown.push(...d.old);
  }
  return out;
}

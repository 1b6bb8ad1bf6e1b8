// The swarm's orchestrator and scheduler as one pure step, run by the leader (reconcilers/node/
// orchestrator.ts): from the services, the tasks, what nodes report of them and the live nodes, the
// tasks to write and to delete. As swarmkit's:
// - a task's reported status is folded in (a state only moves forward);
// - a replicated service has one live task per slot 1..Replicas, a global one one per eligible node;
//   a slot (node) without one gets a new task — after the restart policy's delay (desired `ready`,
//   then `running`) when its last task ended by itself, none when the policy says so (condition
//   none; on-failure after a success; MaxAttempts reached);
// - a live task is shut down when its run ended, its node is gone or drained, or its slot is past
//   Replicas (desired `remove`: deleted once it has stopped); an update rolls over the tasks whose
//   spec is no longer the service's, UpdateConfig.Parallelism at a time;
// - a task whose node has been down for a day is orphaned;
// - a task whose node has been down for a day is orphaned; a task of a removed service is removed; a slot keeps TaskHistoryRetentionLimit tasks in all;
// - a new task goes to the node the scheduler picks (lib/cluster/placement.ts: reservations and
//   generic resources, constraints, platforms, MaxReplicas, host ports free there; spread preferences
//   first over a label's values; a node where the service's tasks failed 3 times in 5 minutes last;
//   the fewest of its service, then the fewest in all), or waits
//   `pending` with the scheduler's reason, and is placed as soon as a node fits.
import { canonicalJson } from '../canonical-json.ts';
import type { NodeRecord } from '../cluster/node-record.ts';
import { chooseNode, nodeState, take, uncount, type NodeState, type Needs } from '../cluster/placement.ts';
import { unmetConstraint } from '../compose/placement.ts';
import type { NodeSpec } from './node-spec.ts';
import { jobOf, replicasOf, type ServiceSpec } from './service-spec.ts';
import { ENDED, isLive, rollout, taskSpecKey, taskSpecOf, type UpdateStatus } from './update.ts';
import { isTerminal, stateRank, type JobStatus, type TaskRecord, type TaskReport, type TaskState } from './task.ts';

export interface OrchestrateInput {
  /** Epoch ms. */
  now: number;
  services: readonly ServiceInput[];
  tasks: readonly TaskRecord[];
  /** What the node a task is on reports of it, by task id. */
  reports: ReadonlyMap<string, TaskReport>;
  /** The live nodes and their specs (availability, labels). */
  nodes: ReadonlyArray<{ record: NodeRecord; spec?: NodeSpec }>;
  /** The swarm's TaskHistoryRetentionLimit. */
  retention: number;
  /** A task on a node down this long is orphaned (ORPHAN_AFTER_MS unless given). */
  orphanAfterMs?: number;
  newId: () => string;
}

/** A service as the step reads it: its spec, whether it has a previous one, where its update is. */
export interface ServiceInput {
  ID: string;
  Spec: ServiceSpec;
  PreviousSpec?: ServiceSpec;
  UpdateStatus?: UpdateStatus;
  JobStatus?: JobStatus;
}

export interface OrchestrateResult {
  put: TaskRecord[];
  remove: string[];
  /** Services whose UpdateStatus changes (and that roll back to their PreviousSpec). */
  services: Array<{ ID: string; UpdateStatus: UpdateStatus; rollback?: boolean }>;
  /** When (epoch ms) a restart's delay, an update's Delay or Monitor ends. */
  wakeAt?: number;
}

const DEFAULT_DELAY_NS = 5_000_000_000;
/**
 * A node where a service's tasks failed this often lately is tried last (swarmkit counts 5 in 5
 * minutes apart from the tasks; here the count is of the tasks history keeps, 4 per slot by default).
 */
const MAX_FAILURES = 3;
const FAILURE_WINDOW_MS = 5 * 60_000;
/** A task on a node down this long is orphaned (swarmkit's 24 hours): its node will not report it again. */
export const ORPHAN_AFTER_MS = 24 * 3600_000;

function needsOf(s: ServiceSpec): Needs {
  const r = ((s.TaskTemplate['Resources'] as Record<string, unknown> | undefined)?.['Reservations'] ?? {}) as { NanoCPUs?: number; MemoryBytes?: number; GenericResources?: Array<Record<string, { Kind: string; Value: number | string }>> };
  const generic: Needs['generic'] = [];
  for (const g of r.GenericResources ?? []) {
    const d = g['DiscreteResourceSpec'];
    if (d) generic.push({ kind: d.Kind, value: Number(d.Value) });
    else if (g['NamedResourceSpec']) generic.push({ kind: g['NamedResourceSpec'].Kind, value: 1 });
  }
  return { nanoCpus: r.NanoCPUs ?? 0, memoryBytes: r.MemoryBytes ?? 0, generic };
}

const hostPorts = (s: ServiceSpec) =>
  (s.EndpointSpec?.Ports ?? []).filter((p) => p.PublishMode === 'host').map((p) => ({ Protocol: p.Protocol ?? 'tcp', TargetPort: p.TargetPort, PublishedPort: p.PublishedPort }));
const constraintsOf = (s: ServiceSpec) => s.TaskTemplate.Placement?.Constraints ?? [];

interface Placement {
  Platforms?: Array<{ Architecture?: string; OS?: string }> | null;
  MaxReplicas?: number;
  Preferences?: Array<{ Spread?: { SpreadDescriptor?: string } }> | null;
}

/** Go's architecture names for what a node reports (uname's). */
const GOARCH: Record<string, string> = { x86_64: 'amd64', aarch64: 'arm64', armv7l: 'arm', i686: '386', i386: '386' };

/** Whether the node is one of the platforms (none listed: any). */
function platformMatches(platforms: Placement['Platforms'], facts: NodeState['facts']): boolean {
  if (!platforms?.length) return true;
  const arch = GOARCH[facts.arch] ?? facts.arch;
  return platforms.some((p) => (!p.OS || p.OS === facts.os) && (!p.Architecture || p.Architecture === arch || p.Architecture === facts.arch));
}

/**
 * The candidates by the first spread preference's label (node.labels.X or engine.labels.X): one
 * group per value, the group with the fewest tasks of `key` first (a node without the label is a
 * group of its own value ""). No preference: one group, every candidate.
 */
function spreadGroups(prefs: Placement['Preferences'], candidates: readonly NodeState[], key: string): NodeState[][] {
  const desc = prefs?.find((p) => p.Spread?.SpreadDescriptor)?.Spread?.SpreadDescriptor;
  if (!desc) return [[...candidates]];
  const valueOf = (n: NodeState) =>
    desc.startsWith('node.labels.') ? ((n.facts.nodeLabels ?? n.facts.labels)[desc.slice('node.labels.'.length)] ?? '') : desc.startsWith('engine.labels.') ? (n.facts.labels[desc.slice('engine.labels.'.length)] ?? '') : '';
  const groups = new Map<string, NodeState[]>();
  for (const n of candidates) groups.set(valueOf(n), [...(groups.get(valueOf(n)) ?? []), n]);
  const load = (g: NodeState[]) => g.reduce((sum, n) => sum + (n.perService.get(key) ?? 0), 0);
  return [...groups.values()].sort((a, b) => load(a) - load(b));
}

/**
 * Whether a slot whose last task ended by itself gets another, by the restart policy: MaxAttempts
 * counts the runs that ended (within Window before the last one ended, when a Window is set: the
 * decision stays the same as time passes, as swarmkit's, which decides once when the task ends).
 */
function restarts(s: ServiceSpec, history: readonly TaskRecord[]): boolean {
  const last = history[0];
  if (!last || !ENDED.has(last.Status.State)) return true;
  const p = (s.TaskTemplate['RestartPolicy'] ?? {}) as { Condition?: string; MaxAttempts?: number; Window?: number };
  const cond = p.Condition || 'any';
  if (cond === 'none') return false;
  if (cond === 'on-failure' && last.Status.State === 'complete') return false;
  const windowMs = Math.round(Number(p.Window ?? 0) / 1e6);
  const since = windowMs > 0 ? Date.parse(last.Status.Timestamp) - windowMs : -Infinity;
  const ended = history.filter((t) => ENDED.has(t.Status.State) && Date.parse(t.Status.Timestamp) >= since).length;
  return !p.MaxAttempts || ended <= p.MaxAttempts;
}

export function orchestrate(input: OrchestrateInput): OrchestrateResult {
  const nowIso = new Date(input.now).toISOString();
  const changed = new Map<string, TaskRecord>();
  const removed = new Set<string>();
  const upd = (t: TaskRecord, patch: Partial<TaskRecord>): TaskRecord => {
    const next = { ...t, ...patch, UpdatedAt: nowIso };
    changed.set(t.ID, next);
    return next;
  };
  const status = (state: TaskState, message: string, err?: string) => ({ Timestamp: nowIso, State: state, Message: message, ...(err ? { Err: err } : {}), PortStatus: {} });
  const nodesUp = new Map(input.nodes.map((n) => [n.record.id, n]));
  const availability = (id: string | undefined) => (id ? (nodesUp.get(id)?.spec?.Availability ?? 'active') : undefined);
  const services = new Map(input.services.map((s) => [s.ID, s]));
  /** What a task is meant to do once it may run: a job's runs to completion. */
  const runState = (svc: ServiceInput | undefined): TaskState => (svc && jobOf(svc.Spec) ? 'complete' : 'running');

  // Fold in what the nodes report; shut down what can no longer run; remove what is done with.
  let tasks = input.tasks.map((t) => {
    const r = input.reports.get(t.ID);
    if (r && t.NodeID && stateRank(r.Status.State) >= stateRank(t.Status.State) && canonicalJson(r.Status) !== canonicalJson(t.Status)) {
      t = upd(t, { Status: r.Status, ...(r.Status.State === 'running' && !t.RunningSince ? { RunningSince: r.Status.Timestamp } : {}) });
    }
    const svc = services.get(t.ServiceID);
    const gone = !!t.NodeID && !nodesUp.has(t.NodeID);
    if (!svc || t.DesiredState === 'remove') {
      if (t.DesiredState !== 'remove') t = upd(t, { DesiredState: 'remove' });
      if (!t.NodeID || gone || isTerminal(t.Status.State)) removed.add(t.ID);
      return t;
    }
    // A node down for a day will not say how its task ended (swarmkit's orphaned).
    if (gone && !isTerminal(t.Status.State) && input.now - Date.parse(t.UpdatedAt) >= (input.orphanAfterMs ?? ORPHAN_AFTER_MS)) {
      return upd(t, { DesiredState: 'shutdown', Status: { ...t.Status, Timestamp: nowIso, State: 'orphaned' } });
    }
    // (A job's task that completed stays complete/complete, as the reference shows it.)
    if (!isLive(t) && t.DesiredState !== 'shutdown' && isTerminal(t.Status.State) && !(t.DesiredState === 'complete' && t.Status.State === 'complete')) return upd(t, { DesiredState: 'shutdown' });
    if (!isLive(t)) return t;
    const replicas = replicasOf(svc.Spec);
    if (replicas !== undefined && (t.Slot ?? 0) > replicas) return upd(t, { DesiredState: 'remove' });
    if (gone || availability(t.NodeID) === 'drain') return upd(t, { DesiredState: 'shutdown' });
    return t;
  });
  tasks = tasks.filter((t) => !removed.has(t.ID));
  // A task waiting to run: after its restart delay, and once the task it replaces has stopped (stop-first).
  const byId = new Map(tasks.map((t) => [t.ID, t]));
  tasks = tasks.map((t) => {
    if (t.DesiredState !== 'ready' || !isLive(t) || (t.RunAfter ?? 0) > input.now) return t;
    const before = t.StartAfter ? byId.get(t.StartAfter) : undefined;
    if (before && !isTerminal(before.Status.State) && !!before.NodeID && nodesUp.has(before.NodeID)) return t;
    return upd(t, { DesiredState: runState(services.get(t.ServiceID)) });
  });

  // The scheduler's view: active nodes, with what their live tasks already take.
  const states = new Map<string, NodeState>();
  for (const n of input.nodes) if ((n.spec?.Availability ?? 'active') === 'active') states.set(n.record.id, nodeState(n.record, n.spec?.Labels));
  for (const t of tasks) {
    const svc = services.get(t.ServiceID);
    const st = t.NodeID ? states.get(t.NodeID) : undefined;
    if (svc && st && isLive(t)) take(st, svc.ID, needsOf(svc.Spec), t.Claims ?? []);
  }
  // Host ports taken on each node by its live tasks (a task publishing one in host mode needs it free).
  const portsUsed = new Map<string, Set<string>>();
  const portKeys = (t: Pick<TaskRecord, 'HostPorts'>) => (t.HostPorts ?? []).filter((p) => p.PublishedPort).map((p) => `${p.PublishedPort}/${p.Protocol}`);
  for (const t of tasks) {
    if (!t.NodeID || !isLive(t)) continue;
    const used = portsUsed.get(t.NodeID) ?? new Set<string>();
    for (const k of portKeys(t)) used.add(k);
    portsUsed.set(t.NodeID, used);
  }
  const failingNodes = (serviceId: string): Set<string> => {
    const counts = new Map<string, number>();
    for (const t of tasks) {
      if (t.ServiceID !== serviceId || !t.NodeID || !['failed', 'rejected'].includes(t.Status.State)) continue;
      if (input.now - Date.parse(t.Status.Timestamp) > FAILURE_WINDOW_MS) continue;
      counts.set(t.NodeID, (counts.get(t.NodeID) ?? 0) + 1);
    }
    return new Set([...counts].filter(([, n]) => n >= MAX_FAILURES).map(([id]) => id));
  };
  const place = (svc: { ID: string; Spec: ServiceSpec }, candidates: readonly NodeState[]) => {
    const pl = svc.Spec.TaskTemplate.Placement as Placement | undefined;
    const wants = portKeys({ HostPorts: hostPorts(svc.Spec) });
    const unmet = (facts: NodeState['facts']) =>
      unmetConstraint(constraintsOf(svc.Spec), facts) !== undefined ||
      !platformMatches(pl?.Platforms, facts) ||
      (!!pl?.MaxReplicas && (states.get(facts.id)?.perService.get(svc.ID) ?? 0) >= pl.MaxReplicas) ||
      wants.some((k) => portsUsed.get(facts.id)?.has(k));
    // Nodes where the service's tasks keep failing are tried last (swarmkit: 5 failures in 5 minutes).
    const failing = failingNodes(svc.ID);
    const healthy = candidates.filter((n) => !failing.has(n.record.id));
    // Spread preferences: the nodes of the label value with the fewest of the service's tasks first.
    for (const group of [...spreadGroups(pl?.Preferences, healthy, svc.ID), ...spreadGroups(pl?.Preferences, candidates, svc.ID)]) {
      const chosen = chooseNode(group, svc.ID, needsOf(svc.Spec), unmet);
      if ('node' in chosen) {
        const used = portsUsed.get(chosen.node.record.id) ?? new Set<string>();
        for (const k of wants) used.add(k);
        portsUsed.set(chosen.node.record.id, used);
        return chosen;
      }
    }
    return chooseNode(candidates, svc.ID, needsOf(svc.Spec), unmet);
  };
  const assign = (t: TaskRecord, svc: { ID: string; Spec: ServiceSpec }, candidates: readonly NodeState[]): TaskRecord => {
    const chosen = place(svc, candidates);
    if (!('node' in chosen)) {
      const pending = status('pending', 'pending task scheduling', chosen.reason);
      return t.Status.State === 'pending' && t.Status.Err === chosen.reason ? t : upd(t, { Status: pending });
    }
    take(chosen.node, svc.ID, needsOf(svc.Spec), chosen.claims);
    return upd(t, { NodeID: chosen.node.record.id, Claims: chosen.claims, Status: status('assigned', 'scheduler assigned task to node') });
  };
  const fresh = (svc: ServiceInput, where: { Slot?: number; NodeID?: string }, delayed: boolean, startAfter?: string): TaskRecord => {
    const delayNs = Number((svc.Spec.TaskTemplate['RestartPolicy'] as { Delay?: number } | undefined)?.Delay ?? DEFAULT_DELAY_NS);
    const t: TaskRecord = {
      ID: input.newId(),
      CreatedAt: nowIso,
      UpdatedAt: nowIso,
      Labels: {},
      Spec: taskSpecOf(svc.Spec),
      ServiceID: svc.ID,
      ServiceName: svc.Spec.Name,
      ...where,
      ...(hostPorts(svc.Spec).length ? { HostPorts: hostPorts(svc.Spec) } : {}),
      ...((svc.Spec.EndpointSpec?.Ports ?? []).some((p) => p.PublishMode === 'ingress') ? { Ingress: true } : {}),
      Status: status('new', 'created'),
      DesiredState: (delayed && delayNs > 0) || startAfter ? 'ready' : runState(svc),
      ...(jobOf(svc.Spec) ? { JobIteration: { Index: svc.JobStatus?.JobIteration.Index ?? 0 } } : {}),
      ...(delayed && delayNs > 0 ? { RunAfter: input.now + Math.round(delayNs / 1e6) } : {}),
      ...(startAfter ? { StartAfter: startAfter } : {}),
    };
    changed.set(t.ID, t);
    return t;
  };

  const serviceChanges: OrchestrateResult['services'] = [];
  const wakes: number[] = [];
  const byService = new Map<string, TaskRecord[]>();
  for (const t of tasks) byService.set(t.ServiceID, [...(byService.get(t.ServiceID) ?? []), t]);
  const newest = (a: TaskRecord, b: TaskRecord) => (a.CreatedAt < b.CreatedAt ? 1 : a.CreatedAt > b.CreatedAt ? -1 : 0);
  for (const svc of [...services.values()].sort((a, b) => (a.ID < b.ID ? -1 : 1))) {
    const job = jobOf(svc.Spec);
    const iteration = svc.JobStatus?.JobIteration.Index ?? 0;
    let own = byService.get(svc.ID) ?? [];
    if (job) {
      // A job's earlier iterations: what still runs of them is shut down; they are history.
      for (const t of own) if ((t.JobIteration?.Index ?? 0) !== iteration && isLive(t)) upd(t, { DesiredState: 'shutdown' });
      own = own.filter((t) => (t.JobIteration?.Index ?? 0) === iteration);
    }
    const replicas = job?.kind === 'replicated' ? job.total : replicasOf(svc.Spec);
    const bySlot = job ? job.kind === 'replicated' : replicas !== undefined;
    // A slot of a replicated service, a node of a global one: its tasks, newest first.
    const groups = new Map<string, TaskRecord[]>();
    for (const t of own) {
      const k = bySlot ? String(t.Slot ?? 0) : (t.NodeID ?? '');
      groups.set(k, [...(groups.get(k) ?? []), t]);
    }
    for (const g of groups.values()) g.sort(newest);
    const done = (key: string) => !!job && (groups.get(key) ?? []).some((t) => t.Status.State === 'complete');
    const wanted: Array<{ key: string; where: { Slot?: number; NodeID?: string }; candidates: NodeState[] }> = [];
    if (job?.kind === 'replicated') {
      // A replicated job: slots 0..TotalCompletions-1, each until one of its tasks completes, at
      // most MaxConcurrent at once (the lowest slots first).
      let room = job.maxConcurrent - [...groups.values()].filter((g) => g.some(isLive)).length;
      for (let slot = 0; slot < job.total; slot++) {
        const key = String(slot);
        if (done(key)) continue;
        const active = (groups.get(key) ?? []).some(isLive);
        if (!active && room <= 0) continue;
        if (!active) room--;
        wanted.push({ key, where: slot ? { Slot: slot } : {}, candidates: [...states.values()] });
      }
    } else if (replicas !== undefined) {
      for (let slot = 1; slot <= replicas; slot++) wanted.push({ key: String(slot), where: { Slot: slot }, candidates: [...states.values()] });
    } else {
      for (const st of states.values()) {
        if (unmetConstraint(constraintsOf(svc.Spec), st.facts) === undefined && !done(st.record.id)) wanted.push({ key: st.record.id, where: { NodeID: st.record.id }, candidates: [st] });
      }
      // A node that no longer meets the constraints: its task is shut down.
      for (const [node, g] of groups) {
        if (wanted.some((w) => w.key === node) || done(node)) continue;
        for (const t of g) if (isLive(t) && t.NodeID) upd(t, { DesiredState: 'shutdown' });
      }
    }
    // The rolling update (./update.ts): which outdated tasks go now, which slots start their replacement first.
    const current = () => new Map([...groups].map(([k, g]) => [k, g.map((t) => changed.get(t.ID) ?? t)]));
    // (A job has none: a change of its spec is its next iteration.)
    const roll = job ? { shutdown: [], startFirst: new Set<string>() } : rollout({ now: input.now, spec: svc.Spec, status: svc.UpdateStatus, hasPrevious: !!svc.PreviousSpec, slots: current(), wanted: wanted.map((w) => w.key) });
    if (roll.status) serviceChanges.push({ ID: svc.ID, UpdateStatus: roll.status, ...(roll.rollback ? { rollback: true } : {}) });
    if (roll.wakeAt) wakes.push(roll.wakeAt);
    for (const t of roll.shutdown) {
      const st = t.NodeID ? states.get(t.NodeID) : undefined;
      if (st && isLive(changed.get(t.ID) ?? t)) uncount(st, svc.ID);
      upd(changed.get(t.ID) ?? t, { DesiredState: 'shutdown' });
    }
    // Rolling back: the tasks follow the previous spec once it is the service's (the next step).
    if (roll.rollback) continue;
    const specKey = taskSpecKey(taskSpecOf(svc.Spec));
    for (const w of wanted) {
      const history = (groups.get(w.key) ?? []).map((t) => changed.get(t.ID) ?? t);
      const live = history.filter(isLive);
      const startFirst = roll.startFirst.has(w.key) && !live.some((t) => taskSpecKey(t.Spec) === specKey);
      if (live.length && !startFirst) {
        for (const t of live) if (!t.NodeID) assign(t, svc, w.candidates);
        continue;
      }
      if (!startFirst && !restarts(svc.Spec, history)) continue;
      const endedByItself = !startFirst && !!history[0] && ENDED.has(history[0].Status.State);
      // Stop-first: the replacement of a task this update shut down runs once that one has stopped.
      const prev = history[0];
      const stopping = !startFirst && prev && prev.DesiredState === 'shutdown' && !isTerminal(prev.Status.State) && !!prev.NodeID && nodesUp.has(prev.NodeID) && taskSpecKey(prev.Spec) !== specKey;
      const t = fresh(svc, w.where, endedByItself, stopping ? prev.ID : undefined);
      const placed = assign(t, svc, w.candidates);
      groups.set(w.key, [placed, ...history]);
    }
    // History: a slot keeps `retention` tasks in all; the oldest that are done with go (a job's are kept, as the reference keeps them).
    for (const g of job ? [] : groups.values()) {
      const all = g.map((t) => changed.get(t.ID) ?? t).sort(newest);
      for (const t of all.slice(Math.max(1, input.retention))) {
        if (!isLive(t) && (isTerminal(t.Status.State) || !t.NodeID || !nodesUp.has(t.NodeID))) removed.add(t.ID);
      }
    }
  }
  for (const id of removed) changed.delete(id);
  const after = [...tasks.filter((t) => !changed.has(t.ID) && !removed.has(t.ID)), ...changed.values()];
  for (const t of after) if (t.DesiredState === 'ready' && t.RunAfter && t.RunAfter > input.now) wakes.push(t.RunAfter);
  return { put: [...changed.values()], remove: [...removed], services: serviceChanges, ...(wakes.length ? { wakeAt: Math.min(...wakes) } : {}) };
}

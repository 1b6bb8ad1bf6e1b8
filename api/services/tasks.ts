// The task routes of swarm mode (a manager's), in the reference's Task shape, and the counts of a
// service's ServiceStatus. GET /tasks' filters as dockerd 20.10 reads them (docs/reference-services.md
// §5): desired-state (case-insensitive; another state its 500), id and name prefixes (a task's name
// SERVICE.SLOT or SERVICE.NODE), label, node and service (by id, id prefix, name or hostname: an
// unknown one is its 404), runtime; another key refused.
import { internal, invalidArgument, notFound } from '../../lib/errors.ts';
import { jobOf, replicasOf } from '../../lib/swarm/service-spec.ts';
import { lookup } from '../../lib/swarm/lookup.ts';
import { taskSpecKey, taskSpecOf } from '../../lib/swarm/update.ts';
import { TASK_STATES, type TaskRecord } from '../../lib/swarm/task.ts';
import { matchKVList, parseFilters } from '../filters.ts';
import type { ServiceRecord } from './port.ts';
import type { ServiceCounts } from './views.ts';

// `_up-to-date` (the docker CLI's progress asks for it): tasks whose spec is their service's current one.
const TASK_FILTERS: ReadonlySet<string> = new Set(['_up-to-date', 'desired-state', 'id', 'label', 'name', 'node', 'runtime', 'service']);

export interface NodeRef {
  id: string;
  hostname: string;
}

/** An object by id, exact name, or unique id prefix; the reference's 404 otherwise. */
function resolve<T>(all: readonly T[], ref: string, id: (x: T) => string, name: (x: T) => string, what: string): T {
  return lookup(all, ref, { id, names: [name], notFound: (r) => notFound(`${what} ${r} not found`), ambiguous: (r, n) => invalidArgument(`${what} ${r} is ambiguous (${n} matches found)`) });
}

/** The `filters` query of GET /tasks as a predicate (services and nodes named by it resolved first). */
export function taskFilter(raw: string | undefined, services: readonly ServiceRecord[], nodes: readonly NodeRef[]): (t: TaskRecord) => boolean {
  const f = parseFilters(raw);
  for (const k of f.keys()) if (!TASK_FILTERS.has(k)) throw invalidArgument(`Invalid filter '${k}'`);
  const desired = (f.get('desired-state') ?? []).map((s) => {
    const v = s.toLowerCase();
    if (!(TASK_STATES as readonly string[]).includes(v)) throw internal(`Invalid desired-state filter: '${s}'`);
    return v;
  });
  const serviceIds = (f.get('service') ?? []).map((ref) => resolve(services, ref, (s) => s.ID, (s) => s.Spec.Name, 'service').ID);
  const nodeIds = (f.get('node') ?? []).map((ref) => resolve(nodes, ref, (n) => n.id, (n) => n.hostname, 'node').id);
  const ids = f.get('id') ?? [];
  const names = f.get('name') ?? [];
  const upToDate = f.has('_up-to-date');
  const current = new Map(services.map((s) => [s.ID, taskSpecKey(taskSpecOf(s.Spec))]));
  // A label filter matches the task's service's labels (swarmkit's ServiceAnnotations: `docker stack ps` filters by them).
  const serviceLabels = new Map(services.map((s) => [s.ID, s.Spec.Labels]));
  return (t) =>
    (!upToDate || current.get(t.ServiceID) === taskSpecKey(t.Spec)) &&
    (!desired.length || desired.includes(t.DesiredState)) &&
    (!serviceIds.length || serviceIds.includes(t.ServiceID)) &&
    (!nodeIds.length || (!!t.NodeID && nodeIds.includes(t.NodeID))) &&
    (!ids.length || ids.some((x) => t.ID.startsWith(x))) &&
    (!names.length || names.some((x) => `${t.ServiceName}.${t.Slot ?? t.NodeID ?? ''}`.startsWith(x))) &&
    matchKVList(f.get('label'), { ...(serviceLabels.get(t.ServiceID) ?? {}), ...t.Labels });
}

/** A task by id or unique id prefix (GET /tasks/{id}). */
export function findTask<T extends { task: TaskRecord }>(all: readonly T[], ref: string): T {
  return lookup(all, ref, { id: (x) => x.task.ID, notFound: (r) => notFound(`task ${r} not found`), ambiguous: (r, n) => invalidArgument(`task ${r} is ambiguous (${n} matches found)`) });
}

/** ServiceStatus: tasks running, tasks wanted (a global service's: its tasks meant to run), tasks completed. */
export function serviceCounts(s: ServiceRecord, tasks: readonly TaskRecord[]): ServiceCounts {
  const job = jobOf(s.Spec);
  if (job) {
    // A job's (dockerd 20.10, docs/reference-services.md §11): its iteration's tasks; a replicated
    // job wants MaxConcurrent, a global one its tasks not yet complete.
    const iteration = s.JobStatus?.JobIteration.Index ?? 0;
    const own = tasks.filter((t) => t.ServiceID === s.ID && (t.JobIteration?.Index ?? 0) === iteration);
    return {
      RunningTasks: own.filter((t) => t.Status.State === 'running' && t.DesiredState === 'complete').length,
      DesiredTasks: job.kind === 'replicated' ? job.maxConcurrent : own.filter((t) => t.DesiredState === 'complete' && t.Status.State !== 'complete').length,
      CompletedTasks: own.filter((t) => t.Status.State === 'complete').length,
    };
  }
  const own = tasks.filter((t) => t.ServiceID === s.ID);
  const replicas = replicasOf(s.Spec);
  return {
    RunningTasks: own.filter((t) => t.Status.State === 'running' && t.DesiredState === 'running').length,
    DesiredTasks: replicas ?? own.filter((t) => t.DesiredState === 'running').length,
    CompletedTasks: 0,
  };
}

// A swarm task as the reference shows it (moby's api/types/swarm Task; docs/reference-services.md §5),
// where it lives in etcd, and what a node is given to run it:
// - `/engine/swarm/tasks/<id>`: the task (the leader's: desired state, node, the status last folded in);
// - `/engine/node-tasks/<node>/<id>`: what the node runs (the task without its status; a worker's etcd
//   user reads its own prefix only);
// - `/engine/status/<node>/task/<id>`: the status the node reports, under its lease.
import type { Claim } from '../cluster/placement.ts';
import { STATUS_PREFIX } from '../cluster/node-record.ts';
import { SWARM_PREFIX } from './keys.ts';
import { shownTaskSpec } from './service-spec.ts';

export const TASKS_PREFIX = `${SWARM_PREFIX}tasks/`;
export const NODE_TASKS_PREFIX = '/engine/node-tasks/';
export const taskKey = (id: string) => `${TASKS_PREFIX}${id}`;
export const nodeTaskKey = (node: string, id: string) => `${NODE_TASKS_PREFIX}${node}/${id}`;
export const taskStatusPrefix = (node: string) => `${STATUS_PREFIX}${node}/task/`;
export const taskStatusKey = (node: string, id: string) => `${taskStatusPrefix(node)}${id}`;

/** swarmkit's task states, in their order (a state only moves forward). */
export const TASK_STATES = ['new', 'pending', 'assigned', 'accepted', 'preparing', 'ready', 'starting', 'running', 'complete', 'shutdown', 'failed', 'rejected', 'remove', 'orphaned'] as const;
export type TaskState = (typeof TASK_STATES)[number];
export const stateRank = (s: string) => TASK_STATES.indexOf(s as TaskState);
/** A state past running: the task's run is over. */
export const isTerminal = (s: string) => stateRank(s) > stateRank('running');

/** A job's iteration: its tasks carry the one they run for. */
export interface JobStatus {
  JobIteration: { Index: number };
  LastExecution: string;
}

/** Go's omitempty of a Version: iteration 0 is shown as {}. */
export const versionView = (v: { Index: number }) => (v.Index ? { Index: v.Index } : {});

export interface TaskStatus {
  Timestamp: string;
  State: TaskState;
  Message: string;
  Err?: string;
  ContainerStatus?: { ContainerID: string; PID: number; ExitCode: number };
  PortStatus: { Ports?: unknown[] };
}

export type GenericResourceOut = { NamedResourceSpec: { Kind: string; Value: string } } | { DiscreteResourceSpec: { Kind: string; Value: number } };

export interface TaskRecord {
  ID: string;
  CreatedAt: string;
  UpdatedAt: string;
  Labels: Record<string, string>;
  /** The service's TaskTemplate when the task was made (without Runtime, as the reference shows it). */
  Spec: Record<string, unknown>;
  ServiceID: string;
  /** The service's name (the container's name and labels carry it). */
  ServiceName: string;
  /** A replicated service's slot (a global one's tasks have none). */
  Slot?: number;
  NodeID?: string;
  Status: TaskStatus;
  DesiredState: TaskState;
  /** The generic resources the scheduler gave it, and their environment (DOCKER_RESOURCE_<KIND>). */
  Claims?: Claim[];
  /** Not before (epoch ms): a restart's delay before its desired state becomes running. */
  RunAfter?: number;
  /** A job's task: the iteration it runs for. */
  JobIteration?: { Index: number };
  /** Not before this task has stopped (an update's stop-first replacement). */
  StartAfter?: string;
  /** When the task was first reported running (an update's Monitor counts from it). */
  RunningSince?: string;
  /** The service's ports published in host mode (bound on the node that runs the task). */
  HostPorts?: Array<{ Protocol: string; TargetPort?: number; PublishedPort?: number }>;
  /** The service publishes ports in ingress mode: the task joins the ingress network (the routing mesh sends to it there). */
  Ingress?: boolean;
  /** The leader that last wrote the record, and its term (the create revision of its election key). */
  Writer?: string;
  Term?: string;
}

/** What a node is given to run (the task without its status). */
export type NodeTask = Omit<TaskRecord, 'Status' | 'UpdatedAt' | 'Writer' | 'Term'>;

/** What a node reports of a task it runs. */
export interface TaskReport {
  ID: string;
  Status: TaskStatus;
}

export const nodeTaskOf = (t: TaskRecord): NodeTask => {
  const { Status: _s, UpdatedAt: _u, Writer: _w, Term: _t, ...rest } = t;
  return rest;
};

/** The task's name: SERVICE.SLOT.ID, or SERVICE.NODE.ID for a global service's. */
export const taskName = (t: Pick<TaskRecord, 'ServiceName' | 'Slot' | 'NodeID' | 'ID'>) => `${t.ServiceName}.${t.Slot || t.NodeID}.${t.ID}`;

/** The reference's labels of a task's container. */
export function taskLabels(t: NodeTask): Record<string, string> {
  return {
    'com.docker.swarm.node.id': t.NodeID ?? '',
    'com.docker.swarm.service.id': t.ServiceID,
    'com.docker.swarm.service.name': t.ServiceName,
    'com.docker.swarm.task': '',
    'com.docker.swarm.task.id': t.ID,
    'com.docker.swarm.task.name': taskName(t),
  };
}

export function genericResourcesOf(claims: readonly Claim[] | undefined): GenericResourceOut[] | undefined {
  if (!claims?.length) return undefined;
  return claims.map((c) => ('unit' in c ? { NamedResourceSpec: { Kind: c.kind, Value: c.unit } } : { DiscreteResourceSpec: { Kind: c.kind, Value: c.count } }));
}

/** The task in the reference's Task shape (GET /tasks). */
export function taskView(t: TaskRecord, version: number): Record<string, unknown> {
  const generic = genericResourcesOf(t.Claims);
  return {
    ID: t.ID,
    Version: { Index: version },
    CreatedAt: t.CreatedAt,
    UpdatedAt: t.UpdatedAt,
    Labels: t.Labels,
    Spec: shownTaskSpec(t.Spec),
    ServiceID: t.ServiceID,
    ...(t.Slot ? { Slot: t.Slot } : {}),
    ...(t.NodeID ? { NodeID: t.NodeID } : {}),
    Status: t.Status,
    DesiredState: t.DesiredState,
    ...(generic ? { GenericResources: generic } : {}),
    ...(t.JobIteration ? { JobIteration: versionView(t.JobIteration) } : {}),
  };
}

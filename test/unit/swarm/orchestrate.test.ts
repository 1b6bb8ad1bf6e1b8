// The swarm's orchestrator and scheduler step (lib/swarm/orchestrate.ts) on made-up nodes and tasks.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { orchestrate, type OrchestrateInput } from '../../../lib/swarm/orchestrate.ts';
import { registryAuthOf, serviceSpecOf, withRegistryAuth } from '../../../lib/swarm/service-spec.ts';
import type { NodeRecord } from '../../../lib/cluster/node-record.ts';
import { taskView, type TaskRecord } from '../../../lib/swarm/task.ts';

const node = (id: string, extra: Partial<NodeRecord> = {}): NodeRecord => ({
  id, hostname: id, addr: '10.0.0.1', engineVersion: 'x', labels: {}, os: 'linux', arch: 'x86_64', nanoCpus: 2e9, memoryBytes: 8e9,
  genericResources: [], state: 'ready', createdAt: '', updatedAt: '', version: 1, role: 'worker', ...extra,
});
const svc = (id: string, extra: Record<string, unknown> = {}, tt: Record<string, unknown> = {}) => ({
  ID: id,
  Spec: serviceSpecOf({ Name: id, TaskTemplate: { ContainerSpec: { Image: 'busybox' }, ...tt }, ...extra }, () => id),
});
let n = 0;
const base = (over: Partial<OrchestrateInput>): OrchestrateInput => ({ now: 1_000_000, services: [], tasks: [], reports: new Map(), nodes: [{ record: node('a') }], retention: 5, newId: () => `t${++n}`, ...over });
/** Runs steps, feeding each result back as the tasks of the next. */
function run(input: OrchestrateInput, steps = 1): TaskRecord[] {
  let tasks = [...input.tasks];
  for (let i = 0; i < steps; i++) {
    const r = orchestrate({ ...input, tasks });
    const byId = new Map(tasks.map((t) => [t.ID, t]));
    for (const t of r.put) byId.set(t.ID, t);
    for (const id of r.remove) byId.delete(id);
    tasks = [...byId.values()];
  }
  return tasks;
}

describe('orchestrate', () => {
  test('replicated: one task per slot, spread over the nodes', () => {
    const tasks = run(base({ services: [svc('web', { Mode: { Replicated: { Replicas: 3 } } })], nodes: [{ record: node('a') }, { record: node('b') }] }));
    assert.deepEqual(tasks.map((t) => t.Slot).sort(), [1, 2, 3]);
    assert.ok(tasks.every((t) => t.Status.State === 'assigned' && t.DesiredState === 'running' && t.ServiceName === 'web'));
    assert.deepEqual(tasks.map((t) => t.NodeID).sort(), ['a', 'a', 'b']);
    assert.deepEqual(orchestrate(base({ services: [svc('web', { Mode: { Replicated: { Replicas: 3 } } })], tasks, nodes: [{ record: node('a') }, { record: node('b') }] })), { put: [], remove: [], services: [] }, 'a second step changes nothing');
  });

  test('global: one task per node that meets the constraints; drained nodes get none', () => {
    const tasks = run(base({
      services: [svc('g', { Mode: { Global: {} } }, { Placement: { Constraints: ['node.labels.zone==b'] } })],
      nodes: [{ record: node('a'), spec: { Labels: { zone: 'b' }, Role: 'worker', Availability: 'active' } }, { record: node('b') }, { record: node('c'), spec: { Labels: { zone: 'b' }, Role: 'worker', Availability: 'drain' } }],
    }));
    assert.deepEqual(tasks.map((t) => [t.NodeID, t.Slot]), [['a', undefined]]);
  });

  test('a reservation no node has: pending with the scheduler\'s reason, placed once a node has it', () => {
    const s = svc('gpu', {}, { Resources: { Reservations: { GenericResources: [{ DiscreteResourceSpec: { Kind: 'gpu', Value: 1 } }] } } });
    const pending = run(base({ services: [s] }));
    assert.equal(pending[0]!.Status.State, 'pending');
    assert.equal(pending[0]!.Status.Err, 'no suitable node (insufficient resources on 1 node)');
    const placed = run(base({ services: [s], tasks: pending, nodes: [{ record: node('a', { genericResources: [{ NamedResourceSpec: { Kind: 'gpu', Value: 'UUID1' } }] }) }] }));
    assert.equal(placed[0]!.ID, pending[0]!.ID, 'the same task');
    assert.deepEqual([placed[0]!.NodeID, placed[0]!.Claims], ['a', [{ kind: 'gpu', unit: 'UUID1' }]]);
  });

  test('a task that failed is shut down and replaced after the restart delay; condition none: not replaced', () => {
    const s = svc('f');
    const [t] = run(base({ services: [s] }));
    const reports = new Map([[t!.ID, { ID: t!.ID, Status: { Timestamp: 'x', State: 'failed' as const, Message: 'started', Err: 'task: non-zero exit (1)', PortStatus: {} } }]]);
    const after = run(base({ services: [s], tasks: [t!], reports }));
    const old = after.find((x) => x.ID === t!.ID)!;
    const next = after.find((x) => x.ID !== t!.ID)!;
    assert.deepEqual([old.DesiredState, old.Status.State], ['shutdown', 'failed']);
    assert.deepEqual([next.Slot, next.DesiredState, next.RunAfter], [1, 'ready', 1_000_000 + 5000]);
    const later = run(base({ services: [s], tasks: after, now: 1_000_000 + 5001 }));
    assert.equal(later.find((x) => x.ID === next.ID)!.DesiredState, 'running');
    const none = svc('f', {}, { RestartPolicy: { Condition: 'none' } });
    assert.equal(run(base({ services: [none], tasks: [t!], reports })).length, 1, 'condition none: no new task');
  });

  test('scale down: tasks past Replicas removed once stopped; a removed service\'s tasks too', () => {
    const s3 = svc('w', { Mode: { Replicated: { Replicas: 3 } } });
    const three = run(base({ services: [s3] }));
    const s1 = svc('w', { Mode: { Replicated: { Replicas: 1 } } });
    const one = run(base({ services: [s1], tasks: three }));
    assert.deepEqual(one.filter((t) => t.DesiredState === 'remove').map((t) => t.Slot).sort(), [2, 3]);
    const stopped = new Map(one.filter((t) => t.DesiredState === 'remove').map((t) => [t.ID, { ID: t.ID, Status: { Timestamp: 'y', State: 'shutdown' as const, Message: 'shutdown', PortStatus: {} } }]));
    assert.deepEqual(run(base({ services: [s1], tasks: one, reports: stopped })).map((t) => t.Slot), [1]);
    assert.equal(run(base({ services: [], tasks: one, nodes: [] })).length, 0, 'a removed service on a node that is gone');
  });

  test('an updated spec replaces the tasks; a node gone: its task shut down and replaced elsewhere', () => {
    const s = svc('u');
    const [t] = run(base({ services: [s], nodes: [{ record: node('a') }, { record: node('b') }] }));
    const updated = svc('u', {}, { ContainerSpec: { Image: 'busybox:2' } });
    const after = run(base({ services: [updated], tasks: [t!] }));
    assert.equal(after.find((x) => x.ID === t!.ID)!.DesiredState, 'shutdown');
    const next = after.find((x) => x.ID !== t!.ID)!;
    assert.deepEqual([next.DesiredState, next.StartAfter], ['ready', t!.ID], 'stop-first: runs once the old one has stopped');
    const stopped = new Map([[t!.ID, { ID: t!.ID, Status: { Timestamp: 'y', State: 'shutdown' as const, Message: 'shutdown', PortStatus: {} } }]]);
    assert.equal(run(base({ services: [updated], tasks: after, reports: stopped })).find((x) => x.ID === next.ID)!.DesiredState, 'running');
    const other = t!.NodeID === 'a' ? 'b' : 'a';
    const moved = run(base({ services: [s], tasks: [t!], nodes: [{ record: node(other) }] }));
    assert.deepEqual(moved.find((x) => x.ID !== t!.ID)?.NodeID, other);
  });

  test('MaxReplicas per node, platforms, host ports already taken', () => {
    const two = [{ record: node('a') }, { record: node('b') }];
    const max = run(base({ services: [svc('m', { Mode: { Replicated: { Replicas: 3 } } }, { Placement: { MaxReplicas: 1 } })], nodes: two }));
    assert.deepEqual(max.filter((t) => t.NodeID).map((t) => t.NodeID).sort(), ['a', 'b']);
    assert.equal(max.filter((t) => t.Status.State === 'pending').length, 1);
    const arm = run(base({ services: [svc('p', {}, { Placement: { Platforms: [{ Architecture: 'arm64', OS: 'linux' }] } })], nodes: two }));
    assert.equal(arm[0]!.Status.State, 'pending');
    const amd = run(base({ services: [svc('p', {}, { Placement: { Platforms: [{ Architecture: 'amd64', OS: 'linux' }] } })], nodes: two }));
    assert.equal(amd[0]!.Status.State, 'assigned');
    const port = { EndpointSpec: { Ports: [{ TargetPort: 80, PublishedPort: 8080, PublishMode: 'host' }] }, Mode: { Replicated: { Replicas: 3 } } };
    const ports = run(base({ services: [svc('h', port)], nodes: two }));
    assert.deepEqual(ports.filter((t) => t.NodeID).map((t) => t.NodeID).sort(), ['a', 'b'], 'one task per node can publish 8080');
    assert.deepEqual(ports.find((t) => t.NodeID)!.HostPorts, [{ Protocol: 'tcp', TargetPort: 80, PublishedPort: 8080 }]);
  });

  test('a spread preference: over the values of a label first', () => {
    const nodes = [
      { record: node('a'), spec: { Labels: { dc: 'east' }, Role: 'worker' as const, Availability: 'active' as const } },
      { record: node('b'), spec: { Labels: { dc: 'east' }, Role: 'worker' as const, Availability: 'active' as const } },
      { record: node('c'), spec: { Labels: { dc: 'west' }, Role: 'worker' as const, Availability: 'active' as const } },
    ];
    const tasks = run(base({ services: [svc('s', { Mode: { Replicated: { Replicas: 4 } } }, { Placement: { Preferences: [{ Spread: { SpreadDescriptor: 'node.labels.dc' } }] } })], nodes }));
    const west = tasks.filter((t) => t.NodeID === 'c').length;
    assert.equal(west, 2, 'half on the one west node');
  });

  test('an update rolls one task at a time (Parallelism 1): the next once the last replacement runs', () => {
    const three = { Mode: { Replicated: { Replicas: 3 } } };
    const before = run(base({ services: [svc('r', three)] }));
    const updated = svc('r', three, { ContainerSpec: { Image: 'busybox:2' } });
    const step1 = run(base({ services: [updated], tasks: before }));
    const image = (t: TaskRecord) => (t.Spec['ContainerSpec'] as { Image: string }).Image;
    const liveNew = (ts: TaskRecord[]) => ts.filter((t) => (t.DesiredState === 'running' || t.DesiredState === 'ready') && image(t) === 'busybox:2');
    assert.equal(liveNew(step1).length, 1);
    assert.equal(step1.filter((t) => t.DesiredState === 'shutdown').length, 1);
    assert.equal(liveNew(run(base({ services: [updated], tasks: step1 }))).length, 1, 'waits while the replacement is not running');
    const runningReports = new Map(liveNew(step1).map((t) => [t.ID, { ID: t.ID, Status: { Timestamp: 'z', State: 'running' as const, Message: 'started', PortStatus: {} } }]));
    assert.equal(liveNew(run(base({ services: [updated], tasks: step1, reports: runningReports }))).length, 2, 'then the next');
    const all = svc('r', { ...three, UpdateConfig: { Parallelism: 0 } }, { ContainerSpec: { Image: 'busybox:3' } });
    assert.equal(run(base({ services: [all], tasks: before })).filter((t) => t.DesiredState === 'ready' && t.StartAfter).length, 3, 'Parallelism 0: all at once');
  });

  test('an update keeps the spread: a replacement goes where the task it replaces is being shut down', () => {
    const two = { Mode: { Replicated: { Replicas: 2 } } };
    const nodes = [{ record: node('a') }, { record: node('b') }, { record: node('c') }];
    const before = run(base({ services: [svc('s', two)], nodes: nodes.slice(1) }));
    assert.deepEqual(before.map((t) => t.NodeID).sort(), ['b', 'c']);
    const updated = svc('s', two, { ContainerSpec: { Image: 'busybox:2' } });
    // Node a is busier in all (another service's tasks) so that only the spread of this one decides.
    const busy = run(base({ services: [svc('o', { Mode: { Replicated: { Replicas: 2 } } })], nodes: [nodes[0]!] }));
    const step = run(base({ services: [updated, svc('o', { Mode: { Replicated: { Replicas: 2 } } })], tasks: [...before, ...busy], nodes }));
    const old = step.find((t) => t.ServiceID === 's' && t.DesiredState === 'shutdown')!;
    const next = step.find((t) => t.ServiceID === 's' && t.StartAfter === old.ID)!;
    assert.equal(next.NodeID, old.NodeID);
  });

  test('a node where the service\'s tasks keep failing is tried last', () => {
    const s1 = svc('f');
    const failed = (id: string, nodeId: string): TaskRecord => ({
      ID: id, CreatedAt: `2026-01-01T00:00:0${id.slice(-1)}Z`, UpdatedAt: '', Labels: {}, Spec: {}, ServiceID: 'f', ServiceName: 'f', Slot: 1, NodeID: nodeId,
      Status: { Timestamp: new Date(1_000_000 - 1000).toISOString(), State: 'failed', Message: 'started', Err: 'task: non-zero exit (1)', PortStatus: {} }, DesiredState: 'shutdown',
    });
    const history = [failed('x1', 'a'), failed('x2', 'a'), failed('x3', 'a')];
    const next = run(base({ services: [s1], tasks: history, nodes: [{ record: node('a') }, { record: node('b') }] })).find((t) => !t.ID.startsWith('x'));
    assert.equal(next?.NodeID, 'b');
  });

  test('an update after a scale down rolls (the slots scaled away do not hold it)', () => {
    const four = run(base({ services: [svc('r', { Mode: { Replicated: { Replicas: 4 } } })] }));
    const two = svc('r', { Mode: { Replicated: { Replicas: 2 } } });
    const scaled = run(base({ services: [two], tasks: four }));
    const stopped = new Map(scaled.filter((t) => t.DesiredState === 'remove').map((t) => [t.ID, { ID: t.ID, Status: { Timestamp: 'y', State: 'shutdown' as const, Message: 'shutdown', PortStatus: {} } }]));
    const kept = run(base({ services: [two], tasks: scaled, reports: stopped }));
    assert.equal(kept.length, 2);
    const updated = svc('r', { Mode: { Replicated: { Replicas: 2 } } }, { ContainerSpec: { Image: 'busybox:2' } });
    const after = run(base({ services: [updated], tasks: kept }));
    assert.equal(after.filter((t) => t.DesiredState === 'shutdown').length, 1, 'one task of the two replaced first');
  });

  test('MaxAttempts counts the runs that ended within the Window before the last one ended', () => {
    const iso = (ms: number) => new Date(ms).toISOString();
    const s = svc('w', {}, { RestartPolicy: { Condition: 'any', Delay: 0, MaxAttempts: 1, Window: 10_000_000_000 } });
    const ended = (id: string, at: number): TaskRecord => ({ ...run(base({ services: [s] }))[0]!, ID: id, CreatedAt: iso(at), DesiredState: 'shutdown', Status: { Timestamp: iso(at), State: 'failed', Message: 'started', PortStatus: {} } });
    // Two failures 20 s apart: each the only one in its 10 s window, so the slot runs again.
    const apart = run(base({ services: [s], tasks: [ended('old', 1_000_000 - 20_000), ended('last', 1_000_000)] }));
    assert.equal(apart.filter((t) => t.DesiredState === 'running').length, 1);
    // Two within 10 s: MaxAttempts reached, and still so a minute later.
    const close = [ended('old', 1_000_000 - 5_000), ended('last', 1_000_000)];
    assert.equal(run(base({ services: [s], tasks: close })).length, 2);
    assert.equal(run(base({ services: [s], tasks: close, now: 1_060_000 })).length, 2);
  });

  test('a task on a node down for a day is orphaned', () => {
    const s = svc('o');
    const [t] = run(base({ services: [s], nodes: [{ record: node('a') }] }));
    const running = { ...t!, Status: { ...t!.Status, State: 'running' as const } };
    const down = run(base({ services: [s], tasks: [running], nodes: [{ record: node('b') }] }));
    const mine = () => down.find((x) => x.ID === t!.ID)!;
    assert.deepEqual([mine().DesiredState, mine().Status.State], ['shutdown', 'running'], 'not yet: the node may come back');
    const day = run(base({ services: [s], tasks: down, nodes: [{ record: node('b') }], now: 1_000_000 + 24 * 3600_000 }));
    assert.equal(day.find((x) => x.ID === t!.ID)!.Status.State, 'orphaned');
    assert.equal(run(base({ services: [s], tasks: down, nodes: [{ record: node('b') }], now: 1_000_000 + 1000, orphanAfterMs: 500 })).find((x) => x.ID === t!.ID)!.Status.State, 'orphaned');
  });

  test('the registry credentials are not a change of the spec: no task is replaced for them', () => {
    const s = svc('r');
    const tasks = run(base({ services: [s] }));
    const withAuth = { ...s, Spec: withRegistryAuth(s.Spec, 'eyJ1c2VybmFtZSI6InUifQ==') };
    assert.deepEqual(orchestrate(base({ services: [withAuth], tasks })), { put: [], remove: [], services: [] });
    const t = run(base({ services: [withAuth] }))[0]!;
    assert.equal(registryAuthOf({ TaskTemplate: t.Spec as never }), 'eyJ1c2VybmFtZSI6InUifQ==', 'the node is given them');
    assert.equal((taskView(t, 1)['Spec'] as { ContainerSpec: Record<string, unknown> }).ContainerSpec['PullOptions'], undefined, 'never shown');
  });
});

describe('jobs', () => {
  const reportAll = (ts: TaskRecord[], state: 'running' | 'complete' | 'failed') =>
    new Map(ts.filter((t) => t.NodeID && t.DesiredState === 'complete' && !['complete', 'failed'].includes(t.Status.State)).map((t) => [t.ID, { ID: t.ID, Status: { Timestamp: new Date(1_000_000).toISOString(), State: state, Message: state, PortStatus: {} } }]));
  test('a replicated job: TotalCompletions tasks from slot 0, MaxConcurrent at once, complete ones not run again', () => {
    const job = svc('j', { Mode: { ReplicatedJob: { MaxConcurrent: 2, TotalCompletions: 3 } } }, { RestartPolicy: { Delay: 0 } });
    const first = run(base({ services: [job] }));
    assert.deepEqual(first.map((t) => [t.Slot, t.DesiredState, t.JobIteration?.Index]).sort(), [[undefined, 'complete', 0], [1, 'complete', 0]]);
    const done = run(base({ services: [job], tasks: first, reports: reportAll(first, 'complete') }));
    assert.equal(done.length, 3, 'the third slot once one completes');
    const all = run(base({ services: [job], tasks: done, reports: reportAll(done, 'complete') }), 2);
    assert.equal(all.length, 3);
    assert.ok(all.every((t) => t.DesiredState === 'complete' && t.Status.State === 'complete'), 'complete/complete, nothing run again');
    // The next iteration (an update): every slot runs again; the old tasks stay as history.
    const next = run(base({ services: [{ ...job, JobStatus: { JobIteration: { Index: 1 }, LastExecution: '' } }], tasks: all }));
    assert.equal(next.filter((t) => t.JobIteration?.Index === 1).length, 2);
    assert.equal(next.length, 5);
  });

  test('a failed job task runs again after the restart delay; a global job: one per node, once', () => {
    const job = svc('j', { Mode: { ReplicatedJob: {} } });
    const first = run(base({ services: [job] }));
    assert.equal(first.length, 1);
    const failed = run(base({ services: [job], tasks: first, reports: reportAll(first, 'failed') }));
    const retry = failed.find((t) => t.ID !== first[0]!.ID)!;
    assert.deepEqual([retry.DesiredState, retry.RunAfter], ['ready', 1_000_000 + 5000]);
    assert.equal(run(base({ services: [job], tasks: failed, now: 1_000_000 + 5001 })).find((t) => t.ID === retry.ID)!.DesiredState, 'complete');
    const g = svc('g', { Mode: { GlobalJob: {} } });
    const two = [{ record: node('a') }, { record: node('b') }];
    const gt = run(base({ services: [g], nodes: two }));
    assert.deepEqual(gt.map((t) => t.NodeID).sort(), ['a', 'b']);
    const gdone = run(base({ services: [g], tasks: gt, nodes: two, reports: reportAll(gt, 'complete') }), 2);
    assert.equal(gdone.length, 2);
  });
});

// Rolling updates and rollbacks (lib/swarm/update.ts through lib/swarm/orchestrate.ts) in a made-up
// swarm whose nodes run what they are given: each step, a task meant to run reports running (or what
// `behave` says), one meant to stop reports shutdown; the service's UpdateStatus and rollbacks are
// written back as the orchestrator writes them.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { orchestrate, type ServiceInput } from '../../../lib/swarm/orchestrate.ts';
import { serviceSpecOf, type ServiceSpec } from '../../../lib/swarm/service-spec.ts';
import type { NodeRecord } from '../../../lib/cluster/node-record.ts';
import { isTerminal, type TaskRecord, type TaskReport, type TaskState } from '../../../lib/swarm/task.ts';

const node = (id: string): NodeRecord => ({
  id, hostname: id, addr: '10.0.0.1', engineVersion: 'x', labels: {}, os: 'linux', arch: 'x86_64', nanoCpus: 2e9, memoryBytes: 8e9,
  genericResources: [], state: 'ready', createdAt: '', updatedAt: '', version: 1, role: 'worker',
});
const spec = (image: string, extra: Record<string, unknown> = {}): ServiceSpec =>
  serviceSpecOf({ Name: 's', TaskTemplate: { ContainerSpec: { Image: image }, RestartPolicy: { Delay: 0 } }, Mode: { Replicated: { Replicas: 2 } }, ...extra }, () => 's');
const image = (t: TaskRecord) => (t.Spec['ContainerSpec'] as { Image: string }).Image;

function world(first: ServiceSpec) {
  let n = 0;
  const w = {
    now: 1_000_000,
    svc: { ID: 's', Spec: first } as ServiceInput,
    tasks: [] as TaskRecord[],
    /** What a task of this image does when asked to run (default: runs). */
    behave: (_t: TaskRecord): TaskState => 'running',
    update(next: ServiceSpec) {
      w.svc = { ID: 's', Spec: next, PreviousSpec: w.svc.Spec };
    },
    step(ms = 1000) {
      w.now += ms;
      const ts = new Date(w.now).toISOString();
      const reports = new Map<string, TaskReport>();
      for (const t of w.tasks) {
        if (!t.NodeID || isTerminal(t.Status.State)) continue;
        const state: TaskState | undefined = t.DesiredState === 'running' ? (t.Status.State === 'running' ? undefined : w.behave(t)) : t.DesiredState === 'ready' ? undefined : 'shutdown';
        if (state) reports.set(t.ID, { ID: t.ID, Status: { Timestamp: ts, State: state, Message: state, PortStatus: {} } });
      }
      const r = orchestrate({ now: w.now, services: [w.svc], tasks: w.tasks, reports, nodes: [{ record: node('a') }, { record: node('b') }], retention: 10, newId: () => `t${++n}` });
      const byId = new Map(w.tasks.map((t) => [t.ID, t]));
      for (const t of r.put) byId.set(t.ID, t);
      for (const id of r.remove) byId.delete(id);
      w.tasks = [...byId.values()];
      for (const c of r.services) {
        w.svc = { ...w.svc, UpdateStatus: c.UpdateStatus };
        if (c.rollback) w.svc = { ID: 's', Spec: w.svc.PreviousSpec!, UpdateStatus: c.UpdateStatus };
      }
      return r;
    },
    steps(k: number, ms = 1000) {
      for (let i = 0; i < k; i++) w.step(ms);
    },
    running: () => w.tasks.filter((t) => t.DesiredState === 'running' && t.Status.State === 'running').map(image).sort(),
  };
  return w;
}

describe('rolling updates', () => {
  test('one at a time, Delay between batches; UpdateStatus updating, then completed once the last has run for Monitor', () => {
    const w = world(spec('img:1'));
    w.steps(3);
    assert.deepEqual(w.running(), ['img:1', 'img:1']);
    w.update(spec('img:2', { UpdateConfig: { Parallelism: 1, Delay: 10_000_000_000, Monitor: 2_000_000_000 } }));
    w.step();
    assert.deepEqual([w.svc.UpdateStatus?.State, w.svc.UpdateStatus?.Message], ['updating', 'update in progress']);
    w.steps(4);
    assert.deepEqual(w.running(), ['img:1', 'img:2'], 'the second waits for the Delay');
    const r = w.step(10_000);
    assert.ok(r.wakeAt === undefined || r.wakeAt > w.now);
    w.steps(4);
    assert.deepEqual(w.running(), ['img:2', 'img:2']);
    w.steps(3);
    assert.deepEqual([w.svc.UpdateStatus?.State, w.svc.UpdateStatus?.Message, !!w.svc.UpdateStatus?.CompletedAt], ['completed', 'update completed', true]);
  });

  test('stop-first: the replacement starts once the old task has stopped; start-first: both run, then the old one goes', () => {
    const w = world(spec('img:1', { Mode: { Replicated: { Replicas: 1 } } }));
    w.steps(2);
    w.update(spec('img:2', { Mode: { Replicated: { Replicas: 1 } } }));
    w.step();
    const fresh = w.tasks.find((t) => image(t) === 'img:2')!;
    assert.equal(fresh.DesiredState, 'ready');
    w.steps(3);
    assert.deepEqual(w.running(), ['img:2']);
    w.update(spec('img:3', { Mode: { Replicated: { Replicas: 1 } }, UpdateConfig: { Order: 'start-first' } }));
    w.step();
    w.step();
    assert.deepEqual(w.tasks.filter((t) => t.Status.State === 'running').map(image).sort(), ['img:2', 'img:3'], 'both run for a moment');
    assert.equal(w.tasks.find((t) => image(t) === 'img:2' && t.Status.State === 'running')?.DesiredState, 'shutdown', 'the old one shut down once the new one runs');
    w.steps(2);
    assert.deepEqual(w.running(), ['img:3']);
  });

  test('a failing update pauses: the reference\'s message, no further task replaced', () => {
    const w = world(spec('img:1'));
    w.steps(3);
    w.behave = (t) => (image(t) === 'bad' ? 'failed' : 'running');
    w.update(spec('bad', { UpdateConfig: { FailureAction: 'pause' } }));
    w.steps(4);
    assert.equal(w.svc.UpdateStatus?.State, 'paused');
    const failed = w.tasks.find((t) => image(t) === 'bad' && t.Status.State === 'failed')!;
    assert.equal(w.svc.UpdateStatus?.Message, `update paused due to failure or early termination of task ${failed.ID}`);
    w.steps(5);
    assert.deepEqual(w.running(), ['img:1'], 'the other slot keeps its old task');
  });

  test('FailureAction rollback: the previous spec back, rollback_started then rollback_completed', () => {
    const w = world(spec('img:1'));
    w.steps(3);
    w.behave = (t) => (image(t) === 'bad' ? 'failed' : 'running');
    w.update(spec('bad', { UpdateConfig: { FailureAction: 'rollback' }, RollbackConfig: { Monitor: 1_000_000_000 } }));
    for (let i = 0; i < 4 && w.svc.UpdateStatus?.State !== 'rollback_started'; i++) w.step();
    assert.equal(w.svc.UpdateStatus?.State, 'rollback_started');
    assert.match(w.svc.UpdateStatus!.Message, /^update rolled back due to failure or early termination of task t\d+$/);
    assert.equal(image({ Spec: w.svc.Spec.TaskTemplate } as unknown as TaskRecord), 'img:1');
    assert.equal(w.svc.PreviousSpec, undefined);
    w.steps(8);
    assert.deepEqual(w.running(), ['img:1', 'img:1']);
    assert.deepEqual([w.svc.UpdateStatus?.State, w.svc.UpdateStatus?.Message], ['rollback_completed', 'rollback completed']);
  });

  test('a manual rollback (rollback_started, the previous spec) rolls back and completes', () => {
    const w = world(spec('img:1'));
    w.steps(3);
    w.update(spec('img:2'));
    w.steps(8);
    assert.deepEqual(w.running(), ['img:2', 'img:2']);
    w.svc = { ID: 's', Spec: w.svc.PreviousSpec!, PreviousSpec: w.svc.Spec, UpdateStatus: { State: 'rollback_started', StartedAt: new Date(w.now).toISOString(), Message: 'manually requested rollback' } };
    w.steps(12);
    assert.deepEqual(w.running(), ['img:1', 'img:1']);
    assert.equal(w.svc.UpdateStatus?.State, 'rollback_completed');
  });

  test('MaxFailureRatio: failures up to the ratio of the slots go on; FailureAction continue goes on and completes', () => {
    const four = { Mode: { Replicated: { Replicas: 4 } } };
    const w = world(spec('img:1', four));
    w.steps(3);
    let failedOnce = false;
    w.behave = (t) => {
      if (image(t) === 'img:2' && !failedOnce) {
        failedOnce = true;
        return 'failed';
      }
      return 'running';
    };
    w.update(spec('img:2', { ...four, UpdateConfig: { Parallelism: 2, MaxFailureRatio: 0.25, Monitor: 1_000_000_000 } }));
    w.steps(20);
    assert.equal(w.svc.UpdateStatus?.State, 'completed', 'one failure in four slots is within 0.25');
    assert.deepEqual(w.running(), ['img:2', 'img:2', 'img:2', 'img:2']);
    const c = world(spec('img:1'));
    c.steps(3);
    c.behave = (t) => (image(t) === 'bad' ? 'failed' : 'running');
    c.update(spec('bad', { UpdateConfig: { FailureAction: 'continue' } }));
    c.steps(10);
    assert.notEqual(c.svc.UpdateStatus?.State, 'paused');
    assert.equal(c.tasks.filter((t) => image(t) === 'img:1' && t.DesiredState === 'running').length, 0, 'every slot replaced despite the failures');
  });
});

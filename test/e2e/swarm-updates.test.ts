// Rolling updates and rollbacks of swarm services on a one-node swarm (issue 64, 2–3), with the
// docker CLI and the Engine API, as dockerd 20.10 answers (docs/reference-services.md): an update's
// UpdateStatus from updating to completed and its PreviousSpec; an update whose new tasks turn
// unhealthy rolled back by itself (FailureAction rollback); one that fails paused; a manual
// `docker service rollback` and POST /services/{id}/update?rollback=previous; start-first running
// the new task beside the old one before the old one goes. Jobs (issue 64, 1): replicated and
// global, to completion, again with each update.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { apiRequest, docker, dockerOk, testImages, type TestImages } from './harness/clients.ts';
import { startDaemon, type DaemonHandle } from './harness/daemon.ts';
import { swarmInit, swarmTasks } from './harness/swarm.ts';
import { until } from './harness/wait.ts';

interface UpdateStatus {
  State: string;
  StartedAt?: string;
  CompletedAt?: string;
  Message: string;
}
interface Service {
  ID: string;
  Version: { Index: number };
  Spec: { TaskTemplate: { ContainerSpec: { Image: string } } };
  PreviousSpec?: { TaskTemplate: { ContainerSpec: { Image: string } } };
  UpdateStatus?: UpdateStatus;
}

describe('swarm service updates and rollbacks', () => {
  let d: DaemonHandle;
  let imgs: TestImages;
  const dk = dockerOk(() => d);
  const service = async (name: string): Promise<Service> => {
    const r = await apiRequest(d, 'GET', `/services/${name}`);
    assert.equal(r.status, 200, r.text);
    return r.body as Service;
  };
  /** The images of the service's tasks that run. */
  const running = async (name: string) => (await swarmTasks(d, { service: [name] })).filter((t) => t.Status.State === 'running').map((t) => t.Spec.ContainerSpec?.Image ?? '').sort();
  const until2 = (what: string, fn: () => Promise<boolean>, ms = 60_000) =>
    until(what, fn, ms).catch(async (err: Error) => {
      throw new Error(`${err.message}\n${JSON.stringify(await swarmTasks(d, {}).catch(() => []))}\n${d.logs().split('\n').slice(-15).join('\n')}`);
    });

  before(async () => {
    imgs = await testImages();
    d = await startDaemon();
    await dk('load', '-i', imgs.dockerArchive);
    await dk('tag', imgs.tag, 'upd:1');
    await dk('tag', imgs.tag, 'upd:2');
    await swarmInit(d);
  }, { timeout: 120_000 });
  after(async () => {
    await d?.cleanup();
  }, { timeout: 60_000 });

  test('an update rolls the tasks one at a time after the delay: UpdateStatus updating, then completed; PreviousSpec', { timeout: 120_000 }, async () => {
    await dk('service', 'create', '--detach', '--no-resolve-image', '--name', 'web', '--replicas', '2', '--stop-grace-period', '1s', '--update-delay', '1s', '--update-monitor', '1s', 'upd:1', 'sleep', '1000');
    await until2('two tasks running', async () => (await running('web')).length === 2);
    assert.equal((await service('web')).UpdateStatus, undefined, 'no update yet');
    // The CLI waits for the update to converge (its progress reads UpdateStatus and the tasks).
    const out = await docker(d, ['service', 'update', '--no-resolve-image', '--image', 'upd:2', 'web'], { timeoutMs: 90_000 });
    assert.equal(out.code, 0, out.stderr);
    const s = await service('web');
    assert.equal(s.UpdateStatus?.State, 'completed');
    assert.equal(s.UpdateStatus?.Message, 'update completed');
    assert.ok(s.UpdateStatus?.StartedAt && s.UpdateStatus.CompletedAt && s.UpdateStatus.CompletedAt > s.UpdateStatus.StartedAt);
    assert.equal(s.PreviousSpec?.TaskTemplate.ContainerSpec.Image, 'upd:1');
    assert.deepEqual(await running('web'), ['upd:2', 'upd:2']);
  });

  test('docker service rollback; rollback=previous through the API; without a previous spec refused', { timeout: 120_000 }, async () => {
    const out = await docker(d, ['service', 'rollback', 'web'], { timeoutMs: 90_000 });
    assert.equal(out.code, 0, out.stderr);
    assert.match(out.stdout + out.stderr, /manually requested rollback/);
    // The CLI returns once the tasks converged; the rollback completes after its Monitor.
    await until2('rollback completed', async () => (await service('web')).UpdateStatus?.State === 'rollback_completed');
    const s = await service('web');
    assert.deepEqual([s.UpdateStatus?.State, s.Spec.TaskTemplate.ContainerSpec.Image, s.PreviousSpec?.TaskTemplate.ContainerSpec.Image], ['rollback_completed', 'upd:1', 'upd:2']);
    assert.equal(s.UpdateStatus?.Message, 'rollback completed');
    await until2('the old image runs again', async () => (await running('web')).join() === 'upd:1,upd:1');
    const api = await apiRequest(d, 'POST', `/services/${s.ID}/update?version=${s.Version.Index}&rollback=previous`, JSON.stringify(s.Spec));
    assert.equal(api.status, 200, api.text);
    const back = await service('web');
    assert.deepEqual([back.UpdateStatus?.State, back.UpdateStatus?.Message, back.Spec.TaskTemplate.ContainerSpec.Image], ['rollback_started', 'manually requested rollback', 'upd:2']);
    await until2('rolled back to upd:2', async () => (await service('web')).UpdateStatus?.State === 'rollback_completed' && (await running('web')).join() === 'upd:2,upd:2');
    await dk('service', 'create', '--detach', '--no-resolve-image', '--name', 'fresh', 'upd:1', 'sleep', '1000');
    const f = await service('fresh');
    const none = await apiRequest(d, 'POST', `/services/${f.ID}/update?version=${f.Version.Index}&rollback=previous`, JSON.stringify(f.Spec));
    assert.equal(none.status, 400, none.text);
    assert.match((none.body as { message: string }).message, /does not have a previous spec/);
    assert.equal((none.body as { message: string }).message, `rpc error: code = FailedPrecondition desc = service ${f.ID} does not have a previous spec`);
    const bogus = await apiRequest(d, 'POST', `/services/${f.ID}/update?version=${f.Version.Index}&rollback=bogus`, JSON.stringify(f.Spec));
    assert.deepEqual([bogus.status, (bogus.body as { message: string }).message], [500, 'unrecognized rollback option bogus']);
    const modeChange = await apiRequest(d, 'POST', `/services/${f.ID}/update?version=${f.Version.Index}`, JSON.stringify({ ...f.Spec, Mode: { Global: {} } }));
    assert.deepEqual([modeChange.status, (modeChange.body as { message: string }).message], [501, 'rpc error: code = Unimplemented desc = service mode change is not allowed']);
    await dk('service', 'rm', 'fresh');
    // A labels-only update replaces nothing and has no UpdateStatus (the reference resets it).
    await dk('service', 'update', '--detach', '--no-resolve-image', '--label-add', 'x=y', 'web');
    assert.equal((await service('web')).UpdateStatus, undefined);
  });

  test('an update whose tasks turn unhealthy is rolled back by itself (FailureAction rollback)', { timeout: 180_000 }, async () => {
    await dk('service', 'update', '--detach', '--no-resolve-image', '--image', 'upd:1', '--update-failure-action', 'rollback', '--update-monitor', '2s', '--rollback-monitor', '1s',
      '--health-cmd', 'false', '--health-interval', '1s', '--health-retries', '1', '--health-start-period', '0s', 'web');
    await until2('rolled back', async () => (await service('web')).UpdateStatus?.State === 'rollback_completed', 120_000);
    const s = await service('web');
    assert.match(s.UpdateStatus!.Message, /^rollback completed$/);
    assert.equal(s.Spec.TaskTemplate.ContainerSpec.Image, 'upd:2');
    assert.equal(s.PreviousSpec, undefined, 'an automatic rollback leaves no previous spec');
    const failed = (await swarmTasks(d, { service: ['web'] })).filter((t) => t.Status.State === 'failed');
    assert.ok(failed.some((t) => t.Status.Err === 'unhealthy container'), JSON.stringify(failed.map((t) => t.Status)));
    await until2('upd:2 runs on both slots', async () => (await running('web')).join() === 'upd:2,upd:2');
  });

  test('a failing update pauses with the reference\'s message; start-first runs the new task beside the old one', { timeout: 180_000 }, async () => {
    await dk('service', 'update', '--detach', '--no-resolve-image', '--args', 'false', '--update-failure-action', 'pause', 'web');
    await until2('paused', async () => (await service('web')).UpdateStatus?.State === 'paused', 90_000);
    assert.match((await service('web')).UpdateStatus!.Message, /^update paused due to failure or early termination of task [a-z0-9]{25}$/);
    await dk('service', 'rm', 'web');
    await dk('service', 'create', '--detach', '--no-resolve-image', '--name', 'sf', '--update-order', 'start-first', '--stop-grace-period', '1s', 'upd:1', 'sleep', '1000');
    await until2('sf running', async () => (await running('sf')).length === 1);
    let both = false;
    const watch = setInterval(() => {
      void running('sf').then((r) => {
        if (r.join() === 'upd:1,upd:2') both = true;
      }).catch(() => {});
    }, 100);
    try {
      await dk('service', 'update', '--detach', '--no-resolve-image', '--image', 'upd:2', 'sf');
      await until2('sf updated', async () => (await service('sf')).UpdateStatus?.State === 'completed', 60_000);
    } finally {
      clearInterval(watch);
    }
    assert.ok(both, 'the old and the new task ran at once');
    assert.deepEqual(await running('sf'), ['upd:2']);
    await dk('service', 'rm', 'sf');
  });

  test('jobs: a replicated job runs to TotalCompletions, MaxConcurrent at once, not again until update --force; a global job once per node', { timeout: 180_000 }, async () => {
    const status = async (name: string) => {
      const r = await apiRequest(d, 'GET', `/services?status=true&filters=${encodeURIComponent(JSON.stringify({ name: [name] }))}`);
      return (r.body as Array<{ ServiceStatus: { RunningTasks: number; DesiredTasks: number; CompletedTasks: number }; JobStatus?: { JobIteration: { Index?: number } } }>)[0]!;
    };
    await dk('service', 'create', '--detach', '--no-resolve-image', '--name', 'job1', '--mode', 'replicated-job', '--replicas', '3', '--max-concurrent', '2', 'upd:1', 'sh', '-c', 'sleep 1');
    let most = 0;
    await until2('three completions', async () => {
      const s = await status('job1');
      most = Math.max(most, s.ServiceStatus.RunningTasks);
      return s.ServiceStatus.CompletedTasks === 3;
    }, 90_000);
    assert.ok(most <= 2, `at most MaxConcurrent at once (${most})`);
    const s1 = await status('job1');
    assert.deepEqual([s1.ServiceStatus.DesiredTasks, s1.JobStatus?.JobIteration], [2, {}]);
    const done = await swarmTasks(d, { service: ['job1'] });
    assert.deepEqual(done.map((t) => `${t.DesiredState}/${t.Status.State}`), ['complete/complete', 'complete/complete', 'complete/complete']);
    assert.match(await dk('service', 'ls', '--filter', 'name=job1', '--format', '{{.Mode}} {{.Replicas}}'), /^replicated job 0\/2 \(3\/3 completed\)$/m);
    await new Promise((r) => setTimeout(r, 1500));
    assert.equal((await swarmTasks(d, { service: ['job1'] })).length, 3, 'a completed job runs nothing again');
    await dk('service', 'update', '--detach', '--no-resolve-image', '--force', 'job1');
    await until2('the next iteration completes', async () => (await status('job1')).JobStatus?.JobIteration.Index === 1 && (await status('job1')).ServiceStatus.CompletedTasks === 3, 90_000);
    assert.equal((await swarmTasks(d, { service: ['job1'] })).length, 6, 'the first iteration\'s tasks stay');
    await dk('service', 'rm', 'job1');

    await dk('service', 'create', '--detach', '--no-resolve-image', '--name', 'gjob', '--mode', 'global-job', 'upd:1', 'true');
    await until2('the global job completes', async () => (await status('gjob')).ServiceStatus.CompletedTasks === 1, 60_000);
    assert.deepEqual((await status('gjob')).ServiceStatus, { RunningTasks: 0, DesiredTasks: 0, CompletedTasks: 1 });
    await dk('service', 'rm', 'gjob');

    const bad = await apiRequest(d, 'POST', '/services/create', JSON.stringify({ Name: 'badjob', Mode: { ReplicatedJob: {} }, UpdateConfig: { Parallelism: 1 }, TaskTemplate: { ContainerSpec: { Image: 'upd:1' } } }));
    assert.deepEqual([bad.status, (bad.body as { message: string }).message], [400, 'rpc error: code = InvalidArgument desc = Jobs may not have an update config']);
  });
});

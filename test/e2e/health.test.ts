// Healthchecks through real clients: a passing check reaches healthy and a failing one unhealthy
// (inspect's State.Health with its log, `docker ps` "(healthy)", the health filter, health_status
// events), a probe past its timeout, the image's HEALTHCHECK (committed with docker-py) and
// --no-healthcheck, the reference's refusals of bad durations, dockerode.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { docker, dockerOk, dockerode, pythonDocker, type TestImages } from './harness/clients.ts';
import type { DaemonHandle } from './harness/daemon.ts';
import { removeAllAndCleanup, startWithImages } from './harness/setup.ts';

interface Health {
  Status: string;
  FailingStreak: number;
  Log: Array<{ ExitCode: number; Output: string; Start: string; End: string }>;
}

describe('healthchecks', () => {
  let d: DaemonHandle;
  let imgs: TestImages;
  const dk = dockerOk(() => d);
  before(async () => {
    ({ d, imgs } = await startWithImages());
  });
  after(() => removeAllAndCleanup(d));

  async function health(name: string): Promise<Health | undefined> {
    return JSON.parse(await dk('inspect', '-f', '{{json .State.Health}}', name)) ?? undefined;
  }

  async function until(name: string, status: string, ms = 15_000): Promise<Health> {
    const end = Date.now() + ms;
    let h: Health | undefined;
    while (Date.now() < end) {
      h = await health(name);
      if (h?.Status === status) return h;
      await new Promise((r) => setTimeout(r, 250));
    }
    assert.fail(`${name} did not become ${status}: ${JSON.stringify(h)}`);
  }

  test('a passing check becomes healthy, a failing one unhealthy: inspect, ps, the health filter, events', async () => {
    const since = Math.floor(Date.now() / 1000) - 1;
    await dk('run', '-d', '--name', 'good', '--health-cmd', 'echo fine', '--health-interval', '1s', imgs.tag, 'sleep', '300');
    await dk('run', '-d', '--name', 'bad', '--health-cmd', 'echo broken; exit 3', '--health-interval', '1s', '--health-retries', '2', imgs.tag, 'sleep', '300');
    assert.equal((await health('good'))?.Status, 'starting');
    assert.match(await dk('ps', '--filter', 'name=good', '--format', '{{.Status}}'), /\(health: starting\)/);

    const good = await until('good', 'healthy');
    assert.equal(good.FailingStreak, 0);
    assert.equal(good.Log[0]!.ExitCode, 0);
    assert.equal(good.Log[0]!.Output, 'fine\n');
    assert.ok(Date.parse(good.Log[0]!.End) >= Date.parse(good.Log[0]!.Start));
    const bad = await until('bad', 'unhealthy');
    assert.ok(bad.FailingStreak >= 2, JSON.stringify(bad));
    assert.deepEqual([bad.Log.at(-1)!.ExitCode, bad.Log.at(-1)!.Output], [3, 'broken\n']);

    assert.match(await dk('ps', '--filter', 'name=good', '--format', '{{.Status}}'), /^Up .* \(healthy\)$/);
    assert.match(await dk('ps', '--filter', 'name=bad', '--format', '{{.Status}}'), /\(unhealthy\)$/);
    assert.equal(await dk('ps', '--filter', 'health=healthy', '--format', '{{.Names}}'), 'good');
    assert.equal(await dk('ps', '--filter', 'health=unhealthy', '--format', '{{.Names}}'), 'bad');
    const badFilter = await docker(d, ['ps', '--filter', 'health=sick']);
    assert.match(badFilter.stderr, /Unrecognised filter value for health: sick/);

    const events = await dk('events', '--since', String(since), '--until', String(Math.ceil(Date.now() / 1000) + 1), '--filter', 'event=health_status', '--format', '{{.Actor.Attributes.name}} {{.Action}}');
    assert.match(events, /good health_status: healthy/);
    assert.match(events, /bad health_status: unhealthy/);
    // Each probe is an exec, logged as the reference logs it.
    const probes = await dk('events', '--since', String(since), '--until', String(Math.ceil(Date.now() / 1000) + 1), '--filter', 'container=good', '--format', '{{.Action}}');
    assert.match(probes, /^exec_create: \/bin\/sh -c .+\nexec_start: \/bin\/sh -c .+\nexec_die$/m, probes);

    // A restart starts over at "starting".
    await dk('restart', '-t', '0', 'good');
    assert.equal((await health('good'))?.Status, 'starting');
    await until('good', 'healthy');
    await dk('rm', '-f', 'good', 'bad');
  });

  test('a probe past its timeout fails with -1 and the reference text', async () => {
    await dk('run', '-d', '--name', 'slow', '--health-cmd', 'sleep 5', '--health-interval', '1s', '--health-timeout', '300ms', '--health-retries', '1', imgs.tag, 'sleep', '300');
    const h = await until('slow', 'unhealthy');
    assert.deepEqual([h.Log[0]!.ExitCode, h.Log[0]!.Output], [-1, 'Health check exceeded timeout (300ms)']);
    await dk('rm', '-f', 'slow');
  });

  test("the image's HEALTHCHECK applies (docker-py), --no-healthcheck turns it off; bad durations are refused", async () => {
    const out = await pythonDocker(d, `
      src = client.containers.create('${imgs.tag}', ['true'], name='hcsrc')
      src.commit(repository='hcimage', tag='v1', conf={'Healthcheck': {'Test': ['CMD-SHELL', 'echo from-image'], 'Interval': 1000000000}})
      src.remove()
      img = client.images.get('hcimage:v1')
      print(json.dumps(img.attrs['Config']['Healthcheck']))
      try:
          api.create_container('${imgs.tag}', ['true'], healthcheck={'test': ['CMD', 'true'], 'interval': 10})
          print('created')
      except docker.errors.APIError as e:
          print(e.status_code, e.explanation)
    `);
    const lines = out.trim().split('\n');
    assert.deepEqual(JSON.parse(lines[0]!), { Test: ['CMD-SHELL', 'echo from-image'], Interval: 1000000000 });
    assert.match(lines[1]!, /^400 .*Interval in Healthcheck cannot be less than 1ms/);

    await dk('run', '-d', '--name', 'fromimg', 'hcimage:v1', 'sleep', '300');
    const h = await until('fromimg', 'healthy');
    assert.equal(h.Log[0]!.Output, 'from-image\n');
    await dk('run', '-d', '--name', 'nocheck', '--no-healthcheck', 'hcimage:v1', 'sleep', '300');
    assert.equal(await dk('inspect', '-f', '{{json .State.Health}}', 'nocheck'), 'null');
    assert.equal(await dk('ps', '--filter', 'health=none', '--format', '{{.Names}}'), 'nocheck');
    await dk('rm', '-f', 'fromimg', 'nocheck');
    await dk('rmi', 'hcimage:v1');
  });

  test('dockerode: a Healthcheck at create reaches healthy', async () => {
    const api = dockerode(d);
    const c = await api.createContainer({ name: 'dode', Image: imgs.tag, Cmd: ['sleep', '300'], Healthcheck: { Test: ['CMD', 'true'], Interval: 1e9, Retries: 1 } });
    await c.start();
    await until('dode', 'healthy');
    const info = await c.inspect();
    assert.equal(info.State.Health?.Status, 'healthy');
    await c.remove({ force: true });
  });
});

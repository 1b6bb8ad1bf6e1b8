// Grouped shims (ENGINE_SHIM_GROUPS, opt-in; docs/performance.md "Grouped shims"): with one group,
// every runc v2 container of the daemon is served by one shim. Shown through the docker CLI: runs,
// exec, `docker update` and stop in each; the shim is named by the group's first container, and a
// daemon kill -9 with --live-restore after that container was removed adopts the others (the
// start-up reaping of shims a crash left keeps a shim that still serves its group); a shim killed
// ends every container of its group (each exited 137, as one shim's container does); the group's
// last container removed ends its shim.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { DaemonHandle } from './harness/daemon.ts';
import { docker, dockerOk, type TestImages } from './harness/clients.ts';
import { removeAllAndCleanup, startWithImages } from './harness/setup.ts';
import { pidAlive, sleep } from './harness/processes.ts';
import { shimsOf } from './harness/supervisor-procs.ts';

describe('grouped shims (ENGINE_SHIM_GROUPS=1)', () => {
  let d: DaemonHandle | undefined;
  let imgs: TestImages;
  const dk = dockerOk(() => d!);
  const state = (name: string) => docker(d!, ['inspect', '-f', '{{.State.Status}} {{.State.ExitCode}}', name]).then((r) => r.stdout.trim() || r.stderr.trim());
  const pidOf = async (name: string) => Number(await dk('inspect', '-f', '{{.State.Pid}}', name));
  const eventually = async (what: string, ok: () => boolean | Promise<boolean>, ms = 15_000) => {
    for (const until = Date.now() + ms; Date.now() < until; await sleep(200)) if (await ok()) return;
    assert.fail(`${what} (shims ${JSON.stringify(shimsOf(d!))}):\n${d!.logs().split('\n').filter((l) => /shim|level=(warn|error)/.test(l)).slice(-15).join('\n')}`);
  };

  before(async () => {
    ({ d, imgs } = await startWithImages({ args: ['--live-restore'], env: { ENGINE_SHIM_GROUPS: '1' } }));
  });
  after(async () => {
    await removeAllAndCleanup(d);
  });

  test('three containers, one shim: exec, update and stop each; a kill -9 of the daemon after the shim\'s first container left: the others adopted, the shim kept', async () => {
    const ids: string[] = [];
    for (const n of ['a', 'b', 'c']) ids.push(await dk('run', '-d', '--network', 'none', '--name', `g-${n}`, imgs.tag, 'sleep', '300'));
    const shims = shimsOf(d!);
    assert.equal(shims.length, 1, `one shim for the three: ${JSON.stringify(shims)}`);
    for (const n of ['a', 'b', 'c']) assert.equal(await dk('exec', `g-${n}`, 'echo', n), n);
    await dk('update', '--memory', '64m', '--memory-swap', '128m', 'g-b');
    assert.equal(await dk('inspect', '-f', '{{.HostConfig.Memory}}', 'g-b'), String(64 << 20));
    // The shim runs under the first container's id: remove that one; the shim serves the others on.
    await dk('rm', '-f', 'g-a');
    assert.deepEqual(shimsOf(d!), shims, 'the shim outlives its first container');
    await dk('stop', '-t', '1', 'g-c');
    assert.equal(await state('g-c'), 'exited 137');
    await dk('start', 'g-c');
    const pids = { b: await pidOf('g-b'), c: await pidOf('g-c') };
    assert.deepEqual(shimsOf(d!), shims, 'a restarted member joins the same shim');

    await d!.stop({ signal: 'SIGKILL' });
    await d!.restart();
    assert.equal(await state('g-b'), 'running 0');
    assert.deepEqual({ b: await pidOf('g-b'), c: await pidOf('g-c') }, pids, 'adopted, same processes');
    assert.deepEqual(shimsOf(d!), shims, 'the start-up reaping kept the shim that serves the group');
    assert.match(d!.logs(), /kept a shim that serves other tasks of its group/);
    assert.equal(await dk('exec', 'g-c', 'echo', 'after'), 'after');
  });

  test('the group\'s shim killed ends every container of the group (137 each); new runs start a new shim; the last one removed ends it', async () => {
    await dk('run', '-d', '--network', 'none', '--name', 'g-d', imgs.tag, 'sleep', '300');
    const members = ['g-b', 'g-c', 'g-d'];
    const pids = await Promise.all(members.map(pidOf));
    const [shim] = shimsOf(d!);
    assert.ok(shim);
    process.kill(shim, 'SIGKILL');
    for (const m of members) await eventually(`${m} exited 137`, async () => (await state(m)) === 'exited 137');
    assert.ok(pids.every((p) => !pidAlive(p)), 'their processes are gone');
    await dk('rm', ...members);
    await dk('run', '-d', '--network', 'none', '--name', 'g-e', imgs.tag, 'sleep', '300');
    await dk('run', '-d', '--network', 'none', '--name', 'g-f', imgs.tag, 'sleep', '300');
    const next = shimsOf(d!);
    assert.equal(next.length, 1, 'one new shim');
    assert.notEqual(next[0], shim);
    assert.equal(await dk('run', '--rm', '--network', 'none', imgs.tag, 'echo', 'once'), 'once', 'a run --rm joins and leaves the group');
    await dk('rm', '-f', 'g-e');
    assert.deepEqual(shimsOf(d!), next, 'kept while g-f runs');
    await dk('rm', '-f', 'g-f');
    await eventually('the last member removed ends the shim', () => shimsOf(d!).length === 0);
  });
});

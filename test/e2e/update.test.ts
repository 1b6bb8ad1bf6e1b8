// `docker update` through real clients: new memory, CPU and pids limits reach a running
// container's cgroups and show in inspect; a stopped container starts with them; the restart
// policy changes; the reference's refusals; docker-py and dockerode.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { docker, dockerOk, dockerode, pythonDocker, type TestImages } from './harness/clients.ts';
import type { DaemonHandle } from './harness/daemon.ts';
import { removeAllAndCleanup, startWithImages } from './harness/setup.ts';

describe('docker update', () => {
  let d: DaemonHandle;
  let imgs: TestImages;
  const dk = dockerOk(() => d);
  before(async () => {
    ({ d, imgs } = await startWithImages());
  });
  after(() => removeAllAndCleanup(d));

  const cg = (name: string, file: string) => dk('exec', name, 'cat', `/sys/fs/cgroup/${file}`);

  test('a running container gets new memory, CPU and pids limits; inspect shows them; the restart policy changes', async () => {
    await dk('run', '-d', '--name', 'upd', imgs.tag, 'sleep', '300');
    await dk('update', '--memory', '64m', '--memory-swap', '128m', 'upd');
    assert.equal(await cg('upd', 'memory/memory.limit_in_bytes'), String(64 * 1024 * 1024));
    assert.equal(await dk('inspect', '-f', '{{.HostConfig.Memory}} {{.HostConfig.MemorySwap}}', 'upd'), `${64 * 1024 * 1024} ${128 * 1024 * 1024}`);
    await dk('update', '--cpus', '0.5', '--pids-limit', '50', 'upd');
    assert.equal(await cg('upd', 'cpu/cpu.cfs_quota_us'), '50000');
    assert.equal(await cg('upd', 'pids/pids.max'), '50');
    assert.equal(await dk('inspect', '-f', '{{.HostConfig.NanoCpus}} {{.HostConfig.PidsLimit}}', 'upd'), '500000000 50');
    await dk('update', '--restart', 'on-failure:3', 'upd');
    assert.equal(await dk('inspect', '-f', '{{.HostConfig.RestartPolicy.Name}}:{{.HostConfig.RestartPolicy.MaximumRetryCount}}', 'upd'), 'on-failure:3');
    // The memory stays where it was; paused containers take updates too.
    await dk('pause', 'upd');
    await dk('update', '--memory', '96m', '--memory-swap', '192m', 'upd');
    await dk('unpause', 'upd');
    assert.equal(await cg('upd', 'memory/memory.limit_in_bytes'), String(96 * 1024 * 1024));
  });

  test('a blkio weight the kernel cannot apply is discarded with the reference warning, at create and at update', async () => {
    const supported = ['/sys/fs/cgroup/blkio/blkio.weight', '/sys/fs/cgroup/blkio/blkio.bfq.weight'].some((p) => existsSync(p));
    const run = await docker(d, ['run', '-d', '--name', 'blk', '--blkio-weight', '300', imgs.tag, 'sleep', '300']);
    assert.equal(run.code, 0, run.stderr);
    const upd = await docker(d, ['update', '--blkio-weight', '400', 'blk']);
    assert.equal(upd.code, 0, upd.stderr);
    if (!supported) {
      assert.match(run.stderr, /Your kernel does not support Block I\/O weight or the cgroup is not mounted\. Weight discarded\./);
      assert.match(upd.stdout + upd.stderr, /Weight discarded/);
      assert.equal(await dk('inspect', '-f', '{{.HostConfig.BlkioWeight}}', 'blk'), '0');
    } else {
      assert.equal(await dk('inspect', '-f', '{{.HostConfig.BlkioWeight}}', 'blk'), '400');
    }
  });

  test('a stopped container starts with the updated limits', async () => {
    await dk('create', '--name', 'upd2', imgs.tag, 'sleep', '300');
    await dk('update', '--memory', '32m', 'upd2');
    await dk('start', 'upd2');
    assert.equal(await cg('upd2', 'memory/memory.limit_in_bytes'), String(32 * 1024 * 1024));
  });

  test('refusals: too little memory, conflicting CPU options, a restart policy with --rm, a memory above the set swap', async () => {
    const small = await docker(d, ['update', '--memory', '1m', 'upd']);
    assert.notEqual(small.code, 0);
    assert.match(small.stderr, /Minimum memory limit allowed is 6MB/);
    const cpus = await docker(d, ['update', '--cpu-quota', '20000', 'upd']);
    assert.match(cpus.stderr, /CPU Quota or CPU Period cannot be updated as NanoCPUs has already been set/);
    const swap = await docker(d, ['update', '--memory', '256m', 'upd']);
    assert.match(swap.stderr, /Memory limit should be smaller than already set memoryswap limit/);
    await dk('run', '-d', '--rm', '--name', 'rmme', imgs.tag, 'sleep', '300');
    const rp = await docker(d, ['update', '--restart', 'always', 'rmme']);
    assert.match(rp.stderr, /Restart policy cannot be updated because AutoRemove is enabled for the container/);
    const missing = await docker(d, ['update', '--memory', '64m', 'nosuchcontainer']);
    assert.match(missing.stderr, /No such container: nosuchcontainer/);
    assert.equal(await cg('upd', 'memory/memory.limit_in_bytes'), String(96 * 1024 * 1024), 'refused updates change nothing');
    await dk('rm', '-f', 'rmme');
  });

  test('docker-py and dockerode update a running container', async () => {
    const out = await pythonDocker(d, `
      c = client.containers.run('${imgs.tag}', ['sleep', '300'], detach=True, name='pyupd')
      print(json.dumps(c.update(mem_limit='48m', memswap_limit='96m')))
      c.reload()
      print(c.attrs['HostConfig']['Memory'])
    `);
    const lines = out.trim().split('\n');
    assert.deepEqual(JSON.parse(lines[0]!), { Warnings: [] });
    assert.equal(lines[1], String(48 * 1024 * 1024));
    assert.equal(await cg('pyupd', 'memory/memory.limit_in_bytes'), String(48 * 1024 * 1024));

    const api = dockerode(d);
    const c = await api.createContainer({ name: 'dodeupd', Image: imgs.tag, Cmd: ['sleep', '300'] });
    await c.start();
    await c.update({ PidsLimit: 30 });
    assert.equal(await cg('dodeupd', 'pids/pids.max'), '30');
    assert.equal((await c.inspect()).HostConfig.PidsLimit, 30);
  });
});

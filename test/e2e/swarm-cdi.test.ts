// Generic resources bound to real devices (issue (15 of 21), 4): a node advertises gpu=GPU-aaa and
// gpu=GPU-bbb, and its CDI specs describe the devices example.com/gpu=GPU-aaa and =GPU-bbb. A service
// task reserving gpu=1 gets DOCKER_RESOURCE_GPU naming its unit and that unit's CDI device
// injected (its edits seen inside); two tasks never get the same unit, a third waits pending.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { apiRequest, docker, testImages, type TestImages } from './harness/clients.ts';
import { startDaemon, type DaemonHandle } from './harness/daemon.ts';
import { swarmInit } from './harness/swarm.ts';
import { until } from './harness/wait.ts';

interface Task { ID: string; Status: { State: string; Err?: string; ContainerStatus?: { ContainerID: string } } }

describe('swarm tasks get the CDI device of the generic resource they were given', () => {
  let d: DaemonHandle;
  let imgs: TestImages;
  let specs: string;
  const dk = async (...args: string[]) => {
    const r = await docker(d, args);
    assert.equal(r.code, 0, `docker ${args.join(' ')}: ${r.stderr}\n${d.logs().split('\n').slice(-20).join('\n')}`);
    return r.stdout.trim();
  };
  const tasks = async (): Promise<Task[]> => (await apiRequest(d, 'GET', `/tasks?filters=${encodeURIComponent(JSON.stringify({ service: ['gpu'] }))}`)).body as Task[];

  before(async () => {
    imgs = await testImages();
    specs = mkdtempSync(join(tmpdir(), 'engine-swarm-cdi-'));
    writeFileSync(join(specs, 'gpu.json'), JSON.stringify({
      cdiVersion: '0.6.0', kind: 'example.com/gpu',
      devices: ['GPU-aaa', 'GPU-bbb'].map((name) => ({ name, containerEdits: { env: [`CDI_GPU=${name}`] } })),
    }));
    d = await startDaemon({
      args: ['--node-generic-resource', 'gpu=GPU-aaa', '--node-generic-resource', 'gpu=GPU-bbb'],
      daemonJson: { features: { cdi: true }, 'cdi-spec-dirs': [specs] },
    });
    await dk('load', '-i', imgs.dockerArchive);
    await swarmInit(d);
  }, { timeout: 120_000 });
  after(async () => {
    await d?.cleanup();
    rmSync(specs, { recursive: true, force: true });
  }, { timeout: 60_000 });

  test('two tasks reserving gpu=1: each its own unit, its env and its device; a third stays pending', { timeout: 120_000 }, async () => {
    await dk('service', 'create', '--detach', '--no-resolve-image', '--name', 'gpu', '--replicas', '2', '--generic-resource', 'gpu=1', imgs.tag, 'sleep', '1000');
    await until('two tasks running', async () => (await tasks()).filter((t) => t.Status.State === 'running').length === 2, 60_000);
    const seen: string[] = [];
    for (const t of (await tasks()).filter((x) => x.Status.State === 'running')) {
      const out = await dk('exec', t.Status.ContainerStatus!.ContainerID, 'sh', '-c', 'echo "$DOCKER_RESOURCE_GPU $CDI_GPU"');
      const [unit, device] = out.split(' ');
      assert.equal(device, unit, 'the injected device is the unit the task was given');
      seen.push(unit!);
    }
    assert.deepEqual(seen.sort(), ['GPU-aaa', 'GPU-bbb']);
    await dk('service', 'scale', '--detach', 'gpu=3');
    await until('the third pending', async () => (await tasks()).some((t) => t.Status.State === 'pending'), 30_000);
    const pending = (await tasks()).find((t) => t.Status.State === 'pending')!;
    assert.match(pending.Status.Err ?? '', /insufficient resources/);
    await dk('service', 'rm', 'gpu');
  });
});

// CDI (issue (15 of 21), 1-3, 5): specs the test writes (JSON and YAML) in a spec dir of its own,
// read with `features.cdi` on, re-read when a file changes; `--device vendor.com/class=name` and
// DeviceRequests with Driver "cdi" apply the device's and the spec's edits (a device node made
// with mknod, a mount, env, a hook that writes a file the container sees); unknown devices and a
// --gpus nobody answers are the reference's errors, with nothing created.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { apiRequest, docker, dockerOk, type TestImages } from './harness/clients.ts';
import type { DaemonHandle } from './harness/daemon.ts';
import { removeAllAndCleanup, startWithImages } from './harness/setup.ts';

describe('CDI devices', () => {
  let d: DaemonHandle;
  let imgs: TestImages;
  let dir: string;
  let specs: string;
  let shared: string;
  const dk = dockerOk(() => d);

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'engine-cdi-'));
    specs = join(dir, 'cdi');
    shared = join(dir, 'shared');
    mkdirSync(specs);
    mkdirSync(shared);
    writeFileSync(join(shared, 'file'), 'from-the-host\n');
    // A device node of the test's own: /dev/null's numbers (char 1:3), under the temp dir.
    execFileSync('mknod', [join(dir, 'testdev'), 'c', '1', '3']);
    writeFileSync(join(specs, 'test.json'), JSON.stringify({
      cdiVersion: '0.6.0',
      kind: 'example.com/test',
      containerEdits: { env: ['SPEC_LEVEL=1'] },
      devices: [{
        name: 'dev0',
        containerEdits: {
          env: ['TEST_DEV=dev0'],
          deviceNodes: [{ path: '/dev/engine-test0', hostPath: join(dir, 'testdev'), permissions: 'rw' }],
          mounts: [{ hostPath: shared, containerPath: '/cdi-mnt', options: ['rbind', 'rw'] }],
          hooks: [{ hookName: 'createRuntime', path: '/bin/sh', args: ['sh', '-c', `echo hooked > ${join(shared, 'hooked')}`] }],
        },
      }],
    }));
    writeFileSync(join(specs, 'yaml.yaml'), 'cdiVersion: 0.8.0\nkind: example.com/yaml\ndevices:\n  - name: y0\n    containerEdits:\n      env: ["FROM_YAML=yes"]\n');
    writeFileSync(join(specs, 'bad.json'), '{"cdiVersion": "0.6.0", "kind": "not a kind", "devices": []}');
    ({ d, imgs } = await startWithImages({ daemonJson: { features: { cdi: true }, 'cdi-spec-dirs': [specs] } }));
  });
  after(async () => {
    await removeAllAndCleanup(d);
    rmSync(dir, { recursive: true, force: true });
  });

  test('docker info lists the spec dirs and warns of the bad file; the start did not fail', async () => {
    const info = (await apiRequest(d, 'GET', '/info')).body as { CDISpecDirs: string[]; Warnings: string[] | null };
    assert.deepEqual(info.CDISpecDirs, [specs]);
    assert.ok((info.Warnings ?? []).some((w) => w.includes('bad.json')), JSON.stringify(info.Warnings));
  });

  test('--device vendor.com/class=name: the device node, mount, env and hook, seen inside', async () => {
    const out = await dk('run', '--rm', '--device', 'example.com/test=dev0', imgs.tag, 'sh', '-c',
      'stat -c "%F %t:%T" /dev/engine-test0; echo "$TEST_DEV $SPEC_LEVEL"; cat /cdi-mnt/file /cdi-mnt/hooked; echo x > /dev/engine-test0 && echo writable');
    assert.deepEqual(out.split('\n'), ['character special file 1:3', 'dev0 1', 'from-the-host', 'hooked', 'writable']);
  });

  test('DeviceRequests with Driver "cdi" (the Engine API), from a YAML spec', async () => {
    const made = await apiRequest(d, 'POST', '/containers/create', JSON.stringify({
      Image: imgs.tag, Cmd: ['sh', '-c', 'echo $FROM_YAML'],
      HostConfig: { DeviceRequests: [{ Driver: 'cdi', DeviceIDs: ['example.com/yaml=y0'] }] },
    }));
    assert.equal(made.status, 201, JSON.stringify(made.body));
    const id = (made.body as { Id: string }).Id;
    await dk('start', '-a', id).then((o) => assert.equal(o, 'yes'));
    await dk('rm', id);
  });

  test('an unknown device and a --gpus nobody answers: the reference\'s errors, nothing created', async () => {
    const before = await dk('ps', '-aq');
    const unknown = await docker(d, ['create', '--device', 'example.com/test=nope', imgs.tag, 'true']);
    assert.notEqual(unknown.code, 0);
    assert.match(unknown.stderr, /CDI device injection failed: unresolvable CDI devices example\.com\/test=nope/);
    const gpus = await docker(d, ['create', '--gpus', 'all', imgs.tag, 'true']);
    assert.notEqual(gpus.code, 0);
    assert.match(gpus.stderr, /could not select device driver "" with capabilities: \[\[gpu\]\]/);
    assert.equal(await dk('ps', '-aq'), before);
  });

  test('a spec written later is read (the dir is watched); --gpus is answered through nvidia.com/gpu', async () => {
    writeFileSync(join(specs, 'gpu.json'), JSON.stringify({
      cdiVersion: '0.5.0', kind: 'nvidia.com/gpu',
      devices: [{ name: 'GPU-aaa', containerEdits: { env: ['SEEN_GPU=GPU-aaa'] } }, { name: 'GPU-bbb', containerEdits: { env: ['OTHER_GPU=GPU-bbb'] } }],
    }));
    let out = '';
    for (let i = 0; i < 50; i++) {
      const r = await docker(d, ['run', '--rm', '--gpus', '1', imgs.tag, 'sh', '-c', 'echo "$SEEN_GPU/$OTHER_GPU"']);
      if (r.code === 0) {
        out = r.stdout.trim();
        break;
      }
      await new Promise((res) => setTimeout(res, 100));
    }
    assert.equal(out, 'GPU-aaa/');
    assert.equal(await dk('run', '--rm', '--gpus', 'all', imgs.tag, 'sh', '-c', 'echo "$SEEN_GPU/$OTHER_GPU"'), 'GPU-aaa/GPU-bbb');
  });
});

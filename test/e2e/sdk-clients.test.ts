// docker-py's low-level API and dockerode against engined.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startDaemon, type DaemonHandle } from './harness/daemon.ts';
import { docker, dockerode, pythonDocker, testImages } from './harness/clients.ts';

describe('SDK clients', () => {
  let d: DaemonHandle;
  let imgs: Awaited<ReturnType<typeof testImages>>;
  before(async () => {
    d = await startDaemon();
    imgs = await testImages();
    const r = await docker(d, ['load', '-i', imgs.dockerArchive]);
    assert.equal(r.code, 0, r.stderr);
  });
  after(async () => {
    await d?.cleanup();
  });

  test('docker-py low-level API: create, start, wait, logs, inspect, list, remove', async () => {
    const out = await pythonDocker(
      d,
      `
c = api.create_container('${imgs.tag}', ['sh', '-c', 'echo py-out; echo py-err >&2; exit 4'], host_config=api.create_host_config(network_mode='none'), labels={'suite': 'py'})
api.start(c)
res = api.wait(c)
out = api.logs(c, stdout=True, stderr=False)
err = api.logs(c, stdout=False, stderr=True)
info = api.inspect_container(c)
lst = api.containers(all=True, filters={'label': 'suite=py'})
api.remove_container(c)
print(json.dumps({'wait': res, 'out': out.decode(), 'err': err.decode(), 'status': info['State']['Status'], 'n': len(lst), 'ping': api.ping(), 'images': [t for i in api.images() for t in (i['RepoTags'] or [])]}))
`,
    );
    const r = JSON.parse(out);
    assert.equal(r.wait.StatusCode, 4);
    assert.equal(r.out, 'py-out\n');
    assert.equal(r.err, 'py-err\n');
    assert.equal(r.status, 'exited');
    assert.equal(r.n, 1);
    assert.equal(r.ping, true);
    assert.ok(r.images.includes(imgs.tag));
  });

  test('docker-py high-level containers.run (no network) returns output', async () => {
    const out = await pythonDocker(d, `print(json.dumps(client.containers.run('${imgs.tag}', ['echo', 'hi from run'], network_mode='none', remove=True).decode()))`);
    assert.equal(JSON.parse(out), 'hi from run\n');
  });

  test('dockerode: createContainer, start, wait, logs, inspect, remove, listImages', async () => {
    const api = dockerode(d);
    const c = await api.createContainer({ Image: imgs.tag, Cmd: ['sh', '-c', 'echo node; exit 2'], HostConfig: { NetworkMode: 'none' } });
    await c.start();
    const w = await c.wait();
    assert.equal(w.StatusCode, 2);
    const logs = (await c.logs({ stdout: true, stderr: true, follow: false })) as unknown as Buffer;
    assert.equal(logs.subarray(8).toString(), 'node\n');
    const info = await c.inspect();
    assert.equal(info.State.ExitCode, 2);
    await c.remove();
    const images = await api.listImages();
    assert.ok(images.some((i) => (i.RepoTags ?? []).includes(imgs.tag)));
    const list = await api.listContainers({ all: true });
    assert.ok(!list.some((x) => x.Id === c.id));
  });

  test('dockerode: a HostConfig field of the wrong type is a 400 with the reference message, and nothing is created', async () => {
    const api = dockerode(d);
    const before = (await api.listContainers({ all: true })).length;
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ BlkioDeviceWriteBps: 'xx' }, 'json: cannot unmarshal string into Go struct field HostConfig.HostConfig.BlkioDeviceWriteBps of type []*blkiodev.ThrottleDevice'],
      [{ Ulimits: [{ Name: 'nofile', Soft: '1' }] }, 'json: cannot unmarshal string into Go struct field Ulimit.HostConfig.Ulimits.Soft of type int64'],
      [{ Sysctls: { 'net.ipv4.ip_forward': 1 } }, 'json: cannot unmarshal number into Go struct field HostConfig.HostConfig.Sysctls of type string'],
    ];
    for (const [hc, message] of cases) {
      await assert.rejects(api.createContainer({ Image: imgs.tag, Cmd: ['true'], HostConfig: { NetworkMode: 'none', ...hc } }), (err: { statusCode?: number; json?: { message?: string } }) => {
        assert.equal(err.statusCode, 400, JSON.stringify(hc));
        assert.equal(err.json?.message, message);
        return true;
      });
    }
    assert.equal((await api.listContainers({ all: true })).length, before);
  });
});

// Swarm services run as tasks on a one-node swarm (issue 63, 2–4), with the docker CLI, docker-py and
// the Engine API, matched to dockerd 20.10 (docs/reference-services.md): tasks in the reference's
// shape and states, containers SERVICE.SLOT.TASKID (SERVICE.NODEID.TASKID for global) with the
// com.docker.swarm.* labels, `docker service ps`, ServiceStatus, scale up and down, global mode, a
// reservation no node has pending with the scheduler's reason, a task that fails replaced after the
// restart delay, an update replacing the tasks, rm taking the containers; the logs of a service and
// of a task (issue 64, 4).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { apiRequest, docker, pythonDocker, testImages, type TestImages } from './harness/clients.ts';
import { startDaemon, type DaemonHandle } from './harness/daemon.ts';
import { swarmInit } from './harness/swarm.ts';
import { until } from './harness/wait.ts';
import { freePort } from './harness/free-port.ts';
import { bcryptHtpasswd, registryAvailable, startRegistry } from './registry/registry.ts';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const htpasswd = bcryptHtpasswd('alice', 's3cret');
import { connect } from 'node:net';
import { request as httpRequest } from 'node:http';

interface Task {
  ID: string;
  Slot?: number;
  NodeID?: string;
  ServiceID: string;
  DesiredState: string;
  Status: { State: string; Message: string; Err?: string; ContainerStatus?: { ContainerID: string; PID: number; ExitCode: number } };
}

describe('swarm tasks on one node', () => {
  let d: DaemonHandle;
  let imgs: TestImages;
  let nodeId: string;
  const dk = async (...args: string[]) => {
    const r = await docker(d, args);
    assert.equal(r.code, 0, `docker ${args.join(' ')}: ${r.stderr}\n${d.logs().split('\n').slice(-20).join('\n')}`);
    return r.stdout;
  };
  const tasks = async (filters: Record<string, string[]>): Promise<Task[]> => {
    const r = await apiRequest(d, 'GET', `/tasks?filters=${encodeURIComponent(JSON.stringify(filters))}`);
    assert.equal(r.status, 200, r.text);
    return r.body as Task[];
  };
  const running = async (service: string) => (await tasks({ service: [service], 'desired-state': ['running'] })).filter((t) => t.Status.State === 'running');
  /** A GET's body as bytes. */
  const rawGet = (path: string) =>
    new Promise<Buffer>((resolve, reject) => {
      const req = httpRequest({ socketPath: d.socket, path }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve(Buffer.concat(chunks)));
      });
      req.on('error', reject);
      req.end();
    });
  const names = async () => (await dk('ps', '-a', '--format', '{{.Names}}')).split('\n').filter(Boolean);

  before(async () => {
    imgs = await testImages();
    // A bridge of its own: a task's port published in host mode is bound through it.
    d = await startDaemon({ bridge: true });
    await dk('load', '-i', imgs.dockerArchive);
    nodeId = (await swarmInit(d)).nodeId;
  }, { timeout: 120_000 });
  after(async () => {
    await d?.cleanup();
  }, { timeout: 60_000 });

  test('a replicated service runs its tasks as containers named SERVICE.SLOT.TASKID with the reference\'s labels', { timeout: 120_000 }, async () => {
    await dk('service', 'create', '--detach', '--no-resolve-image', '--name', 'web', '--replicas', '2', '--stop-grace-period', '1s', imgs.tag, 'sleep', '1000');
    await until('two tasks running', async () => (await running('web')).length === 2, 60_000);
    const ts = (await running('web')).sort((a, b) => a.Slot! - b.Slot!);
    assert.deepEqual(ts.map((t) => t.Slot), [1, 2]);
    assert.ok(ts.every((t) => t.NodeID === nodeId && t.Status.Message === 'started' && (t.Status.ContainerStatus?.PID ?? 0) > 0));
    const t1 = ts[0]!;
    const inspect = JSON.parse(await dk('inspect', t1.Status.ContainerStatus!.ContainerID))[0];
    assert.equal(inspect.Name, `/web.1.${t1.ID}`);
    assert.deepEqual(
      Object.fromEntries(Object.entries(inspect.Config.Labels as Record<string, string>).filter(([k]) => k.startsWith('com.docker.swarm'))),
      { 'com.docker.swarm.node.id': nodeId, 'com.docker.swarm.service.id': t1.ServiceID, 'com.docker.swarm.service.name': 'web', 'com.docker.swarm.task': '', 'com.docker.swarm.task.id': t1.ID, 'com.docker.swarm.task.name': `web.1.${t1.ID}` },
    );
    const one = (await apiRequest(d, 'GET', `/tasks/${t1.ID.slice(0, 6)}`)).body;
    assert.deepEqual(Object.keys(one), ['ID', 'Version', 'CreatedAt', 'UpdatedAt', 'Labels', 'Spec', 'ServiceID', 'Slot', 'NodeID', 'Status', 'DesiredState']);
    assert.equal(one.Spec.ContainerSpec.Image, imgs.tag);
    assert.deepEqual((await apiRequest(d, 'GET', '/tasks/nosuch')).body, { message: 'task nosuch not found' });
    const ps = await dk('service', 'ps', 'web');
    assert.match(ps, /web\.1\s+\S+\s+\S+\s+Running\s+Running/);
    const listed = (await apiRequest(d, 'GET', '/services?status=true')).body.find((s: { Spec: { Name: string } }) => s.Spec.Name === 'web');
    assert.deepEqual(listed.ServiceStatus, { RunningTasks: 2, DesiredTasks: 2, CompletedTasks: 0 });
    // A service the filter names that is not there: the reference's 404 (a name prefix is not a
    // match either, but "we" could be an id prefix: ids are random).
    const badFilter = await apiRequest(d, 'GET', `/tasks?filters=${encodeURIComponent('{"service":["no-such"]}')}`);
    assert.deepEqual([badFilter.status, badFilter.body.message], [404, 'service no-such not found']);
  });

  test('scale up and down: new slots run; the removed ones\' tasks and containers go', { timeout: 120_000 }, async () => {
    await dk('service', 'scale', '--detach', 'web=3');
    await until('three running', async () => (await running('web')).length === 3, 60_000);
    await dk('service', 'scale', '--detach', 'web=1');
    await until('slot 1 only, its container alone', async () => {
      const all = await tasks({ service: ['web'] });
      const webs = (await names()).filter((n) => n.startsWith('web.'));
      return all.length === 1 && all[0]!.Slot === 1 && webs.length === 1;
    }, 60_000);
  });

  test('global: one task on the node, no slot, SERVICE.NODEID.TASKID', { timeout: 120_000 }, async () => {
    await dk('service', 'create', '--detach', '--no-resolve-image', '--name', 'glob', '--mode', 'global', '--stop-grace-period', '1s', imgs.tag, 'sleep', '1000');
    await until('the global task running', async () => (await running('glob')).length === 1, 60_000);
    const [t] = await running('glob');
    assert.equal(t!.Slot, undefined);
    assert.ok((await names()).includes(`glob.${nodeId}.${t!.ID}`));
  });

  test('a generic resource no node has: the task waits pending with the scheduler\'s reason', { timeout: 60_000 }, async () => {
    await dk('service', 'create', '--detach', '--no-resolve-image', '--name', 'gpu', '--generic-resource', 'gpu=1', imgs.tag, 'sleep', '1000');
    await until('pending', async () => (await tasks({ service: ['gpu'] }))[0]?.Status.State === 'pending', 30_000);
    const [t] = await tasks({ service: ['gpu'] });
    assert.deepEqual([t!.Status.Message, t!.Status.Err, t!.NodeID], ['pending task scheduling', 'no suitable node (insufficient resources on 1 node)', undefined]);
    assert.match(await dk('service', 'ps', '--no-trunc', 'gpu'), /no suitable node \(insufficient resources on 1 node\)/);
    await dk('service', 'rm', 'gpu');
  });

  test('a task that fails is shut down with the reference\'s error and replaced after the restart delay', { timeout: 120_000 }, async () => {
    await dk('service', 'create', '--detach', '--no-resolve-image', '--name', 'fail', '--restart-delay', '1s', imgs.tag, 'sh', '-c', 'sleep 1; exit 3');
    await until('a failed task and its replacement', async () => {
      const all = await tasks({ service: ['fail'] });
      return all.some((t) => t.Status.State === 'failed') && all.length >= 2;
    }, 60_000);
    const failed = (await tasks({ service: ['fail'] })).find((t) => t.Status.State === 'failed')!;
    assert.deepEqual([failed.DesiredState, failed.Status.Err, failed.Status.ContainerStatus?.ExitCode, failed.Slot], ['shutdown', 'task: non-zero exit (3)', 3, 1]);
    await dk('service', 'rm', 'fail');
  });

  test('an update replaces the tasks; rm takes the tasks and their containers', { timeout: 120_000 }, async () => {
    const [before] = await running('web');
    await dk('service', 'update', '--detach', '--no-resolve-image', '--env-add', 'COLOUR=blue', 'web');
    await until('a new task running with the new env', async () => {
      const [t] = await running('web');
      return !!t && t.ID !== before!.ID;
    }, 60_000);
    const [t] = await running('web');
    const env = JSON.parse(await dk('inspect', t!.Status.ContainerStatus!.ContainerID))[0].Config.Env as string[];
    assert.ok(env.includes('COLOUR=blue'), env.join(' '));
    const old = (await tasks({ service: ['web'] })).find((x) => x.ID === before!.ID);
    assert.equal(old?.DesiredState, 'shutdown');
    await dk('service', 'rm', 'web', 'glob');
    await until('no task containers left', async () => (await names()).filter((n) => n.startsWith('web.') || n.startsWith('glob.')).length === 0, 60_000);
    assert.deepEqual(await tasks({}), []);
  });

  test('the docker CLI waits for a service to converge (its progress reads the tasks)', { timeout: 120_000 }, async () => {
    const out = await dk('service', 'create', '--no-resolve-image', '--name', 'waited', '--replicas', '2', imgs.tag, 'sleep', '1000');
    assert.match(out, /^[a-z0-9]{25}$/m, 'the service id once converged');
    assert.equal((await running('waited')).length, 2);
    await dk('service', 'rm', 'waited');
  });

  test('docker-py: a service\'s tasks', { timeout: 120_000 }, async () => {
    const out = await pythonDocker(d, `
      import time
      s = client.services.create(${JSON.stringify(imgs.tag)}, ['sleep', '1000'], name='py')
      for _ in range(120):
          ts = [t for t in s.tasks() if t['Status']['State'] == 'running']
          if ts: break
          time.sleep(0.5)
      print(json.dumps({'running': len(ts), 'slot': ts[0]['Slot'] if ts else None}))
      s.remove()
    `);
    assert.deepEqual(JSON.parse(out.trim()), { running: 1, slot: 1 });
  });

  test('a port published in host mode: bound on the node, in the task\'s PortStatus; a second task cannot take it', { timeout: 120_000 }, async () => {
    const port = await freePort();
    await dk('service', 'create', '--detach', '--no-resolve-image', '--name', 'hp', '--replicas', '2', '--stop-grace-period', '1s', '--publish', `mode=host,target=80,published=${port}`, imgs.tag, 'sh', '-c', 'while true; do echo hi | nc -l -p 80; done');
    await until('one task running, the other pending', async () => {
      const all = await tasks({ service: ['hp'] });
      return all.some((t) => t.Status.State === 'running') && all.some((t) => t.Status.State === 'pending');
    }, 60_000);
    const [t] = await running('hp');
    await until('the port in the task\'s PortStatus', async () => (await apiRequest(d, 'GET', `/tasks/${t!.ID}`)).body.Status.PortStatus.Ports !== undefined, 20_000);
    assert.deepEqual((await apiRequest(d, 'GET', `/tasks/${t!.ID}`)).body.Status.PortStatus, { Ports: [{ Protocol: 'tcp', TargetPort: 80, PublishedPort: port, PublishMode: 'host' }] });
    const got = await new Promise<string>((resolve, reject) => {
      const sock = connect(port, '127.0.0.1');
      let data = '';
      sock.on('data', (b) => (data += b.toString()));
      sock.on('end', () => resolve(data));
      sock.on('error', reject);
      setTimeout(() => (sock.destroy(), resolve(data)), 5000).unref();
    });
    assert.match(got, /hi/);
    await dk('service', 'rm', 'hp');
  });

  test('an image the node lacks is pulled before the task runs; one no registry has: rejected with the pull\'s error', { timeout: 120_000, skip: !registryAvailable() && 'docker-registry is not installed' }, async () => {
    const reg = await startRegistry();
    try {
      const image = `${reg.hostPort}/swarm/pulled:1`;
      await dk('tag', imgs.tag, image);
      await dk('push', image);
      await dk('rmi', image);
      await dk('service', 'create', '--detach', '--no-resolve-image', '--name', 'pulled', '--stop-grace-period', '1s', image, 'sleep', '1000');
      await until('the pulled task running', async () => (await running('pulled')).length === 1, 60_000);
      assert.ok((await dk('images', '--format', '{{.Repository}}:{{.Tag}}')).includes(`${reg.hostPort}/swarm/pulled:1`), 'the image was pulled');
      await dk('service', 'rm', 'pulled');
      await dk('service', 'create', '--detach', '--no-resolve-image', '--name', 'nowhere', `${reg.hostPort}/swarm/missing:1`, 'sleep', '1000');
      await until('rejected with the pull\'s error', async () => (await tasks({ service: ['nowhere'] })).some((t) => t.Status.State === 'rejected' && !!t.Status.Err), 60_000);
      await dk('service', 'rm', 'nowhere');
    } finally {
      await reg.stop();
    }
  });

  test('--with-registry-auth: the node pulls with the client\'s credentials, never shown; without them the pull is refused', { timeout: 120_000, skip: (!registryAvailable() && 'docker-registry is not installed') || (!htpasswd && 'no bcrypt implementation to write an htpasswd file') }, async () => {
    const reg = await startRegistry({ htpasswd: htpasswd! });
    const cfg = await mkdtemp(join(tmpdir(), 'engine-e2e-swarm-auth-'));
    const env = { DOCKER_CONFIG: cfg };
    try {
      const image = `${reg.hostPort}/swarm/private:1`;
      const login = await docker(d, ['login', reg.hostPort, '-u', 'alice', '--password-stdin'], { env, input: 's3cret\n' });
      assert.equal(login.code, 0, login.stderr);
      await dk('tag', imgs.tag, image);
      assert.equal((await docker(d, ['push', image], { env })).code, 0);
      await dk('rmi', image);
      const made = await docker(d, ['service', 'create', '--detach', '--no-resolve-image', '--with-registry-auth', '--name', 'private', '--stop-grace-period', '1s', image, 'sleep', '1000'], { env });
      assert.equal(made.code, 0, made.stderr);
      await until('the private task running', async () => (await running('private')).length === 1, 60_000);
      const shown = JSON.stringify([(await apiRequest(d, 'GET', '/services/private')).body, await tasks({ service: ['private'] })]);
      assert.ok(!shown.includes('PullOptions') && !shown.includes('RegistryAuth'), 'the credentials are never shown');
      const bad = await apiRequest(d, 'POST', '/services/private/update?version=1&registryAuthFrom=elsewhere', JSON.stringify({}));
      assert.deepEqual([bad.status, (bad.body as { message: string }).message], [500, 'unsupported registryAuthFrom value']);
      await dk('service', 'rm', 'private');
      await dk('rmi', image);
      await dk('service', 'create', '--detach', '--no-resolve-image', '--name', 'anon', image, 'sleep', '1000');
      await until('rejected: no credentials', async () => (await tasks({ service: ['anon'] })).some((t) => t.Status.State === 'rejected' && /basic auth|unauthorized|authentication/i.test(t.Status.Err ?? '')), 60_000);
      await dk('service', 'rm', 'anon');
    } finally {
      await reg.stop();
      await rm(cfg, { recursive: true, force: true });
    }
  });

  test('logs of a service and of a task: frames, timestamps, details; a TTY service raw; the reference\'s errors', { timeout: 120_000 }, async () => {
    await dk('service', 'create', '--detach', '--no-resolve-image', '--name', 'lg', '--replicas', '2', '--stop-grace-period', '1s', imgs.tag, 'sh', '-c', 'echo out; echo err >&2; sleep 1000');
    await until('two lg tasks running', async () => (await running('lg')).length === 2, 60_000);
    const ts = await running('lg');
    await until('both logged', async () => ((await apiRequest(d, 'GET', '/services/lg/logs?stdout=1&stderr=1')).text.match(/out\n/g) ?? []).length === 2, 20_000);
    const cli = await docker(d, ['service', 'logs', 'lg']);
    assert.equal(cli.code, 0, cli.stderr);
    for (const t of ts) {
      assert.match(cli.stdout, new RegExp(`^lg\\.${t.Slot}\\.\\w+@\\S+\\s+\\| out$`, 'm'));
      assert.match(cli.stderr, new RegExp(`^lg\\.${t.Slot}\\.\\w+@\\S+\\s+\\| err$`, 'm'));
    }
    // One multiplexed frame per line: stream 1 stdout, 2 stderr; timestamps, then the task's context.
    const body = await rawGet(`/tasks/${ts[0]!.ID}/logs?stdout=1&stderr=1&timestamps=1&details=1`);
    const frames: Array<[number, string]> = [];
    for (let off = 0; off + 8 <= body.length; ) {
      const len = body.readUInt32BE(off + 4);
      frames.push([body[off]!, body.subarray(off + 8, off + 8 + len).toString()]);
      off += 8 + len;
    }
    const ctx = `com.docker.swarm.node.id=${nodeId},com.docker.swarm.service.id=${ts[0]!.ServiceID},com.docker.swarm.task.id=${ts[0]!.ID}`;
    assert.deepEqual(frames.map(([s, l]) => [s, l.replace(/^\S+ /, 'TIME ')]).sort(), [[1, `TIME ${ctx} out\n`], [2, `TIME ${ctx} err\n`]]);
    assert.match(frames[0]![1], /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z /);
    const noStream = await apiRequest(d, 'GET', '/services/lg/logs');
    assert.deepEqual([noStream.status, noStream.body.message], [500, 'Bad parameters: you must choose at least one stream']);
    const nosuch = await apiRequest(d, 'GET', '/services/nosuch/logs?stdout=1');
    assert.deepEqual([nosuch.status, nosuch.body.message], [404, 'service nosuch not found']);
    const notask = await apiRequest(d, 'GET', '/tasks/nosuchtask/logs?stdout=1');
    assert.deepEqual([notask.status, notask.body.message], [404, 'task nosuchtask not found']);
    await dk('service', 'rm', 'lg');
    // With a TTY: raw bytes, no frame headers.
    await dk('service', 'create', '--detach', '--no-resolve-image', '--name', 'lgtty', '--tty', imgs.tag, 'sh', '-c', 'echo tty; sleep 1000');
    await until('lgtty logged', async () => (await rawGet('/services/lgtty/logs?stdout=1')).toString().includes('tty'), 60_000);
    assert.equal((await rawGet('/services/lgtty/logs?stdout=1')).toString(), 'tty\r\n');
    await dk('service', 'rm', 'lgtty');
  });

  test('swarm leave takes the task containers with it', { timeout: 120_000 }, async () => {
    await dk('service', 'create', '--detach', '--no-resolve-image', '--name', 'last', '--stop-grace-period', '1s', imgs.tag, 'sleep', '1000');
    await until('its task running', async () => (await running('last')).length === 1, 60_000);
    await dk('swarm', 'leave', '--force');
    await until('no task container left', async () => (await names()).filter((n) => n.startsWith('last.')).length === 0, 60_000);
  });
});

// Swarm secrets and configs (issue 66, 1–3) on a one-manager swarm whose store is an etcd the test
// runs (--cluster-store), so the test reads etcd itself: the API as dockerd 20.10 answers it
// (docs/reference-secrets.md) with curl-like requests, the docker CLI and docker-py; a secret's
// data sealed in etcd (nothing of it in the clear); a service's task with its secret and config as
// read-only files at their targets with their uid, gid and mode, on a tmpfs of the task's own (none
// of it under the data root), gone with the task; a secret a service uses not removed.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, test } from 'node:test';
import { apiRequest, docker, dockerOk, pythonDocker, testImages, type TestImages } from './harness/clients.ts';
import { startDaemon, type DaemonHandle } from './harness/daemon.ts';
import { startEtcd, type EtcdHandle } from './harness/etcd.ts';
import { swarmTasks } from './harness/swarm.ts';
import { until } from './harness/wait.ts';

const execFileP = promisify(execFile);
const b64 = (s: string) => Buffer.from(s).toString('base64');
const SECRET = 'säkret-✓-value-4711';

describe('swarm secrets and configs', { skip: !existsSync('/usr/bin/etcd') && 'etcd-server is not installed (hack/install.sh installs it)' }, () => {
  let etcd: EtcdHandle;
  let d: DaemonHandle;
  let imgs: TestImages;
  const dk = dockerOk(() => d);
  const api = (method: string, path: string, body?: unknown) => apiRequest(d, method, path, body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body));
  const etcdDump = async () => (await execFileP('etcdctl', ['--endpoints', etcd.endpoints.join(','), 'get', '/engine/', '--prefix'], { env: { ...process.env, ETCDCTL_API: '3' }, maxBuffer: 64 << 20 })).stdout;

  before(async () => {
    imgs = await testImages();
    etcd = await startEtcd();
    d = await startDaemon({ args: ['--cluster-store', `etcd://${etcd.clientUrl.replace(/^http:\/\//, '')}`, '--cluster-store-opt', 'discovery.ttl=3'] });
    await dk('load', '-i', imgs.dockerArchive);
    await dk('swarm', 'init', '--advertise-addr', '127.0.0.1');
  }, { timeout: 120_000 });
  after(async () => {
    await d?.cleanup();
    await etcd?.cleanup();
  }, { timeout: 60_000 });

  test('the API as the reference answers it: create, list, inspect (a secret without its data), filters, update of labels only, refusals, remove', async () => {
    const s = await api('POST', '/secrets/create', { Name: 'mysecret', Labels: { env: 'prod', team: 'a' }, Data: b64('hello') });
    assert.equal(s.status, 201, s.text);
    assert.match(s.body.ID, /^[a-z0-9]{25}$/);
    const c = await api('POST', '/configs/create', { Name: 'myconfig', Labels: { env: 'prod' }, Data: b64('hello') });
    assert.equal(c.status, 201, c.text);
    const si = (await api('GET', '/secrets/mysecret')).body;
    assert.deepEqual(Object.keys(si), ['ID', 'Version', 'CreatedAt', 'UpdatedAt', 'Spec']);
    assert.deepEqual(si.Spec, { Name: 'mysecret', Labels: { env: 'prod', team: 'a' } }, 'no data');
    assert.equal(si.CreatedAt, si.UpdatedAt);
    assert.deepEqual((await api('GET', `/configs/${c.body.ID}`)).body.Spec, { Name: 'myconfig', Labels: { env: 'prod' }, Data: b64('hello') });
    assert.deepEqual((await api('GET', '/secrets')).body.map((x: { Spec: { Name: string } }) => x.Spec.Name), ['mysecret']);
    assert.equal((await api('GET', '/secrets/MYSECRET')).body.ID, s.body.ID, 'a name in any case');
    assert.equal((await api('GET', `/secrets/${s.body.ID.slice(0, 5)}`)).body.ID, s.body.ID, 'an id prefix');
    const f = (kind: string, filters: unknown) => api('GET', `/${kind}?filters=${encodeURIComponent(JSON.stringify(filters))}`);
    assert.equal((await f('secrets', { name: { MY: true } })).body.length, 1);
    assert.equal((await f('secrets', { label: { 'env=dev': true } })).body.length, 0);
    assert.deepEqual([(await f('configs', { names: { x: true } })).status, (await f('configs', { names: { x: true } })).body.message], [400, "Invalid filter 'names'"]);
    const refusals: Array<[string, unknown, number, string]> = [
      ['/secrets/create', { Name: 'mysecret', Data: b64('x') }, 409, 'rpc error: code = AlreadyExists desc = secret mysecret already exists'],
      ['/secrets/create', { Name: 'MySecret', Data: b64('x') }, 409, 'rpc error: code = AlreadyExists desc = secret MySecret already exists'],
      ['/secrets/create', { Name: 'bad name!', Data: b64('x') }, 400, 'rpc error: code = InvalidArgument desc = invalid name, only 64 [a-zA-Z0-9-_.] characters allowed, and the start and end character must be [a-zA-Z0-9]'],
      ['/secrets/create', { Data: b64('x') }, 400, 'rpc error: code = InvalidArgument desc = name must be provided'],
      ['/secrets/create', { Name: 'big', Data: Buffer.alloc(512000).toString('base64') }, 400, 'rpc error: code = InvalidArgument desc = secret data must be larger than 0 and less than 512000 bytes'],
      ['/configs/create', { Name: 'empty' }, 400, 'rpc error: code = InvalidArgument desc = config data must be larger than 0 and less than 1024000 bytes'],
      ['/secrets/create', { Name: 'x', Data: 'not base64!' }, 400, 'illegal base64 data at input byte 3'],
      ['/secrets/create', { Name: 'x', Labels: 'a=b', Data: b64('x') }, 400, 'json: cannot unmarshal string into Go struct field SecretSpec.Labels of type map[string]string'],
    ];
    for (const [path, body, status, message] of refusals) {
      const r = await api('POST', path, body);
      assert.deepEqual([r.status, r.body.message], [status, message], `${path} ${JSON.stringify(body).slice(0, 80)}`);
    }
    assert.deepEqual((await api('GET', '/secrets')).body.length, 1, 'nothing written');
    const v = si.Version.Index;
    const upd = await api('POST', `/secrets/${s.body.ID}/update?version=${v}`, { Name: 'mysecret', Labels: { env: 'dev' } });
    assert.equal(upd.status, 200, upd.text);
    const after1 = (await api('GET', '/secrets/mysecret')).body;
    assert.deepEqual(after1.Spec.Labels, { env: 'dev' });
    assert.ok(after1.Version.Index > v);
    const stale = await api('POST', `/secrets/${s.body.ID}/update?version=${v}`, { Name: 'mysecret', Labels: {} });
    assert.deepEqual([stale.status, stale.body.message], [500, 'rpc error: code = Unknown desc = update out of sequence']);
    const data = await api('POST', `/secrets/${s.body.ID}/update?version=${after1.Version.Index}`, { Name: 'mysecret', Data: b64('other') });
    assert.deepEqual([data.status, data.body.message], [400, 'rpc error: code = InvalidArgument desc = only updates to Labels are allowed']);
    const same = await api('POST', `/secrets/${s.body.ID}/update?version=${after1.Version.Index}`, { Name: 'mysecret', Labels: { env: 'x' }, Data: b64('hello') });
    assert.equal(same.status, 200, 'the same data is no change');
    const nov = await api('POST', `/configs/${c.body.ID}/update`, { Name: 'myconfig' });
    assert.deepEqual([nov.status, nov.body.message], [400, 'invalid config version']);
    assert.deepEqual([(await api('GET', '/secrets/nope')).status, (await api('GET', '/secrets/nope')).body.message], [404, 'secret nope not found']);
    const tmp = (await api('POST', '/configs/create', { Name: 'tmp', Data: b64('x') })).body.ID;
    assert.equal((await api('DELETE', `/configs/${tmp}`)).status, 204);
    assert.equal((await api('GET', `/configs/${tmp}`)).status, 404);
  });

  test('sealed at rest: etcd holds no secret in the clear; the CLI and docker-py create, list and remove', { timeout: 60_000 }, async () => {
    const made = await docker(d, ['secret', 'create', 'clisecret', '-'], { input: 'from the CLI' });
    assert.equal(made.code, 0, made.stderr);
    assert.match(made.stdout.trim(), /^[a-z0-9]{25}$/);
    const r = await docker(d, ['secret', 'create', 'sealed', '-'], { input: SECRET });
    assert.equal(r.code, 0, r.stderr);
    const dump = await etcdDump();
    assert.ok(dump.includes('/engine/swarm/secrets/'), 'the secrets are in etcd');
    for (const form of [SECRET, b64(SECRET), Buffer.from(SECRET).toString('hex')]) assert.ok(!dump.includes(form), `no plain secret in etcd (${form.slice(0, 8)}…)`);
    assert.match(await dk('secret', 'ls', '--format', '{{.Name}}'), /sealed/);
    const out = await pythonDocker(d, `
      s = client.secrets.create(name='pysecret', data=b'pydata', labels={'a': 'b'})
      s.reload()
      c = client.configs.create(name='pyconfig', data=b'pydata')
      c.reload()
      print(json.dumps({'s': s.attrs['Spec'], 'c': c.attrs['Spec'], 'by_name': client.secrets.get('pysecret').id == s.id, 'listed': [x.name for x in client.secrets.list(filters={'name': 'py'})]}))
      s.remove(); c.remove()
    `);
    const j = JSON.parse(out.trim().split('\n').pop()!);
    assert.deepEqual(j, { s: { Name: 'pysecret', Labels: { a: 'b' } }, c: { Name: 'pyconfig', Labels: {}, Data: b64('pydata') }, by_name: true, listed: ['pysecret'] });
    await dk('secret', 'rm', 'clisecret');
  });

  test('in a task: the secret and the config as files at their targets with uid, gid and mode, on a tmpfs of the task\'s own; gone with it; in use, not removed', { timeout: 120_000 }, async () => {
    await dk('service', 'create', '--detach', '--no-resolve-image', '--name', 'sec', '--stop-grace-period', '1s',
      '--secret', 'sealed', '--secret', 'source=mysecret,target=/etc/app/s.txt,uid=1000,gid=2000,mode=0400',
      '--config', 'myconfig', '--config', 'source=myconfig,target=/etc/app/c.conf,uid=5,gid=6,mode=0600', imgs.tag, 'sleep', '1000');
    const spec = (await api('GET', '/services/sec')).body.Spec.TaskTemplate.ContainerSpec;
    assert.deepEqual(spec.Secrets.find((x: { SecretName: string }) => x.SecretName === 'sealed').File, { Name: 'sealed', UID: '0', GID: '0', Mode: 292 }, 'the CLI\'s defaults');
    await until('the task running', async () => (await swarmTasks(d, { service: ['sec'] })).some((t) => t.Status.State === 'running'), 60_000);
    const t = (await swarmTasks(d, { service: ['sec'] })).find((x) => x.Status.State === 'running')!;
    const cid = t.Status.ContainerStatus!.ContainerID;
    const cat = async (p: string) => (await dk('exec', cid, 'cat', p));
    assert.equal(await cat('/run/secrets/sealed'), SECRET, 'byte for byte');
    assert.equal(await cat('/etc/app/s.txt'), 'hello');
    assert.equal(await cat('/myconfig'), 'hello');
    const ls = await dk('exec', cid, 'ls', '-ln', '/run/secrets/sealed', '/etc/app/s.txt', '/myconfig', '/etc/app/c.conf');
    assert.match(ls, /^-r--r--r-- +1 0 +0 .*\/myconfig$/m);
    assert.match(ls, /^-r-------- +1 1000 +2000 .*\/etc\/app\/s\.txt$/m);
    assert.match(ls, /^-rw------- +1 5 +6 .*\/etc\/app\/c\.conf$/m);
    const rw = await docker(d, ['exec', cid, 'sh', '-c', 'echo x > /run/secrets/sealed']);
    assert.notEqual(rw.code, 0, 'read-only');
    const filesDir = `${d.execRoot}/swarm/tasks/${t.ID}/files`;
    const mounts = readFileSync('/proc/self/mountinfo', 'utf8');
    assert.match(mounts, new RegExp(`${filesDir.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')} .* - tmpfs `), 'the task\'s own tmpfs');
    const onDisk = await execFileP('grep', ['-rlF', SECRET, d.dataRoot]).then((x) => x.stdout, () => '');
    assert.equal(onDisk, '', 'no secret under the data root');
    const inUse = await api('DELETE', '/secrets/sealed');
    assert.deepEqual([inUse.status, inUse.body.message], [400, "rpc error: code = InvalidArgument desc = secret 'sealed' is in use by the following service: sec"]);
    const nf = await api('POST', '/services/create', { Name: 'bad', TaskTemplate: { ContainerSpec: { Image: imgs.tag, Secrets: [{ SecretID: 'nope', SecretName: 'nope', File: { Name: 'x' } }] } } });
    assert.deepEqual([nf.status, nf.body.message], [400, 'rpc error: code = InvalidArgument desc = secret not found: nope']);
    await dk('service', 'rm', 'sec');
    await until('the task\'s files gone', async () => !existsSync(filesDir) && !readFileSync('/proc/self/mountinfo', 'utf8').includes(filesDir), 60_000);
    assert.equal((await api('DELETE', '/secrets/sealed')).status, 204);
  });

  test('docker stack deploy: networks, secrets, configs and services from a Compose file; ls, services, ps; the same file twice changes nothing; rm takes it all', { timeout: 180_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'stack-'));
    try {
      writeFileSync(join(dir, 'token.txt'), 'stack-token');
      writeFileSync(join(dir, 'app.conf'), 'listen 80');
      const compose = (env: string) => `version: "3.8"
services:
  web:
    image: ${imgs.tag}
    command: ["sleep", "1000"]
    environment:
      MODE: ${env}
    secrets: [token]
    configs:
      - source: appconf
        target: /etc/app.conf
    deploy:
      replicas: 2
      labels: { tier: front }
      update_config: { parallelism: 1, delay: 1s, order: stop-first }
      restart_policy: { condition: on-failure }
      resources:
        limits: { memory: 64M }
  worker:
    image: ${imgs.tag}
    command: ["sleep", "1000"]
    deploy:
      mode: global
secrets:
  token:
    file: ./token.txt
configs:
  appconf:
    file: ./app.conf
`;
      writeFileSync(join(dir, 'stack.yml'), compose('one'));
      const deploy = () => docker(d, ['stack', 'deploy', '--resolve-image', 'never', '-c', join(dir, 'stack.yml'), 'app'], { timeoutMs: 120_000 });
      const r1 = await deploy();
      assert.equal(r1.code, 0, `${r1.stdout}${r1.stderr}`);
      const ls = await dk('stack', 'ls', '--format', '{{.Name}} {{.Services}}');
      assert.match(ls, /^app 2$/m);
      assert.deepEqual((await dk('stack', 'services', 'app', '--format', '{{.Name}}')).trim().split('\n').sort(), ['app_web', 'app_worker']);
      const net = JSON.parse(await dk('network', 'inspect', 'app_default'))[0];
      assert.deepEqual([net.Driver, net.Scope, net.Labels['com.docker.stack.namespace']], ['overlay', 'swarm', 'app']);
      await until('app_web\'s two tasks and the worker running', async () => (await swarmTasks(d, { service: ['app_web'] })).filter((t) => t.Status.State === 'running').length === 2 && (await swarmTasks(d, { service: ['app_worker'] })).some((t) => t.Status.State === 'running'), 90_000);
      const ps = await dk('stack', 'ps', 'app', '--format', '{{.Name}} {{.CurrentState}}');
      assert.equal(ps.trim().split('\n').filter((l) => /Running/.test(l)).length, 3, ps);
      const web = (await swarmTasks(d, { service: ['app_web'] })).find((t) => t.Status.State === 'running')!;
      assert.equal(await dk('exec', web.Status.ContainerStatus!.ContainerID, 'cat', '/run/secrets/token'), 'stack-token');
      assert.equal(await dk('exec', web.Status.ContainerStatus!.ContainerID, 'cat', '/etc/app.conf'), 'listen 80');
      const ids = async () => (await swarmTasks(d, { 'desired-state': ['running'] })).map((t) => t.ID).sort();
      const before1 = await ids();
      const r2 = await deploy();
      assert.equal(r2.code, 0, `${r2.stdout}${r2.stderr}`);
      await new Promise((r) => setTimeout(r, 3000));
      assert.deepEqual(await ids(), before1, 'the same file again: no task replaced');
      // A changed service rolls, one task at a time.
      writeFileSync(join(dir, 'stack.yml'), compose('two'));
      assert.equal((await deploy()).code, 0);
      await until('app_web rolled to MODE=two', async () => {
        const ts = (await swarmTasks(d, { service: ['app_web'], 'desired-state': ['running'] })).filter((t) => t.Status.State === 'running');
        return ts.length === 2 && ts.every((t) => ((t.Spec as { ContainerSpec?: { Env?: string[] } }).ContainerSpec?.Env ?? []).includes('MODE=two'));
      }, 90_000);
      const rm = await docker(d, ['stack', 'rm', 'app']);
      assert.equal(rm.code, 0, rm.stderr);
      const left = async () => {
        const names = (xs: Array<{ Spec: { Name: string } }>) => xs.map((x) => x.Spec.Name).filter((n) => n.startsWith('app_'));
        return [...names((await api('GET', '/services')).body), ...((await api('GET', '/networks/app_default')).status === 404 ? [] : ['app_default']), ...names((await api('GET', '/secrets')).body), ...names((await api('GET', '/configs')).body)];
      };
      try {
        await until('the stack gone', async () => (await left()).length === 0, 60_000);
      } catch (err) {
        throw new Error(`${(err as Error).message}: left ${JSON.stringify(await left())}; rm said ${rm.stdout}${rm.stderr}`);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

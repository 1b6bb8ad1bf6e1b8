// Swarm services on a one-manager swarm (issue 63, 1), against the docker CLI, docker-py and the
// Engine API, matched to dockerd 20.10's answers (docs/reference-services.md): create, inspect
// (insertDefaults), list with filters, update at a version (a stale one, a rename refused), remove;
// the reference's refusals with nothing written; ports in ingress mode: a published port given from
// 30000 when none is asked, one another service publishes refused (the mesh itself: swarm-overlay.test.ts).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { apiRequest, docker, pythonDocker } from './harness/clients.ts';
import { startDaemon, type DaemonHandle } from './harness/daemon.ts';
import { swarmInit } from './harness/swarm.ts';

const spec = (name: string, extra: Record<string, unknown> = {}) => ({ Name: name, TaskTemplate: { ContainerSpec: { Image: 'busybox:local', Command: ['sleep', '1000'] } }, ...extra });

describe('swarm services', () => {
  let d: DaemonHandle;
  const post = (path: string, body: unknown) => apiRequest(d, 'POST', path, typeof body === 'string' ? body : JSON.stringify(body));
  const get = (path: string) => apiRequest(d, 'GET', path);
  const names = async (filters?: Record<string, string[]>) =>
    ((await get(`/services${filters ? `?filters=${encodeURIComponent(JSON.stringify(filters))}` : ''}`)).body as Array<{ Spec: { Name: string } }>).map((s) => s.Spec.Name).sort();

  before(async () => {
    d = await startDaemon();
  });
  after(async () => {
    await d?.cleanup();
  });

  test('outside a swarm: the reference\'s 503', async () => {
    const r = await get('/services');
    assert.equal(r.status, 503);
    assert.match(r.body.message, /not a swarm manager/);
    const c = await post('/services/create', spec('web'));
    assert.equal(c.status, 503);
    await swarmInit(d);
  });

  test('create and inspect as the reference shows them; insertDefaults; a name taken', async () => {
    const c = await post('/services/create', spec('web'));
    assert.equal(c.status, 201, c.text);
    assert.deepEqual(Object.keys(c.body), ['ID']);
    const id = c.body.ID as string;
    assert.match(id, /^[a-z0-9]{25}$/);
    const s = (await get(`/services/${id}`)).body;
    assert.equal(typeof s.Version.Index, 'number');
    assert.deepEqual(s.Spec, {
      Name: 'web',
      Labels: {},
      TaskTemplate: { ContainerSpec: { Image: 'busybox:local', Command: ['sleep', '1000'], Isolation: 'default' }, ForceUpdate: 0, Runtime: 'container' },
      Mode: { Replicated: { Replicas: 1 } },
    });
    assert.deepEqual(s.Endpoint, { Spec: {} });
    assert.equal(s.CreatedAt, s.UpdatedAt);
    assert.equal(s.PreviousSpec, undefined);
    const full = (await get(`/services/web?insertDefaults=true`)).body;
    assert.deepEqual(full.Spec.TaskTemplate.RestartPolicy, { Condition: 'any', Delay: 5_000_000_000, MaxAttempts: 0 });
    assert.equal(full.Spec.TaskTemplate.ContainerSpec.StopGracePeriod, 10_000_000_000);
    assert.deepEqual(full.Spec.UpdateConfig, { Parallelism: 1, FailureAction: 'pause', Monitor: 5_000_000_000, MaxFailureRatio: 0, Order: 'stop-first' });
    assert.equal((await get(`/services/${id.slice(0, 4)}`)).body.ID, id, 'a unique ID prefix');
    // Not found: the reference's 404 ("we", a prefix of the name, could be a prefix of the random id).
    const missing = await get('/services/no-such');
    assert.deepEqual([missing.status, missing.body.message], [404, 'service no-such not found']);
    const again = await post('/services/create', spec('web'));
    assert.deepEqual([again.status, again.body.message], [409, 'rpc error: code = AlreadyExists desc = name conflicts with an existing object: service web already exists']);
    const unnamed = await post('/services/create', spec(''));
    assert.equal(unnamed.status, 201);
    assert.match((await get(`/services/${unnamed.body.ID}`)).body.Spec.Name, /^[a-z]+_[a-z]+\d?$/);
    assert.equal((await apiRequest(d, 'DELETE', `/services/${unnamed.body.ID}`)).status, 200);
  });

  test('the reference\'s refusals write nothing', async () => {
    const before = await names();
    const cases: Array<[unknown, number, string | RegExp]> = [
      [{ Name: 'x', TaskTemplate: { ContainerSpec: {} } }, 400, 'rpc error: code = InvalidArgument desc = ContainerSpec: image reference must be provided'],
      [spec('bad name!'), 400, 'rpc error: code = InvalidArgument desc = name must be valid as a DNS name component'],
      [spec('a'.repeat(65)), 400, 'rpc error: code = InvalidArgument desc = name must be 63 characters or fewer'],
      [spec('neg', { Mode: { Replicated: { Replicas: -1 } } }), 400, 'json: cannot unmarshal number -1 into Go struct field ReplicatedService.Mode.Replicated.Replicas of type uint64'],
      [spec('both', { Mode: { Replicated: { Replicas: 1 }, Global: {} } }), 400, 'must specify only one service mode'],
      [{ Name: 'cons', TaskTemplate: { ContainerSpec: { Image: 'busybox:local' }, Placement: { Constraints: ['node.labels.zone=b'] } } }, 500, 'rpc error: code = Unknown desc = constraint expected one operator from ==, !='],
      [spec('net', { Networks: [{ Target: 'nosuchnet' }] }), 500, 'network nosuchnet not found'],
      [spec('ep', { EndpointSpec: { Mode: 'bogus' } }), 400, 'invalid resolution mode: "bogus"'],
      [spec('dup', { EndpointSpec: { Ports: [{ TargetPort: 80, PublishedPort: 8096, PublishMode: 'host' }, { TargetPort: 81, PublishedPort: 8096, PublishMode: 'host' }] } }), 400, 'rpc error: code = InvalidArgument desc = EndpointSpec: duplicate published ports provided'],
      ['{"Name":"badjson",', 400, /./],
    ];
    for (const [body, status, message] of cases) {
      const r = await post('/services/create', body);
      assert.equal(r.status, status, `${JSON.stringify(body)}: ${r.text}`);
      if (typeof message === 'string') assert.equal(r.body.message, message);
      else assert.match(r.body.message, message);
    }
    assert.deepEqual(await names(), before, 'nothing written');
  });

  test('update at a version: stale, renamed, no version refused; PreviousSpec kept; remove', async () => {
    const s = (await get('/services/web')).body;
    const v = s.Version.Index as number;
    const labelled = { ...s.Spec, Labels: { a: 'b' } };
    const noVersion = await post(`/services/${s.ID}/update`, labelled);
    assert.deepEqual([noVersion.status, noVersion.body.message], [400, 'invalid service version \'\': strconv.ParseUint: parsing "": invalid syntax']);
    const abc = await post(`/services/${s.ID}/update?version=abc`, labelled);
    assert.deepEqual([abc.status, abc.body.message], [400, 'invalid service version \'abc\': strconv.ParseUint: parsing "abc": invalid syntax']);
    const renamed = await post(`/services/${s.ID}/update?version=${v}`, { ...labelled, Name: 'web2' });
    assert.deepEqual([renamed.status, renamed.body.message], [501, 'rpc error: code = Unimplemented desc = renaming services is not supported']);
    const ok = await post(`/services/${s.ID}/update?version=${v}`, labelled);
    assert.equal(ok.status, 200, ok.text);
    assert.deepEqual(ok.body, { Warnings: null });
    const after = (await get('/services/web')).body;
    assert.ok(after.Version.Index > v);
    assert.deepEqual(after.Spec.Labels, { a: 'b' });
    assert.deepEqual(after.PreviousSpec.Labels, {});
    assert.notEqual(after.UpdatedAt, after.CreatedAt);
    const stale = await post(`/services/${s.ID}/update?version=${v}`, labelled);
    assert.deepEqual([stale.status, stale.body.message], [500, 'rpc error: code = Unknown desc = update out of sequence']);
    const missing = await post('/services/nosuch/update?version=1', labelled);
    assert.deepEqual([missing.status, missing.body.message], [404, 'service nosuch not found']);
    assert.deepEqual([(await apiRequest(d, 'DELETE', '/services/nosuch')).status], [404]);
  });

  test('the docker CLI: create, ls with filters, inspect, update, rm; -p in ingress mode', async () => {
    const create = await docker(d, ['service', 'create', '--detach', '--no-resolve-image', '--name', 'ping', '--label', 'tier=front', '--replicas', '2', 'busybox:local', 'sleep', '1000']);
    assert.equal(create.code, 0, create.stderr);
    const glob = await docker(d, ['service', 'create', '--detach', '--no-resolve-image', '--name', 'everywhere', '--mode', 'global', 'busybox:local', 'sleep', '1000']);
    assert.equal(glob.code, 0, glob.stderr);
    assert.deepEqual(await names(), ['everywhere', 'ping', 'web']);
    assert.deepEqual(await names({ mode: ['global'] }), ['everywhere']);
    assert.deepEqual(await names({ mode: ['bad'] }), []);
    assert.deepEqual(await names({ name: ['pi'] }), ['ping'], 'a name prefix');
    assert.deepEqual(await names({ label: ['tier=front'] }), ['ping']);
    assert.deepEqual(await names({ label: ['a'] }), ['web']);
    const bad = await get(`/services?filters=${encodeURIComponent('{"foo":["x"]}')}`);
    assert.deepEqual([bad.status, bad.body.message], [400, "Invalid filter 'foo'"]);
    const ls = await docker(d, ['service', 'ls', '--format', '{{.Name}} {{.Mode}}']);
    assert.equal(ls.code, 0, ls.stderr);
    assert.match(ls.stdout, /^ping replicated$/m);
    assert.match(ls.stdout, /^everywhere global$/m);
    const inspect = JSON.parse((await docker(d, ['service', 'inspect', 'ping'])).stdout)[0];
    assert.deepEqual(inspect.Spec.Mode, { Replicated: { Replicas: 2 } });
    assert.deepEqual(inspect.Spec.TaskTemplate.ContainerSpec.Args, ['sleep', '1000']);
    const upd = await docker(d, ['service', 'update', '--detach', '--no-resolve-image', '--label-add', 'lane=fast', 'ping']);
    assert.equal(upd.code, 0, upd.stderr);
    assert.deepEqual((await get('/services/ping')).body.Spec.Labels, { tier: 'front', lane: 'fast' });
    const ingress = await docker(d, ['service', 'create', '--detach', '--no-resolve-image', '--replicas', '0', '--name', 'pub', '-p', '8095:80', '-p', '80', 'busybox:local']);
    assert.equal(ingress.code, 0, ingress.stderr);
    const pub = (await get('/services/pub')).body;
    assert.deepEqual(pub.Endpoint.Ports, [
      { Protocol: 'tcp', TargetPort: 80, PublishedPort: 8095, PublishMode: 'ingress' },
      { Protocol: 'tcp', TargetPort: 80, PublishedPort: 30000, PublishMode: 'ingress' },
    ], 'a port without a published one: the first of the dynamic range');
    const ingressNet = JSON.parse((await docker(d, ['network', 'inspect', 'ingress'])).stdout)[0];
    assert.deepEqual(pub.Endpoint.VirtualIPs.map((v: { NetworkID: string }) => v.NetworkID), [ingressNet.Id], 'its virtual IP on the ingress network');
    const taken = await post('/services/create', spec('pa2', { EndpointSpec: { Ports: [{ TargetPort: 81, PublishedPort: 8095 }] } }));
    assert.deepEqual([taken.status, taken.body.message], [400, `rpc error: code = InvalidArgument desc = port '8095' is already in use by service 'pub' (${pub.ID}) as an ingress port`]);
    assert.equal((await docker(d, ['service', 'rm', 'pub'])).code, 0);
    const host = await docker(d, ['service', 'create', '--detach', '--no-resolve-image', '--name', 'hostport', '--publish', 'mode=host,target=80,published=8081', 'busybox:local', 'sleep', '1000']);
    assert.equal(host.code, 0, host.stderr);
    assert.deepEqual((await get('/services/hostport')).body.Endpoint, {
      Spec: { Mode: 'vip', Ports: [{ Protocol: 'tcp', TargetPort: 80, PublishedPort: 8081, PublishMode: 'host' }] },
      Ports: [{ Protocol: 'tcp', TargetPort: 80, PublishedPort: 8081, PublishMode: 'host' }],
    });
    assert.equal((await docker(d, ['service', 'rm', 'ping', 'everywhere', 'hostport'])).code, 0);
    assert.deepEqual(await names(), ['web']);
  });

  test('docker-py: create, list, inspect, remove', async () => {
    const out = await pythonDocker(d, `
      s = client.services.create('busybox:local', ['sleep', '1000'], name='py', labels={'k': 'v'}, mode=docker.types.ServiceMode('replicated', replicas=3))
      s.reload()
      print(json.dumps({'name': s.name, 'replicas': s.attrs['Spec']['Mode']['Replicated']['Replicas'], 'listed': [x.name for x in client.services.list(filters={'label': 'k=v'})]}))
      s.remove()
      print(json.dumps([x.name for x in client.services.list()]))
    `);
    const [first, second] = out.trim().split('\n').map((l) => JSON.parse(l));
    assert.deepEqual(first, { name: 'py', replicas: 3, listed: ['py'] });
    assert.deepEqual(second, ['web']);
  });
});

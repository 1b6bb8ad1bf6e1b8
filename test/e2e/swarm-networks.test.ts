// Swarm-scoped overlay networks as objects (issue 65, 1 and 5 in part), with the docker CLI and the
// Engine API, matched to dockerd 20.10 (docs/reference-overlay.md): refused on a node in no swarm;
// the swarm's ingress network made with it; on a manager made in the swarm's etcd with a subnet of its DefaultAddrPool (or the one asked for)
// and a VXLAN id, listed and inspected with Scope swarm, names shared with the node's own networks,
// found by id prefix, removed; an encrypted overlay is refused clearly, never accepted and ignored;
// a service names its networks by id. (The data path across nodes: swarm-overlay.test.ts.)
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { apiRequest, docker, dockerOk, testImages, type TestImages } from './harness/clients.ts';
import { startDaemon, type DaemonHandle } from './harness/daemon.ts';
import { swarmInit } from './harness/swarm.ts';

describe('swarm overlay networks', () => {
  let d: DaemonHandle;
  let imgs: TestImages;
  const dk = dockerOk(() => d);

  before(async () => {
    imgs = await testImages();
    d = await startDaemon();
    await dk('load', '-i', imgs.dockerArchive);
  }, { timeout: 120_000 });
  after(async () => {
    await d?.cleanup();
  }, { timeout: 60_000 });

  test('in no swarm: the reference\'s 500', async () => {
    const r = await apiRequest(d, 'POST', '/networks/create', JSON.stringify({ Name: 'ov0', Driver: 'overlay' }));
    assert.deepEqual([r.status, r.body.message], [500, 'This node is not a swarm manager. Use "docker swarm init" or "docker swarm join" to connect this node to swarm and try again.']);
  });

  test('on a manager: created with a subnet of the pool and a VXLAN id, listed, inspected, found by id prefix, removed', { timeout: 120_000 }, async () => {
    await swarmInit(d);
    // The swarm's ingress network, made with it as the reference makes it.
    const ingress = JSON.parse(await dk('network', 'inspect', 'ingress'))[0];
    assert.deepEqual([ingress.Scope, ingress.Driver, ingress.Ingress, ingress.IPAM.Config, ingress.Options['com.docker.network.driver.overlay.vxlanid_list']], ['swarm', 'overlay', true, [{ Subnet: '10.0.0.0/24', Gateway: '10.0.0.1' }], '4096']);
    const id = (await dk('network', 'create', '-d', 'overlay', '--attachable', '--label', 'a=b', '--opt', 'com.docker.network.driver.mtu=1400', 'ov1')).trim();
    assert.match(id, /^[a-z0-9]{25}$/);
    const n = JSON.parse(await dk('network', 'inspect', 'ov1'))[0];
    assert.equal(n.Id, id);
    assert.deepEqual([n.Scope, n.Driver, n.Attachable, n.Ingress, n.Labels], ['swarm', 'overlay', true, false, { a: 'b' }]);
    assert.deepEqual(n.IPAM.Config, [{ Subnet: '10.0.1.0/24', Gateway: '10.0.1.1' }]);
    assert.deepEqual(n.Options, { 'com.docker.network.driver.overlay.vxlanid_list': '4097', 'com.docker.network.driver.mtu': '1400' });
    const given = JSON.parse(await dk('network', 'inspect', (await dk('network', 'create', '-d', 'overlay', '--subnet', '10.20.0.0/24', 'ov2')).trim()))[0];
    assert.deepEqual([given.IPAM.Config, given.Options['com.docker.network.driver.overlay.vxlanid_list']], [[{ Subnet: '10.20.0.0/24', Gateway: '10.20.0.1' }], '4098']);
    const third = JSON.parse(await dk('network', 'inspect', (await dk('network', 'create', '-d', 'overlay', 'ov3')).trim()))[0];
    assert.equal(third.IPAM.Config[0].Subnet, '10.0.2.0/24', 'the next free subnet of the pool');
    const ls = await dk('network', 'ls', '--filter', 'driver=overlay', '--format', '{{.Name}} {{.Scope}}');
    assert.deepEqual(ls.trim().split('\n').sort(), ['ingress swarm', 'ov1 swarm', 'ov2 swarm', 'ov3 swarm']);
    assert.ok((await dk('network', 'ls', '--format', '{{.Name}}')).includes('host'), 'the node\'s own networks too');
    assert.equal(JSON.parse(await dk('network', 'inspect', id.slice(0, 6)))[0].Name, 'ov1', 'by id prefix');
    const dup = await apiRequest(d, 'POST', '/networks/create', JSON.stringify({ Name: 'ov1', Driver: 'overlay' }));
    assert.deepEqual([dup.status, dup.body.message], [409, 'network with name ov1 already exists']);
    const local = await apiRequest(d, 'POST', '/networks/create', JSON.stringify({ Name: 'bridge', Driver: 'overlay' }));
    assert.equal(local.status, 403, local.text);
    await dk('network', 'rm', 'ov2', 'ov3');
    assert.equal((await apiRequest(d, 'GET', '/networks/ov2')).status, 404);
  });

  test('refused clearly, never ignored: an encrypted overlay, the ingress network as a service\'s; a service on an overlay stored with its id; an unknown network the reference\'s 500', { timeout: 60_000 }, async () => {
    const enc = await apiRequest(d, 'POST', '/networks/create', JSON.stringify({ Name: 'sec', Driver: 'overlay', Options: { encrypted: '' } }));
    assert.equal(enc.status, 501, enc.text);
    assert.match(enc.body.message, /encrypted overlay networks .* not supported/);
    const ov1 = JSON.parse(await dk('network', 'inspect', 'ov1'))[0].Id;
    const svc = (await dk('service', 'create', '--detach', '--no-resolve-image', '--replicas', '0', '--name', 'on-ov1', '--network', 'ov1', imgs.tag, 'sleep', '1000')).trim();
    const spec = (await apiRequest(d, 'GET', `/services/${svc}`)).body.Spec;
    assert.deepEqual(spec.TaskTemplate.Networks, [{ Target: ov1 }], 'names resolved to ids, as the reference stores them');
    const inUse = await apiRequest(d, 'DELETE', '/networks/ov1');
    assert.deepEqual([inUse.status, inUse.body.message], [400, `rpc error: code = FailedPrecondition desc = network ${ov1} is in use by service ${svc}`]);
    await dk('service', 'rm', svc);
    const ing = await apiRequest(d, 'POST', '/services/create', JSON.stringify({ TaskTemplate: { ContainerSpec: { Image: imgs.tag }, Networks: [{ Target: 'ingress' }] } }));
    assert.deepEqual([ing.status, ing.body.message], [400, 'rpc error: code = InvalidArgument desc = Service cannot be explicitly attached to the ingress network "ingress"']);
    const nosuch = await apiRequest(d, 'POST', '/services/create', JSON.stringify({ TaskTemplate: { ContainerSpec: { Image: imgs.tag }, Networks: [{ Target: 'nosuch' }] } }));
    assert.deepEqual([nosuch.status, nosuch.body.message], [500, 'network nosuch not found']);
    assert.equal((await apiRequest(d, 'GET', '/services')).body.length, 0, 'nothing written');
    await dk('network', 'rm', 'ov1');
  });
});

// Overlay networks across machines (issue 65, 1–4 and 6): a manager and two workers, each daemon in
// a network namespace of its own (its own host), with the docker CLI. A global service on an overlay
// network: each node makes the network's bridge and VXLAN device (its VNI, the data path port 4789)
// while a task on it runs there, each task gets an address of the subnet taken once for the cluster,
// the nodes program each other's endpoints (forwarding and neighbour entries) from etcd, and tasks
// reach each other across nodes; an attachable overlay takes `docker run --network`. Names: a
// service's name answers with its virtual IP, balanced over its tasks wherever they run; tasks.NAME
// and dnsrr with the tasks. The routing mesh: a port published in ingress mode answers on every
// node. Nothing stays: the service, the network or the node gone, so are its devices and rules.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { apiRequest, docker, testImages, type TestImages } from './harness/clients.ts';
import { startDaemon, type DaemonHandle } from './harness/daemon.ts';
import { startNetns, type NetnsHandle } from './harness/netns.ts';
import { until } from './harness/wait.ts';
import { nodeDocker, swarmTasks, type SwarmTask } from './harness/swarm.ts';

const canRun = existsSync('/usr/bin/etcd') && process.getuid?.() === 0;

/** What a TCP server at host:port says before it closes ('' on failure). */
function tcpRead(host: string, port: number, ms = 3000): Promise<string> {
  return new Promise((resolve) => {
    const s = connect({ host, port });
    let out = '';
    const done = () => {
      clearTimeout(t);
      s.destroy();
      resolve(out.trim());
    };
    const t = setTimeout(done, ms);
    s.on('data', (b) => (out += b.toString()));
    s.on('end', done);
    s.on('error', done);
  });
}

type Task = SwarmTask;

describe('overlay networks across three machines', { skip: !canRun && 'needs root and etcd-server (hack/install.sh installs it)' }, () => {
  let net: NetnsHandle;
  let imgs: TestImages;
  const ds: DaemonHandle[] = [];
  const ids: string[] = [];
  const dk = nodeDocker(ds);
  const tasks = (service: string) => swarmTasks(ds[0]!, { service: [service] });
  const running = async (service: string) => (await tasks(service)).filter((t) => t.DesiredState === 'running' && t.Status.State === 'running');
  /** ip(8) in namespace i. */
  const ipIn = (i: number, ...args: string[]) => net.exec(i, ['ip', ...args]).stdout ?? '';
  const linksIn = (i: number) => ipIn(i, '-o', 'link', 'show').split('\n').map((l) => l.split(':')[1]?.trim().split('@')[0] ?? '').filter(Boolean);
  /** A failure with what CI cannot be asked afterwards: the services' tasks and each daemon's last warnings. */
  const explained = async (err: unknown, ...services: string[]) => {
    const ts = (await Promise.all(services.map((s) => tasks(s).catch(() => [] as Task[])))).flat()
      .map((t) => `${t.ID.slice(0, 6)} ${t.ServiceID.slice(0, 6)} node=${ids.indexOf(t.NodeID ?? '')} ${t.DesiredState}/${t.Status.State} ${t.Status.Err ?? ''}`);
    const logs = ds.map((d, i) => `node ${i}:\n${d.logs().split('\n').filter((l) => /level=(warning|error)/.test(l)).slice(-10).join('\n')}`);
    return new Error(`${(err as Error).message}\n${ts.join('\n')}\n${logs.join('\n---\n')}`, { cause: err });
  };

  before(async () => {
    imgs = await testImages();
    net = startNetns({ count: 3 });
    ds.push(...(await Promise.all(net.names.map((ns, i) => startDaemon({ netns: ns, args: i === 2 ? ['--node-generic-resource', 'gpu=GPU-one'] : [] })))));
    await Promise.all([0, 1, 2].map((i) => dk(i, 'load', '-i', imgs.dockerArchive)));
    await dk(0, 'swarm', 'init', '--advertise-addr', net.addr(0), '--dispatcher-heartbeat', '2s');
    const token = (await dk(0, 'swarm', 'join-token', '-q', 'worker')).trim();
    for (const i of [1, 2]) await dk(i, 'swarm', 'join', '--token', token, '--advertise-addr', net.addr(i), `${net.addr(0)}:2377`);
    for (let i = 0; i < 3; i++) ids.push((await apiRequest(ds[i]!, 'GET', '/info')).body.Swarm.NodeID);
    await until('three nodes ready', async () => (await apiRequest(ds[0]!, 'GET', '/nodes')).body.filter((n: { Status: { State: string } }) => n.Status.State === 'ready').length === 3, 60_000);
  }, { timeout: 300_000 });
  after(async () => {
    await Promise.all(ds.map((d) => d.cleanup().catch(() => {})));
    net?.cleanup();
  }, { timeout: 180_000 });

  test('tasks on three nodes reach each other over the VXLAN; the devices exist only while a task runs', { timeout: 240_000 }, async () => {
    const before0 = linksIn(0);
    const netId = (await dk(0, 'network', 'create', '-d', 'overlay', '--attachable', '--subnet', '10.77.0.0/24', 'ov')).trim();
    const vni = JSON.parse(await dk(0, 'network', 'inspect', 'ov'))[0].Options['com.docker.network.driver.overlay.vxlanid_list'];
    assert.deepEqual(linksIn(0).filter((l) => l.startsWith('ov')), [], 'no device before a task needs one');
    await dk(0, 'service', 'create', '--detach', '--no-resolve-image', '--name', 'peers', '--mode', 'global', '--network', 'ov', '--stop-grace-period', '1s', imgs.tag, 'sleep', '1000');
    try {
      await until('a task running on each node', async () => (await running('peers')).length === 3, 90_000);
    } catch (err) {
      throw await explained(err, 'peers');
    }
    const addrs: string[] = [];
    const containers: string[] = [];
    for (const t of await running('peers')) {
      const i = ids.indexOf(t.NodeID!);
      const c = JSON.parse(await dk(i, 'inspect', t.Status.ContainerStatus!.ContainerID))[0];
      const ep = c.NetworkSettings.Networks.ov;
      assert.ok(ep, `the task's container is on ov: ${JSON.stringify(c.NetworkSettings.Networks)}`);
      assert.equal(ep.NetworkID, netId);
      assert.match(ep.IPAddress, /^10\.77\.0\.\d+$/);
      assert.equal(ep.MacAddress, `02:42:${ep.IPAddress.split('.').map((b: string) => Number(b).toString(16).padStart(2, '0')).join(':')}`);
      addrs[i] = ep.IPAddress;
      containers[i] = c.Id;
    }
    assert.equal(new Set(addrs).size, 3, 'an address taken once for the cluster');
    for (const i of [0, 1, 2]) {
      const vx = JSON.parse(ipIn(i, '-j', '-d', 'link', 'show', `ovx-${vni}`))[0];
      assert.deepEqual([vx.linkinfo.info_kind, vx.linkinfo.info_data.id, vx.linkinfo.info_data.port, vx.linkinfo.info_data.local, vx.master], ['vxlan', Number(vni), 4789, net.addr(i), `ovb-${vni}`]);
      const other = (i + 1) % 3;
      await until(`node ${i} told where node ${other}'s task is`, async () => ipIn(i, 'neigh', 'show', 'dev', `ovx-${vni}`).includes(addrs[other]!), 30_000);
      const fdb = net.exec(i, ['bridge', 'fdb', 'show', 'dev', `ovx-${vni}`]).stdout ?? '';
      assert.match(fdb, new RegExp(`dst ${net.addr(other).replace(/\./g, '\\.')}`), fdb);
    }
    // Each task reaches the next across the underlay.
    for (const i of [0, 1, 2]) {
      const r = await docker(ds[i]!, ['exec', containers[i]!, 'ping', '-c', '2', '-W', '3', addrs[(i + 1) % 3]!]);
      assert.equal(r.code, 0, `ping from node ${i}'s task: ${r.stdout}${r.stderr}`);
    }
    // --attachable: a plain container on the worker joins ov, reaches the manager's task and is reached by name.
    await dk(1, 'run', '-d', '--name', 'att', '--network', 'ov', imgs.tag, 'sleep', '1000');
    const att = JSON.parse(await dk(1, 'inspect', 'att'))[0].NetworkSettings.Networks.ov;
    assert.match(att.IPAddress, /^10\.77\.0\.\d+$/);
    assert.ok(!addrs.includes(att.IPAddress), 'an address of its own');
    const fromAtt = await docker(ds[1]!, ['exec', 'att', 'ping', '-c', '2', '-W', '3', addrs[0]!]);
    assert.equal(fromAtt.code, 0, `ping from the attached container: ${fromAtt.stdout}${fromAtt.stderr}`);
    await until('the manager\'s task reaches att by name', async () => (await docker(ds[0]!, ['exec', containers[0]!, 'ping', '-c', '1', '-W', '2', 'att'])).code === 0, 30_000);
    await dk(1, 'rm', '-f', 'att');
    // Nothing stays: the service gone, each node's devices and endpoint keys go.
    await dk(0, 'service', 'rm', 'peers');
    for (const i of [0, 1, 2]) await until(`node ${i}'s overlay devices gone`, async () => !linksIn(i).some((l) => l.startsWith('ov')), 60_000);
    assert.deepEqual(linksIn(0).filter((l) => !before0.includes(l) && !l.startsWith('veth')), [], 'no device left on the manager');
    await dk(0, 'network', 'rm', 'ov');
  });

  test('names: a service\'s name answers with its virtual IP, which balances over its tasks on other nodes; tasks.NAME and dnsrr with the tasks\' addresses', { timeout: 240_000 }, async () => {
    const netId = (await dk(0, 'network', 'create', '-d', 'overlay', '--subnet', '10.78.0.0/24', 'ovn')).trim();
    const notAttachable = await docker(ds[1]!, ['run', '-d', '--network', 'ovn', imgs.tag, 'sleep', '1']);
    assert.notEqual(notAttachable.code, 0);
    assert.match(notAttachable.stderr, /Could not attach to network ovn: rpc error: code = PermissionDenied desc = network ovn not manually attachable/);
    const serve = ['sh', '-c', 'while true; do nc -l -p 8080 -e hostname; done'];
    await dk(0, 'service', 'create', '--detach', '--no-resolve-image', '--name', 'web', '--replicas', '2', '--network', 'ovn', '--stop-grace-period', '1s', imgs.tag, ...serve);
    await dk(0, 'service', 'create', '--detach', '--no-resolve-image', '--name', 'rr', '--replicas', '2', '--endpoint-mode', 'dnsrr', '--network', 'ovn', '--stop-grace-period', '1s', imgs.tag, ...serve);
    await dk(0, 'service', 'create', '--detach', '--no-resolve-image', '--name', 'cl', '--mode', 'global', '--network', 'ovn', '--stop-grace-period', '1s', imgs.tag, 'sleep', '1000');
    await until('web, rr and cl running', async () => (await running('web')).length === 2 && (await running('rr')).length === 2 && (await running('cl')).length === 3, 90_000);
    const web = (await apiRequest(ds[0]!, 'GET', '/services/web')).body;
    assert.equal(web.Endpoint.VirtualIPs.length, 1, JSON.stringify(web.Endpoint));
    assert.equal(web.Endpoint.VirtualIPs[0].NetworkID, netId);
    const vip = web.Endpoint.VirtualIPs[0].Addr.split('/')[0];
    assert.match(web.Endpoint.VirtualIPs[0].Addr, /^10\.78\.0\.\d+\/24$/);
    assert.equal((await apiRequest(ds[0]!, 'GET', '/services/rr')).body.Endpoint.VirtualIPs, undefined, 'dnsrr: no virtual IP');
    const addrOf = async (t: Task) => JSON.parse(await dk(ids.indexOf(t.NodeID!), 'inspect', t.Status.ContainerStatus!.ContainerID))[0].NetworkSettings.Networks.ovn.IPAddress as string;
    const webIps = (await Promise.all((await running('web')).map(addrOf))).sort();
    const rrIps = (await Promise.all((await running('rr')).map(addrOf))).sort();
    const hosts = await Promise.all((await running('web')).map(async (t) => JSON.parse(await dk(ids.indexOf(t.NodeID!), 'inspect', t.Status.ContainerStatus!.ContainerID))[0].Config.Hostname as string));
    const resolved = (out: string) => [...out.matchAll(/Address(?: \d+)?:\s+(\d+\.\d+\.\d+\.\d+)/g)].map((m) => m[1]!).filter((a) => !a.endsWith('.11') && !a.startsWith('127.')).sort();
    for (const t of await running('cl')) {
      const i = ids.indexOf(t.NodeID!);
      const cid = t.Status.ContainerStatus!.ContainerID;
      const exec = async (...argv: string[]) => {
        const r = await docker(ds[i]!, ['exec', cid, ...argv]);
        return `${r.stdout}${r.stderr}`;
      };
      await until(`node ${i}: web answers with its virtual IP`, async () => resolved(await exec('nslookup', 'web')).join() === vip, 30_000);
      assert.deepEqual(resolved(await exec('nslookup', 'tasks.web')), webIps, 'tasks.NAME: the tasks');
      assert.deepEqual(resolved(await exec('nslookup', 'rr')), rrIps, 'dnsrr: the tasks');
      // Connections by name (to the virtual IP) reach both tasks, wherever they run.
      const seen = new Set<string>();
      for (let k = 0; k < 40 && seen.size < 2; k++) {
        const r = await docker(ds[i]!, ['exec', cid, 'nc', '-w', '3', 'web', '8080']);
        if (r.code === 0 && r.stdout.trim()) seen.add(r.stdout.trim());
      }
      assert.deepEqual([...seen].sort(), [...hosts].sort(), `node ${i}: the virtual IP balances over both tasks`);
    }
    await dk(0, 'service', 'rm', 'web', 'rr', 'cl');
    for (const i of [0, 1, 2]) await until(`node ${i}'s overlay devices gone`, async () => !linksIn(i).some((l) => l.startsWith('ov')), 60_000);
    await dk(0, 'network', 'rm', 'ovn');
  });

  test('the routing mesh: a port published in ingress mode answers on every node, balanced over the tasks wherever they run; gone with the service', { timeout: 240_000 }, async () => {
    const serve = ['sh', '-c', 'while true; do nc -l -p 8080 -e hostname; done'];
    await dk(0, 'service', 'create', '--detach', '--no-resolve-image', '--name', 'pub', '--replicas', '1', '--constraint', `node.id==${ids[1]}`, '-p', '8090:8080', '--stop-grace-period', '1s', imgs.tag, ...serve);
    await until('pub running on node 1', async () => (await running('pub')).length === 1, 90_000);
    const hostOf = async (t: Task) => JSON.parse(await dk(ids.indexOf(t.NodeID!), 'inspect', t.Status.ContainerStatus!.ContainerID))[0].Config.Hostname as string;
    const [first] = await running('pub');
    assert.equal(first!.NodeID, ids[1]);
    const h1 = await hostOf(first!);
    for (const i of [0, 1, 2]) await until(`node ${i}'s address answers on 8090`, async () => (await tcpRead(net.addr(i), 8090)) === h1, 30_000);
    // A task on each node: either node's address reaches both.
    await dk(0, 'service', 'create', '--detach', '--no-resolve-image', '--name', 'pub2', '--mode', 'global', '-p', '8091:8080', '--stop-grace-period', '1s', imgs.tag, ...serve);
    await until('pub2 running on every node', async () => (await running('pub2')).length === 3, 90_000);
    const hosts = (await Promise.all((await running('pub2')).map(hostOf))).sort();
    for (const i of [0, 1, 2]) {
      const seen = new Set<string>();
      for (let k = 0; k < 60 && seen.size < 3; k++) {
        const r = await tcpRead(net.addr(i), 8091);
        if (r) seen.add(r);
      }
      assert.deepEqual([...seen].sort(), hosts, `node ${i}: the published port balances over the three tasks`);
    }
    assert.equal(await tcpRead(net.addr(0), 8090), h1, 'the first service\'s port still goes to its task');
    await dk(0, 'service', 'rm', 'pub', 'pub2');
    for (const i of [0, 1, 2]) {
      await until(`node ${i}'s mesh rules and devices gone`, async () => !/INGRESS/.test(net.exec(i, ['iptables', '-t', 'nat', '-S']).stdout ?? '') && !linksIn(i).some((l) => l.startsWith('ov')), 60_000);
      assert.doesNotMatch(net.exec(i, ['iptables', '-S']).stdout ?? '', /INGRESS/);
    }
  });

  test('secrets across machines: a worker gets a secret only for the task it runs, from a manager; its certificate reads no other node\'s, and its etcd user no secret at all', { timeout: 120_000 }, async () => {
    const made = await docker(ds[0]!, ['secret', 'create', 'wsecret', '-'], { input: 'for-the-worker' });
    assert.equal(made.code, 0, made.stderr);
    const sid = made.stdout.trim();
    await dk(0, 'service', 'create', '--detach', '--no-resolve-image', '--name', 'ws', '--constraint', `node.id==${ids[1]}`, '--secret', 'wsecret', '--stop-grace-period', '1s', imgs.tag, 'sleep', '1000');
    await until('ws running on node 1', async () => (await running('ws')).length === 1, 60_000);
    const [t] = await running('ws');
    assert.equal(await dk(1, 'exec', t!.Status.ContainerStatus!.ContainerID, 'cat', '/run/secrets/wsecret'), 'for-the-worker');
    // Node 2 (a worker) asks the manager for that task's secret with its own certificate: refused.
    const certs = (i: number) => ({
      ca: readFileSync(`${ds[i]!.dataRoot}/swarm/certificates/swarm-root-ca.crt`, 'utf8'),
      cert: readFileSync(`${ds[i]!.dataRoot}/swarm/certificates/swarm-node.crt`, 'utf8'),
      key: readFileSync(`${ds[i]!.execRoot}/swarm/swarm-node.key`, 'utf8'),
    });
    const ask = (i: number, path: string) =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = httpsRequest({ host: net.addr(0), port: 2377, path, ...certs(i), checkServerIdentity: () => undefined }, (res) => {
          let body = '';
          res.on('data', (c: Buffer) => (body += c.toString()));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        });
        req.on('error', reject);
        req.end();
      });
    const other = await ask(2, `/v1/tasks/${t!.ID}/secrets/${sid}`);
    assert.equal(other.status, 403, other.body);
    assert.ok(!other.body.includes('for-the-worker'));
    const own = await ask(1, `/v1/tasks/${t!.ID}/secrets/${sid}`);
    assert.deepEqual([own.status, own.body], [200, 'for-the-worker'], 'the node the task is on gets it');
    // The worker's etcd user reads no secret (nor the data key: it is no etcd key at all).
    const c = certs(2);
    const dir = mkdtempSync(join(tmpdir(), 'wcert-'));
    try {
      for (const [n, v] of Object.entries(c)) writeFileSync(join(dir, n), v, { mode: 0o600 });
      const r = spawnSync('etcdctl', ['--endpoints', `https://${net.addr(0)}:2387`, '--cacert', join(dir, 'ca'), '--cert', join(dir, 'cert'), '--key', join(dir, 'key'), 'get', '/engine/swarm/secrets/', '--prefix'], { env: { ...process.env, ETCDCTL_API: '3' }, encoding: 'utf8' });
      assert.notEqual(r.status, 0, r.stdout);
      assert.match(r.stderr, /permission denied/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    await dk(0, 'service', 'rm', 'ws');
  });

  test('docker stack deploy across machines: its default overlay, a GPU-style reservation placed on the node that has it', { timeout: 120_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'stack3-'));
    try {
      writeFileSync(join(dir, 'stack.yml'), `version: "3.8"
services:
  gpu:
    image: ${imgs.tag}
    command: ["sleep", "1000"]
    deploy:
      resources:
        reservations:
          generic_resources:
            - discrete_resource_spec: { kind: gpu, value: 1 }
  web:
    image: ${imgs.tag}
    command: ["sleep", "1000"]
    deploy:
      mode: global
`);
      try {
        const r = await docker(ds[0]!, ['stack', 'deploy', '--resolve-image', 'never', '-c', join(dir, 'stack.yml'), 'g3']);
        assert.equal(r.code, 0, `${r.stdout}${r.stderr}`);
        await until('g3 running: the gpu task and a web task on each node', async () => (await running('g3_gpu')).length === 1 && (await running('g3_web')).length === 3, 90_000);
        const [g] = await running('g3_gpu');
        assert.equal(g!.NodeID, ids[2], 'on the node that advertises a GPU');
        const gc = JSON.parse(await dk(2, 'inspect', g!.Status.ContainerStatus!.ContainerID))[0];
        assert.ok((gc.Config.Env as string[]).includes('DOCKER_RESOURCE_GPU=GPU-one'), (gc.Config.Env as string[]).join(' '));
        // The stack's default network is an overlay its tasks share across the nodes: a task on
        // node 1 reaches the gpu task on node 2 (the peers' entries come from etcd, so in a moment).
        const w = (await running('g3_web')).find((t) => t.NodeID === ids[1])!;
        const gAddr = gc.NetworkSettings.Networks.g3_default.IPAddress;
        await until(`node 1's web task pings the gpu task at ${gAddr}`, async () => {
          const ping = await docker(ds[1]!, ['exec', w.Status.ContainerStatus!.ContainerID, 'ping', '-c', '1', '-W', '2', gAddr]);
          if (ping.code !== 0) throw new Error(`${ping.stdout}${ping.stderr}`);
          return true;
        }, 30_000, 500);
        const rm = await docker(ds[0]!, ['stack', 'rm', 'g3']);
        assert.equal(rm.code, 0, `${rm.stdout}${rm.stderr}`);
        await until('g3 gone', async () => (await apiRequest(ds[0]!, 'GET', '/services')).body.length === 0, 60_000);
      } catch (err) {
        throw await explained(err, 'g3_gpu', 'g3_web');
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('leaving the swarm takes away every device, entry and rule the node made; the others forget its endpoints', { timeout: 180_000 }, async () => {
    await dk(0, 'network', 'create', '-d', 'overlay', '--subnet', '10.79.0.0/24', 'ovl');
    const vni = JSON.parse(await dk(0, 'network', 'inspect', 'ovl'))[0].Options['com.docker.network.driver.overlay.vxlanid_list'];
    await dk(0, 'service', 'create', '--detach', '--no-resolve-image', '--name', 'stay', '--mode', 'global', '--network', 'ovl', '-p', '8092:8080', '--stop-grace-period', '1s', imgs.tag, 'sleep', '1000');
    await until('stay running on every node', async () => (await running('stay')).length === 3, 90_000);
    await until('the manager knows the worker\'s endpoints', async () => (net.exec(0, ['bridge', 'fdb', 'show', 'dev', `ovx-${vni}`]).stdout ?? '').includes(`dst ${net.addr(2)}`), 30_000);
    assert.match(net.exec(2, ['iptables', '-t', 'nat', '-S']).stdout ?? '', /INGRESS/);
    await dk(2, 'swarm', 'leave');
    await until('the worker\'s overlay devices and mesh rules gone', async () => !linksIn(2).some((l) => l.startsWith('ov')) && !/INGRESS/.test((net.exec(2, ['iptables', '-t', 'nat', '-S']).stdout ?? '') + (net.exec(2, ['iptables', '-S']).stdout ?? '')), 60_000);
    await until('the manager forgot the worker\'s endpoints', async () => !(net.exec(0, ['bridge', 'fdb', 'show', 'dev', `ovx-${vni}`]).stdout ?? '').includes(`dst ${net.addr(2)}`), 60_000);
    await dk(0, 'service', 'rm', 'stay');
  });
});

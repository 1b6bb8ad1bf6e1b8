// Swarm mode on the managed etcd across machines (issue (5 of 21)): four daemons, each in its own
// network namespace (test/e2e/harness/netns.ts), none with --cluster-store. `swarm init` on the
// first; the others join through a manager's address with the stock docker CLI and the Engine API:
// two as managers (etcd members), one as a worker (an etcd client of the managers). A wrong token,
// a CA digest of another swarm and an unreachable manager are refused with nothing half-joined; a
// manager cut off the network leaves the other two keeping the swarm.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { apiRequest, docker } from './harness/clients.ts';
import { startDaemon, type DaemonHandle } from './harness/daemon.ts';
import { startNetns, type NetnsHandle } from './harness/netns.ts';
import { until } from './harness/wait.ts';

const N = 4;
const canRun = existsSync('/usr/bin/etcd') && process.getuid?.() === 0;

interface NodeView {
  ID: string;
  Spec: { Role: string };
  Status: { State: string; Addr: string };
  ManagerStatus?: { Leader?: boolean; Reachability: string; Addr: string };
}

async function nodes(d: DaemonHandle): Promise<NodeView[]> {
  const r = await apiRequest(d, 'GET', '/nodes');
  if (r.status !== 200) throw new Error(`GET /nodes: ${r.status} ${r.text}`);
  return r.body as NodeView[];
}

async function localState(d: DaemonHandle): Promise<string> {
  return (await apiRequest(d, 'GET', '/info')).body.Swarm.LocalNodeState;
}

describe('swarm join across machines', { skip: !canRun && 'needs root and etcd-server (hack/install.sh installs it)' }, () => {
  let net: NetnsHandle;
  const ds: DaemonHandle[] = [];
  let tokens: { manager: string; worker: string };
  const join = (i: number, token: string, remote: string, extra: Record<string, unknown> = {}) =>
    apiRequest(ds[i]!, 'POST', '/swarm/join', JSON.stringify({ ListenAddr: '0.0.0.0:2377', AdvertiseAddr: net.addr(i), RemoteAddrs: [remote], JoinToken: token, ...extra }));

  /** etcdctl as node i (its certificate; its key unsealed under the exec root while it runs), at manager m's member. */
  const etcdctl = (i: number, m: number, args: string[]) => {
    const certs = `${ds[i]!.dataRoot}/swarm/certificates`;
    return net.exec(i, ['etcdctl', `--endpoints=https://${net.addr(m)}:2387`, `--cacert=${certs}/swarm-root-ca.crt`, `--cert=${certs}/swarm-node.crt`, `--key=${ds[i]!.execRoot}/swarm/swarm-node.key`, ...args]);
  };
  /** The swarm's data key node i holds (a manager's; undefined: none). */
  const dataKey = (i: number) => (existsSync(`${ds[i]!.dataRoot}/swarm/certificates/swarm-data.key`) ? readFileSync(`${ds[i]!.dataRoot}/swarm/certificates/swarm-data.key`, 'utf8') : undefined);
  /** etcdctl member list through node i's own member. */
  const members = (i: number) => etcdctl(i, i, ['member', 'list']).stdout.trim().split('\n').filter(Boolean);

  before(async () => {
    net = startNetns({ count: N });
    ds.push(...(await Promise.all(net.names.map((ns) => startDaemon({ netns: ns })))));
  }, { timeout: 180_000 });
  after(async () => {
    await Promise.all(ds.map((d) => d.cleanup().catch(() => {})));
    net?.cleanup();
  }, { timeout: 180_000 });

  test('init on the first; a wrong secret, another swarm\'s CA digest, an unreachable manager: refused, nothing half-joined', { timeout: 240_000 }, async () => {
    const init = await apiRequest(ds[0]!, 'POST', '/swarm/init', JSON.stringify({ ListenAddr: '0.0.0.0:2377', AdvertiseAddr: net.addr(0) }));
    assert.equal(init.status, 200, init.text);
    const sw = await apiRequest(ds[0]!, 'GET', '/swarm');
    tokens = { manager: sw.body.JoinTokens.Manager, worker: sw.body.JoinTokens.Worker };
    const manager0 = `${net.addr(0)}:2377`;

    const [, , digest, secret] = tokens.worker.split('-');
    const wrongSecret = await join(1, `SWMTKN-1-${digest}-${'0'.repeat(25)}`, manager0);
    assert.equal(wrongSecret.status, 400, wrongSecret.text);
    assert.equal(wrongSecret.body.message, 'rpc error: code = InvalidArgument desc = A valid join token is necessary to join this cluster');
    const wrongDigest = await join(1, `SWMTKN-1-${'1'.repeat(50)}-${secret}`, manager0);
    assert.equal(wrongDigest.status, 400, wrongDigest.text);
    // The reference's words (its status is a 500: a 400 here); the digest the token named, in hex.
    assert.match(wrongDigest.body.message, /^remote CA does not match fingerprint\. Expected: [0-9a-f]{64}$/);
    const unreachable = await join(1, tokens.worker, `${net.addr(0)}:2999`);
    assert.equal(unreachable.status, 503, unreachable.text);
    assert.equal(unreachable.body.message, `rpc error: code = Unavailable desc = connection error: desc = "transport: Error while dialing dial tcp ${net.addr(0)}:2999: connect: connection refused"`);
    const malformed = await join(1, 'SWMTKN-1-abc', manager0);
    assert.deepEqual([malformed.status, malformed.body.message], [400, 'invalid join token']);

    assert.equal(await localState(ds[1]!), 'inactive');
    const ns = await nodes(ds[0]!);
    assert.equal(ns.length, 1, 'no node spec left by a refused join');
  });

  test('two managers join (the docker CLI, the Engine API), a worker joins through the second: every manager lists all four', { timeout: 240_000 }, async () => {
    const cli = await docker(ds[1]!, ['swarm', 'join', '--token', tokens.manager, '--advertise-addr', net.addr(1), `${net.addr(0)}:2377`]);
    assert.equal(cli.code, 0, `${cli.stderr}\n${ds[1]!.logs().split('\n').slice(-30).join('\n')}`);
    assert.match(cli.stdout, /This node joined a swarm as a manager\./);
    const api = await join(2, tokens.manager, `${net.addr(1)}:2377`);
    assert.equal(api.status, 200, `${api.text}\n${ds[2]!.logs().split('\n').slice(-30).join('\n')}`);
    const worker = await docker(ds[3]!, ['swarm', 'join', '--token', tokens.worker, '--advertise-addr', net.addr(3), `${net.addr(1)}:2377`]);
    assert.equal(worker.code, 0, `${worker.stderr}\n${ds[3]!.logs().split('\n').slice(-30).join('\n')}`);
    assert.match(worker.stdout, /This node joined a swarm as a worker\./);

    for (const d of ds.slice(0, 3)) {
      await until('four nodes ready, three managers', async () => {
        const ns = await nodes(d);
        return ns.length === N && ns.every((n) => n.Status.State === 'ready') && ns.filter((n) => n.ManagerStatus).length === 3;
      }, 30_000);
    }
    const ns = await nodes(ds[0]!);
    const byAddr = new Map(ns.map((n) => [n.Status.Addr, n]));
    assert.equal(byAddr.get(net.addr(3))?.Spec.Role, 'worker');
    assert.equal(byAddr.get(net.addr(3))?.ManagerStatus, undefined);
    assert.equal(ns.filter((n) => n.ManagerStatus?.Leader).length, 1, 'one leader');
    assert.deepEqual(ns.filter((n) => n.ManagerStatus).map((n) => n.ManagerStatus!.Reachability), ['reachable', 'reachable', 'reachable']);
    // A worker holds no view of the cluster.
    const fromWorker = await apiRequest(ds[3]!, 'GET', '/nodes');
    assert.equal(fromWorker.status, 503);
    assert.match(fromWorker.body.message, /not a swarm manager/);
    const stacksFromWorker = await apiRequest(ds[3]!, 'GET', '/stacks?scope=cluster');
    assert.equal(stacksFromWorker.status, 503, 'a worker reads no cluster stacks');
    assert.match(stacksFromWorker.body.message, /Worker nodes can't be used to view or modify cluster state/);
    const info = (await apiRequest(ds[3]!, 'GET', '/info')).body.Swarm;
    assert.deepEqual([info.LocalNodeState, info.ControlAvailable], ['active', false]);
    // The swarm's data key: the managers hold the first one's, the worker none.
    assert.match(dataKey(0) ?? '', /^SWMDEK-1-/);
    assert.deepEqual([dataKey(1), dataKey(2), dataKey(3)], [dataKey(0), dataKey(0), undefined]);
    const again = await join(3, tokens.worker, `${net.addr(0)}:2377`);
    assert.equal(again.status, 503);
    assert.match(again.body.message, /already part of a swarm/);

    // The worker is an etcd user of its own (its certificate's CN): it reads its own tasks, and
    // another node's are refused it; a manager (root) reads them all.
    const workerId = byAddr.get(net.addr(3))!.ID;
    const managerId = byAddr.get(net.addr(1))!.ID;
    await until('etcd auth enabled by the leader', async () => /permission denied/.test(etcdctl(3, 0, ['get', '--prefix', '/engine/node-tasks/']).stderr), 20_000);
    const other = etcdctl(3, 0, ['get', '--prefix', `/engine/node-tasks/${managerId}/`]);
    assert.notEqual(other.status, 0);
    assert.match(other.stderr, /permission denied/);
    const own = etcdctl(3, 0, ['get', '--prefix', `/engine/node-tasks/${workerId}/`]);
    assert.equal(own.status, 0, own.stderr);
    assert.equal(etcdctl(3, 0, ['put', `/engine/status/${managerId}/x`, '{}']).status === 0, false, 'another node\'s status is not the worker\'s to write');
    const asManager = etcdctl(1, 0, ['get', '--prefix', '--keys-only', '/engine/']);
    assert.equal(asManager.status, 0, asManager.stderr);
    assert.match(etcdctl(1, 0, ['user', 'get', workerId]).stdout, new RegExp(`Roles: node-${workerId}`));
  });

  test('a manager cut off the network: the other two keep the swarm and show it unreachable', { timeout: 240_000 }, async () => {
    net.cut(0);
    try {
      for (const d of ds.slice(1, 3)) {
        let seen = '';
        await until('node 0 down and unreachable', async () => {
          const all = await nodes(d).catch((e: Error) => e.message);
          seen = JSON.stringify(all);
          const n = typeof all === 'string' ? undefined : all.find((x) => x.Status.Addr === net.addr(0));
          return n?.Status.State === 'down' && n.ManagerStatus?.Reachability === 'unreachable';
        }, 60_000).catch((err: Error) => {
          throw new Error(`${err.message}; last seen: ${seen}\n${members(1).join('\n')}\n${d.logs().split('\n').filter((l) => /swarm|etcd|cluster|member/i.test(l)).slice(-40).join('\n')}`);
        });
      }
      // Writes go on: a node update through a remaining manager.
      const ns = await nodes(ds[1]!);
      const w = ns.find((n) => n.Status.Addr === net.addr(3))!;
      const cur = await apiRequest(ds[1]!, 'GET', `/nodes/${w.ID}`);
      const upd = await apiRequest(ds[1]!, 'POST', `/nodes/${w.ID}/update?version=${cur.body.Version.Index}`, JSON.stringify({ ...cur.body.Spec, Labels: { kept: 'yes' } }));
      assert.equal(upd.status, 200, upd.text);
    } finally {
      net.heal(0);
    }
    await until('node 0 ready again', async () => (await nodes(ds[1]!)).find((x) => x.Status.Addr === net.addr(0))?.Status.State === 'ready', 60_000);
  });

  const byAddr = async (d: DaemonHandle) => new Map((await nodes(d)).map((n) => [n.Status.Addr, n]));
  const idOf = async (i: number) => (await apiRequest(ds[i]!, 'GET', '/info')).body.Swarm.NodeID as string;
  const controls = async (i: number) => (await apiRequest(ds[i]!, 'GET', '/info')).body.Swarm.ControlAvailable as boolean;

  test('docker node promote makes the worker a manager (an etcd member); demote makes a manager a worker (its member removed)', { timeout: 240_000 }, async () => {
    const dk = (i: number, ...args: string[]) => docker(ds[i]!, args);
    const promote = await dk(1, 'node', 'promote', await idOf(3));
    assert.equal(promote.code, 0, promote.stderr);
    await until('node 3 a manager with control', async () => (await controls(3)) && (await byAddr(ds[1]!)).get(net.addr(3))?.ManagerStatus?.Reachability === 'reachable', 60_000);
    await until('four members', async () => members(1).length === 4, 30_000);
    const roles = (id: string) => /Roles: (.*)/.exec(etcdctl(1, 1, ['user', 'get', id]).stdout)?.[1]?.trim();
    const id3 = await idOf(3);
    assert.equal(roles(id3), 'root', 'a manager is etcd\'s root');
    assert.equal(dataKey(3), dataKey(1), 'a promoted node is given the swarm\'s data key');
    const id0 = await idOf(0);
    const demote = await dk(1, 'node', 'demote', await idOf(0));
    assert.equal(demote.code, 0, demote.stderr);
    await until('node 0 a worker', async () => !(await controls(0)), 60_000);
    await until('three members', async () => members(1).length === 3, 30_000);
    const seen = (await byAddr(ds[1]!)).get(net.addr(0));
    assert.equal(seen?.Spec.Role, 'worker');
    assert.equal(seen?.ManagerStatus, undefined);
    await until('node 0 ready as a worker', async () => (await byAddr(ds[1]!)).get(net.addr(0))?.Status.State === 'ready', 30_000);
    const fromDemoted = await apiRequest(ds[0]!, 'GET', '/nodes');
    assert.equal(fromDemoted.status, 503);
    await until('the demoted node\'s etcd user a worker\'s', async () => roles(id0) === `node-${id0}`, 20_000);
    assert.equal(dataKey(0), undefined, 'a demoted node keeps no data key');
  });

  test('drain; a manager that is down removed with --force (its member too); a worker leaves and shows down; a manager leaves with --force and the last keeps the swarm', { timeout: 240_000 }, async () => {
    const dk = (i: number, ...args: string[]) => docker(ds[i]!, args);
    const drain = await dk(1, 'node', 'update', '--availability', 'drain', await idOf(3));
    assert.equal(drain.code, 0, drain.stderr);
    assert.equal((await byAddr(ds[1]!)).get(net.addr(3))?.Spec.Role, 'manager');
    const id2 = await idOf(2);
    await ds[2]!.stop();
    await until('node 2 down', async () => (await byAddr(ds[1]!)).get(net.addr(2))?.Status.State === 'down', 60_000);
    const down = (await byAddr(ds[1]!)).get(net.addr(2))!;
    assert.equal((down.Status as { Message?: string }).Message, 'heartbeat failure');
    const rm = await dk(1, 'node', 'rm', '--force', id2);
    assert.equal(rm.code, 0, rm.stderr);
    assert.equal((await byAddr(ds[1]!)).has(net.addr(2)), false);
    assert.equal(members(1).length, 2);
    // The worker (node 0, demoted above) keeps its list of the managers' etcd URLs current.
    const managersOf0 = () => JSON.parse(readFileSync(`${ds[0]!.dataRoot}/swarm/state.json`, 'utf8')).managers as string[];
    await until('the worker\'s list of managers without node 2', async () => !managersOf0().some((u) => u.includes(`//${net.addr(2)}:`)) && managersOf0().some((u) => u.includes(`//${net.addr(3)}:`)), 20_000);

    const leave = await dk(0, 'swarm', 'leave');
    assert.equal(leave.code, 0, leave.stderr);
    assert.equal(await localState(ds[0]!), 'inactive');
    await until('the worker that left shows down', async () => (await byAddr(ds[1]!)).get(net.addr(0))?.Status.State === 'down', 40_000);

    const noForce = await dk(3, 'swarm', 'leave');
    assert.notEqual(noForce.code, 0);
    assert.match(noForce.stderr, /Removing this node leaves 1 managers out of 2\. Without a Raft quorum your swarm will be inaccessible\./);
    const forced = await dk(3, 'swarm', 'leave', '--force');
    assert.equal(forced.code, 0, forced.stderr);
    let last = '';
    await until('the last manager answers alone', async () => {
      const r = await apiRequest(ds[1]!, 'GET', '/nodes');
      last = `${r.status} ${r.text}`;
      return r.status === 200 && !(r.body as NodeView[]).some((n) => n.Status.Addr === net.addr(3));
    }, 30_000).catch((err: Error) => {
      throw new Error(`${err.message}; last answer: ${last}\nmembers: ${members(1).join('\n')}\n${ds[3]!.logs().split('\n').filter((l) => /level=(warning|error|info)/.test(l) && /swarm|leave|member|could not/i.test(l)).slice(-15).join('\n')}`);
    });
    assert.equal(members(1).length, 1);
  });
});

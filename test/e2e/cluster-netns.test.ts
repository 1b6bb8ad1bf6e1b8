// Cluster membership over a real network: etcd on the host's address of a bridge the harness
// makes (test/e2e/harness/netns.ts), three daemons each in its own network namespace reaching it
// over a veth. All three Ready in every daemon's GET /nodes; one namespace cut off (iptables
// rules inside it) shows down on the others within the TTL, and Ready again once healed. Nothing
// of the network (namespaces, veths, bridge, rules) outlives the file.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readlinkSync, statSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { apiRequest } from './harness/clients.ts';
import { startDaemon, type DaemonHandle } from './harness/daemon.ts';
import { formSwarm } from './harness/swarm.ts';
import { startEtcd, type EtcdHandle } from './harness/etcd.ts';
import { NAME_PREFIX, startNetns, type NetnsHandle } from './harness/netns.ts';
import { until } from './harness/wait.ts';

const TTL = 5;
const N = 3;

/**
 * What the host's network shows of this file: namespaces and links by our name prefix, rules
 * naming our subnet or bridge, and the built-in chains' policies. (Not the whole rule set: other test
 * files running beside this one add and remove their own rules meanwhile.)
 */
function hostNetwork(subnet = '', bridge = ''): { netns: string; links: string; rules: string; policies: string } {
  const sh = (cmd: string, args: string[]) => execFileSync(cmd, args, { encoding: 'utf8' });
  const having = (text: string, s: string) => (s ? text.split('\n').filter((l) => l.includes(s)).join('\n') : '');
  const rules = ['filter', 'nat', 'mangle', 'raw'].map((t) => sh('iptables', ['-t', t, '-S'])).join('\n');
  return {
    netns: having(sh('ip', ['netns', 'list']), NAME_PREFIX),
    links: having(sh('ip', ['-br', 'link']), NAME_PREFIX),
    rules: [having(rules, subnet), having(rules, bridge)].filter(Boolean).join('\n'),
    policies: rules.split('\n').filter((l) => l.startsWith('-P ')).join('\n'),
  };
}

/** Node address -> Status.State, as daemon `d` sees the cluster. */
async function states(d: DaemonHandle): Promise<Map<string, string>> {
  const r = await apiRequest(d, 'GET', '/nodes');
  if (r.status !== 200) throw new Error(`GET /nodes: ${r.status} ${r.text}`);
  return new Map((r.body as Array<{ Status: { State: string; Addr: string } }>).map((n) => [n.Status.Addr, n.Status.State]));
}

const canRun = existsSync('/usr/bin/etcd') && process.getuid?.() === 0;

describe('cluster over network namespaces', { skip: !canRun && 'needs root and etcd-server (hack/install.sh installs it)' }, () => {
  let net: NetnsHandle;
  let etcd: EtcdHandle;
  const ds: DaemonHandle[] = [];
  let hostBefore: ReturnType<typeof hostNetwork>;

  before(async () => {
    hostBefore = hostNetwork();
    net = startNetns({ count: N });
    etcd = await startEtcd({ host: net.hostAddr });
  }, { timeout: 180_000 });
  after(async () => {
    // Daemons before the network: they run inside its namespaces.
    await Promise.all(ds.map((d) => d.cleanup().catch(() => {})));
    await etcd?.cleanup();
    net?.cleanup();
    const now = hostNetwork(net?.subnet, net?.bridge);
    assert.equal(now.netns, '', 'no namespace of ours remains');
    assert.equal(now.links, '', 'no bridge or veth of ours remains');
    assert.equal(now.rules, '', 'no host iptables rule names our subnet or bridge');
    assert.equal(now.policies, hostBefore.policies, "the host's chain policies are as before");
  }, { timeout: 180_000 });

  test('the namespaces: own address, lo up, default route via the bridge; the host reaches them', () => {
    for (let i = 0; i < N; i++) {
      const addr = net.exec(i, ['ip', '-4', '-br', 'addr']);
      assert.equal(addr.status, 0, addr.stderr);
      assert.match(addr.stdout, new RegExp(`\\b${net.addr(i).replace(/\./g, '\\.')}/24\\b`));
      assert.match(addr.stdout, /^lo\s+UNKNOWN\s+127\.0\.0\.1\/8/m);
      assert.match(net.exec(i, ['ip', '-4', 'route']).stdout, new RegExp(`^default via ${net.hostAddr.replace(/\./g, '\\.')} `, 'm'));
      assert.equal(execFileSync('ping', ['-c', '1', '-W', '2', net.addr(i)], { encoding: 'utf8' }).includes('1 received'), true);
    }
  });

  test('three daemons, each in its own namespace: all Ready in every GET /nodes', async () => {
    const store = `etcd://${etcd.clientUrl.replace(/^http:\/\//, '')}`;
    ds.push(
      ...(await Promise.all(
        net.names.map((ns, i) =>
          startDaemon({ netns: ns, args: ['--cluster-store', store, '--cluster-store-opt', `discovery.ttl=${TTL}`, '--cluster-default-advertise-addr', net.addr(i)] }),
        ),
      )),
    );
    await formSwarm(ds, net.names.map((_, i) => net.addr(i)));
    for (let i = 0; i < N; i++) {
      // The PID signalled is the daemon's own: nsenter and the launcher exec, they do not fork.
      const pid = ds[i]!.pid;
      assert.match(readlinkSync(`/proc/${pid}/exe`), /node$/);
      assert.equal(statSync(`/proc/${pid}/ns/net`).ino, statSync(net.nsPath(i)).ino, `daemon ${i} is in namespace ${i}`);
    }
    for (const d of ds) {
      await until('three nodes Ready', async () => {
        const s = await states(d);
        return s.size === N && net.names.every((_, i) => s.get(net.addr(i)) === 'ready');
      }, 30_000);
    }
  });

  test('a namespace cut off shows down on the others within the TTL, and Ready again once healed', async () => {
    const cutAt = Date.now();
    net.cut(2);
    assert.notEqual(net.exec(2, ['ping', '-c', '1', '-W', '1', net.hostAddr]).status, 0, 'the cut namespace does not reach the bridge');
    for (const d of ds.slice(0, 2)) {
      await until('node 2 down', async () => (await states(d)).get(net.addr(2)) === 'down', (TTL + 5) * 1000);
    }
    const downMs = Date.now() - cutAt;
    net.heal(2);
    const healAt = Date.now();
    assert.equal(net.exec(2, ['iptables', '-S']).stdout.includes(net.subnet), false, 'heal removed the rules');
    for (const d of ds.slice(0, 2)) {
      await until('node 2 Ready again', async () => (await states(d)).get(net.addr(2)) === 'ready', 60_000);
    }
    console.log(`down seen after ${downMs} ms; Ready again ${Date.now() - healAt} ms after heal`);
  });
});

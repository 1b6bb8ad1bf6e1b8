// The engine's chains and a bridge's rules, in chains with a test prefix and a test bridge name,
// so nothing here touches the host's own rules (the jumps into our chains are removed after).
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { BridgeDriver } from '../../../drivers/network/bridge-driver.ts';
import { chainNames, Iptables, ruleLine } from '../../../drivers/network/iptables.ts';
import { portRules } from '../../../drivers/network/port-rules.ts';
import { purgeIptables, sh, silentLog, suffix } from './helpers.ts';

const S = suffix();
const PREFIX = `ENT${S.toUpperCase()}`;
const BR = `entest${S}`;
const SUBNET = '10.213.2.0/24';
const C = chainNames(PREFIX);
const ALL_CHAINS = [C.engine, C.isolation1, C.isolation2, C.user];

after(async () => {
  await purgeIptables([BR, PREFIX], ALL_CHAINS);
  await purgeIptables([BR, PREFIX], ALL_CHAINS, 'ip6tables');
});

async function lines(table: string, needles = [BR, PREFIX]): Promise<string[]> {
  const out = await sh('iptables', ['-w', '-t', table, '-S']);
  return out.split('\n').filter((l) => needles.some((n) => l.includes(n)));
}

test('ensureIptables lays out chains and rules like the reference daemon, idempotently, and removes them', async () => {
  const driver = new BridgeDriver({ log: silentLog });
  const cfg = { chainPrefix: PREFIX, bridge: BR, subnet: SUBNET, icc: true, ipMasq: true, userlandProxy: true };
  assert.ok((await driver.ensureIptables(cfg)) > 0);

  const filter = await lines('filter');
  for (const want of [
    `-N ${C.engine}`,
    `-N ${C.isolation1}`,
    `-N ${C.isolation2}`,
    `-N ${C.user}`,
    `-A FORWARD -j ${C.user}`,
    `-A FORWARD -j ${C.isolation1}`,
    `-A FORWARD -o ${BR} -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT`,
    `-A FORWARD -o ${BR} -j ${C.engine}`,
    `-A FORWARD -i ${BR} ! -o ${BR} -j ACCEPT`,
    `-A FORWARD -i ${BR} -o ${BR} -j ACCEPT`,
    `-A ${C.isolation1} -i ${BR} ! -o ${BR} -j ${C.isolation2}`,
    `-A ${C.isolation1} -j RETURN`,
    `-A ${C.isolation2} -o ${BR} -j DROP`,
    `-A ${C.isolation2} -j RETURN`,
    `-A ${C.user} -j RETURN`,
  ]) {
    assert.ok(filter.includes(want), `filter has: ${want}\n${filter.join('\n')}`);
  }
  // USER first, then isolation, before our per-bridge rules.
  const fwd = filter.filter((l) => l.startsWith('-A FORWARD'));
  assert.equal(fwd[0], `-A FORWARD -j ${C.user}`);
  assert.equal(fwd[1], `-A FORWARD -j ${C.isolation1}`);
  // Bridge rule before RETURN in the isolation chains.
  const iso1 = filter.filter((l) => l.startsWith(`-A ${C.isolation1} `));
  assert.deepEqual(iso1, [`-A ${C.isolation1} -i ${BR} ! -o ${BR} -j ${C.isolation2}`, `-A ${C.isolation1} -j RETURN`]);

  const nat = await lines('nat');
  for (const want of [
    `-N ${C.engine}`,
    `-A PREROUTING -m addrtype --dst-type LOCAL -j ${C.engine}`,
    `-A OUTPUT ! -d 127.0.0.0/8 -m addrtype --dst-type LOCAL -j ${C.engine}`,
    `-A POSTROUTING -s ${SUBNET} ! -o ${BR} -j MASQUERADE`,
    `-A ${C.engine} -i ${BR} -j RETURN`,
  ]) {
    assert.ok(nat.includes(want), `nat has: ${want}\n${nat.join('\n')}`);
  }

  // Everything is spelled as iptables -S prints it: a second pass changes nothing.
  assert.equal(await driver.ensureIptables(cfg), 0);
  assert.deepEqual(await lines('filter'), filter);
  assert.deepEqual(await lines('nat'), nat);

  // A deleted rule comes back.
  await sh('iptables', ['-w', '-t', 'nat', '-D', 'POSTROUTING', '-s', SUBNET, '!', '-o', BR, '-j', 'MASQUERADE']);
  assert.equal(await driver.ensureIptables(cfg), 1);
  assert.ok((await lines('nat')).includes(`-A POSTROUTING -s ${SUBNET} ! -o ${BR} -j MASQUERADE`));

  // icc off flips the verdict; ip-masq off drops the masquerade; userland-proxy off widens OUTPUT.
  await driver.ensureIptables({ ...cfg, icc: false, ipMasq: false, userlandProxy: false });
  const f2 = await lines('filter');
  assert.ok(f2.includes(`-A FORWARD -i ${BR} -o ${BR} -j DROP`));
  assert.ok(!f2.includes(`-A FORWARD -i ${BR} -o ${BR} -j ACCEPT`));
  const n2 = await lines('nat');
  assert.ok(!n2.some((l) => l.includes('MASQUERADE')));
  assert.ok(n2.includes(`-A OUTPUT -m addrtype --dst-type LOCAL -j ${C.engine}`));
  assert.ok(!n2.includes(`-A OUTPUT ! -d 127.0.0.0/8 -m addrtype --dst-type LOCAL -j ${C.engine}`));

  // Removing the bridge's rules leaves the chains; removing the chains leaves nothing of ours.
  await driver.removeIptables(cfg, { chains: false });
  assert.deepEqual(await lines('filter', [BR]), []);
  assert.deepEqual(await lines('nat', [BR]), []);
  assert.ok((await lines('filter')).includes(`-N ${C.user}`));
  await driver.removeIptables(cfg, { chains: true });
  assert.deepEqual(await lines('filter'), []);
  assert.deepEqual(await lines('nat'), []);
  // And again: nothing to remove is fine.
  await driver.removeIptables(cfg, { chains: true });
});

test('Iptables.exists distinguishes missing rules and missing chains from errors', async () => {
  const ipt = new Iptables();
  assert.equal(await ipt.exists({ table: 'filter', chain: `${PREFIX}-NOPE`, args: ['-j', 'RETURN'] }), false);
  assert.equal(await ipt.exists({ table: 'filter', chain: 'FORWARD', args: ['-j', `${PREFIX}-NOPE`] }), false);
});

test('an internal network: nothing leaves or enters its subnet, no way out, no masquerade; flipping back restores them', async () => {
  const d = new BridgeDriver({ log: silentLog });
  const cfg = { chainPrefix: PREFIX, bridge: BR, subnet: SUBNET, icc: true, ipMasq: true, userlandProxy: true };
  await d.ensureIptables({ ...cfg, internal: true });
  let filter = await lines('filter');
  assert.ok(filter.includes(`-A ${C.isolation1} ! -d ${SUBNET} -i ${BR} -j DROP`), filter.join('\n'));
  assert.ok(filter.includes(`-A ${C.isolation1} ! -s ${SUBNET} -o ${BR} -j DROP`));
  assert.ok(!filter.includes(`-A FORWARD -i ${BR} ! -o ${BR} -j ACCEPT`), 'no way out');
  assert.ok(!(await lines('nat')).some((l) => l.includes('MASQUERADE')));
  await d.ensureIptables({ ...cfg, internal: false });
  filter = await lines('filter');
  assert.ok(!filter.some((l) => l.includes(`! -d ${SUBNET} -j DROP`)));
  assert.ok(filter.includes(`-A FORWARD -i ${BR} ! -o ${BR} -j ACCEPT`));
  await d.removeIptables(cfg, { chains: true });
});

test('family 6: the same chains and rules in ip6tables for the IPv6 subnet (loopback is ::1); removed with the chains', async () => {
  const driver = new BridgeDriver({ log: silentLog });
  const cfg = { chainPrefix: PREFIX, bridge: BR, subnet: 'fd00:213:2::/64', icc: true, ipMasq: true, userlandProxy: true, family: 6 as const };
  assert.ok((await driver.ensureIptables(cfg)) > 0);
  assert.equal(await driver.ensureIptables(cfg), 0, 'a second pass changes nothing');
  const v6 = async (table: string) => (await sh('ip6tables', ['-w', '-t', table, '-S'])).split('\n').filter((l) => l.includes(BR) || l.includes(PREFIX));
  const filter = await v6('filter');
  assert.ok(filter.includes(`-A FORWARD -i ${BR} ! -o ${BR} -j ACCEPT`), filter.join('\n'));
  assert.ok(filter.includes(`-A ${C.isolation2} -o ${BR} -j DROP`));
  const nat = await v6('nat');
  assert.ok(nat.includes(`-A POSTROUTING -s fd00:213:2::/64 ! -o ${BR} -j MASQUERADE`), nat.join('\n'));
  assert.ok(nat.includes(`-A OUTPUT ! -d ::1/128 -m addrtype --dst-type LOCAL -j ${C.engine}`), nat.join('\n'));
  assert.deepEqual(await lines('filter', [BR]), [], 'nothing in iptables (IPv4) for it');
  await driver.removeIptables(cfg, { chains: true });
  assert.deepEqual([...(await v6('filter')), ...(await v6('nat'))], []);
});

test('a published port\'s rules are spelled as iptables -S prints them: added and removed by one iptables-restore each; nothing left to remove is fine', async () => {
  const driver = new BridgeDriver({ log: silentLog });
  const base = { chainPrefix: PREFIX, bridge: BR, subnet: SUBNET, icc: true, ipMasq: true, userlandProxy: true };
  await driver.ensureIptables(base);
  const ports = [
    { proto: 'tcp' as const, hostIp: '127.0.0.1', hostPort: 40123, containerIp: '10.213.2.5', containerPort: 80, userlandProxy: true },
    { proto: 'udp' as const, hostIp: '0.0.0.0', hostPort: 40124, containerIp: '10.213.2.6', containerPort: 53, userlandProxy: false },
    { proto: 'sctp' as const, hostIp: '0.0.0.0', hostPort: 40125, containerIp: '10.213.2.7', containerPort: 9, userlandProxy: true },
  ];
  const all = async () => [...(await lines('filter')), ...(await lines('nat'))].filter((l) => /4012[345]|10\.213\.2\.[567]/.test(l));
  // Straight on Iptables: without the proxy the driver also needs the bridge (route_localnet).
  const ipt = new Iptables();
  for (const p of ports) {
    const cfg = { chainPrefix: PREFIX, bridge: BR, ...p };
    await ipt.addSpelled(portRules(cfg));
    const present = await all();
    for (const r of portRules(cfg)) assert.equal(present.filter((l) => l === ruleLine(r)).length, 1, `${ruleLine(r)} in\n${present.join('\n')}`);
  }
  assert.equal((await all()).length, 9);
  // Removal deletes what was added in one run; a copy added behind our back outlives it, and the
  // next removal (its restore fails on the missing rules) takes it rule by rule.
  const first = portRules({ chainPrefix: PREFIX, bridge: BR, ...ports[0] });
  await sh('iptables', ['-w', '-t', first[0].table, '-A', first[0].chain, ...first[0].args]);
  assert.equal(await ipt.removeSpelled(first), 3);
  assert.equal((await all()).filter((l) => l === ruleLine(first[0])).length, 1);
  assert.equal(await ipt.removeSpelled(first), 1);
  for (const p of ports.slice(1)) await driver.unpublishPort({ chainPrefix: PREFIX, bridge: BR, ...p });
  assert.deepEqual(await all(), []);
  await driver.unpublishPort({ chainPrefix: PREFIX, bridge: BR, ...ports[0] }); // nothing left is fine
  await driver.removeIptables(base, { chains: true });
});

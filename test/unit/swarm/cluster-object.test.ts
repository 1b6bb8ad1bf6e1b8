// The swarm's cluster object (lib/swarm/cluster-object.ts) against what dockerd 20.10 answered on
// this machine (docs/reference-swarm.md): the spec swarm init writes, an update replacing it
// whole (left-out fields zero, Go's omitempty in the rendering), init merging over the defaults,
// the name rule, the version's strconv refusals, TLSInfo of the reference's own root.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { REFERENCE_ROOT } from './reference-root.ts';
import { clusterInfo, defaultSwarmSpec, initSpec, parseSwarmVersion, renderSpec, replacedSpec, swarmObject, tlsInfo } from '../../../lib/swarm/cluster-object.ts';


test("swarm init's spec, rendered, is the reference's", () => {
  assert.deepEqual(renderSpec(defaultSwarmSpec()), {
    Name: 'default',
    Labels: {},
    Orchestration: { TaskHistoryRetentionLimit: 5 },
    Raft: { SnapshotInterval: 10000, KeepOldSnapshots: 0, LogEntriesForSlowFollowers: 500, ElectionTick: 10, HeartbeatTick: 1 },
    Dispatcher: { HeartbeatPeriod: 5000000000 },
    CAConfig: { NodeCertExpiry: 7776000000000000 },
    TaskDefaults: {},
    EncryptionConfig: { AutoLockManagers: false },
  });
  assert.deepEqual(initSpec(undefined), defaultSwarmSpec());
  const s = initSpec({ Name: '', Orchestration: { TaskHistoryRetentionLimit: 2 }, Labels: { a: 'b' } });
  assert.equal(s.Orchestration.TaskHistoryRetentionLimit, 2);
  assert.equal(s.Raft.ElectionTick, 10, 'what init leaves out keeps the default');
  assert.deepEqual(s.Labels, { a: 'b' });
});

test('an update replaces the spec whole: what it leaves out is zero, rendered as the reference does', () => {
  assert.deepEqual(renderSpec(replacedSpec({ Name: 'default' })), {
    Name: 'default',
    Labels: {},
    Orchestration: { TaskHistoryRetentionLimit: 0 },
    Raft: { KeepOldSnapshots: 0, ElectionTick: 0, HeartbeatTick: 0 },
    Dispatcher: {},
    CAConfig: {},
    TaskDefaults: {},
    EncryptionConfig: { AutoLockManagers: false },
  });
  assert.equal(replacedSpec({ Name: 'default', Orchestration: { TaskHistoryRetentionLimit: -1 } }).Orchestration.TaskHistoryRetentionLimit, -1, 'the reference takes -1');
  for (const bad of [() => replacedSpec({ Name: 'other' }), () => initSpec({ Name: 'x' })]) assert.throws(bad, { message: 'swarm spec must be named "default"' });
});

test("?version= in strconv's words", () => {
  assert.equal(parseSwarmVersion('10'), 10n);
  assert.throws(() => parseSwarmVersion('abc'), { message: `invalid swarm version 'abc': strconv.ParseUint: parsing "abc": invalid syntax` });
  assert.throws(() => parseSwarmVersion(undefined), { message: `invalid swarm version '': strconv.ParseUint: parsing "": invalid syntax` });
  assert.throws(() => parseSwarmVersion('18446744073709551616'), /value out of range/);
  assert.throws(() => parseSwarmVersion('-1'), /invalid syntax/);
});

test("TLSInfo of the reference's root is the reference's; the objects carry the shape /swarm and /info show", () => {
  assert.deepEqual(tlsInfo(REFERENCE_ROOT), {
    TrustRoot: REFERENCE_ROOT,
    CertIssuerSubject: 'MBMxETAPBgNVBAMTCHN3YXJtLWNh',
    CertIssuerPublicKey: 'MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEiBXw6GNhnpQKXD30OvdWz9XngkaYl8jD8+HGxrUIaWp5pW6HQRzNiTsM9V+nXO+yLgFzsf/9oxTBZQF76U4Vow==',
  });
  const rec = {
    id: 'wyelft8be970akajm8rqs12xd', version: 10, createdAt: '2026-12-05T22:43:02.885315396Z', updatedAt: '2026-12-05T22:43:03.015233356Z',
    spec: defaultSwarmSpec(), rootCaPem: REFERENCE_ROOT, tokens: { worker: 'W', manager: 'M' }, defaultAddrPool: ['10.0.0.0/8'], subnetSize: 24, dataPathPort: 4789,
  };
  const info = clusterInfo(rec);
  assert.deepEqual(Object.keys(info), ['ID', 'Version', 'CreatedAt', 'UpdatedAt', 'Spec', 'TLSInfo', 'RootRotationInProgress', 'DefaultAddrPool', 'SubnetSize', 'DataPathPort']);
  assert.deepEqual(info.Version, { Index: 10 });
  assert.deepEqual(swarmObject(rec).JoinTokens, { Worker: 'W', Manager: 'M' });
  assert.equal('JoinTokens' in info, false);
});

// The cluster's node records through the Engine API: Node objects, GET /info's Swarm section and
// the /_ping Swarm header, in the reference's (dockerd 20.10, swarm manager) shapes.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { NodeRecord } from '../../../lib/cluster/node-record.ts';
import { DEFAULT_INFO_PLUGINS, enginePlugins, inactiveSwarmInfo, nodeView, pingSwarmHeader, swarmInfo } from '../../../api/nodes/views.ts';
import { defaultInfo } from '../../../api/system/info-defaults.ts';
import { LOG_DRIVERS } from '../../../drivers/logging/options.ts';

function rec(over: Partial<NodeRecord> = {}): NodeRecord {
  return {
    id: 'abcdefghijklmnopqrstuvwxy',
    hostname: 'node-a',
    addr: '10.1.0.5',
    engineVersion: '0.1.0',
    labels: {},
    os: 'linux',
    arch: 'x86_64',
    nanoCpus: 4_000_000_000,
    memoryBytes: 8_348_520_448,
    genericResources: [],
    state: 'ready',
    createdAt: '2024-05-01T10:00:00.123456789Z',
    updatedAt: '2024-05-01T10:05:00.5Z',
    version: 7,
    ...over,
  };
}

describe('nodeView', () => {
  test('a ready leader: the full Node shape, keys in Go order', () => {
    const v = nodeView(rec({ labels: { zone: 'a' } }), { leaderId: 'abcdefghijklmnopqrstuvwxy' }) as any;
    assert.deepEqual(Object.keys(v), ['ID', 'Version', 'CreatedAt', 'UpdatedAt', 'Spec', 'Description', 'Status', 'ManagerStatus']);
    assert.equal(v.ID, 'abcdefghijklmnopqrstuvwxy');
    assert.deepEqual(v.Version, { Index: 7 });
    assert.equal(v.CreatedAt, '2024-05-01T10:00:00.123456789Z');
    assert.equal(v.UpdatedAt, '2024-05-01T10:05:00.5Z');
    assert.deepEqual(v.Spec, { Labels: {}, Role: 'manager', Availability: 'active' });
    assert.equal(v.Description.Hostname, 'node-a');
    assert.deepEqual(v.Description.Platform, { Architecture: 'x86_64', OS: 'linux' });
    assert.deepEqual(v.Description.Resources, { NanoCPUs: 4_000_000_000, MemoryBytes: 8_348_520_448 });
    assert.equal(v.Description.Engine.EngineVersion, '0.1.0');
    assert.deepEqual(v.Description.Engine.Labels, { zone: 'a' });
    assert.ok(Array.isArray(v.Description.Engine.Plugins) && v.Description.Engine.Plugins.length > 0);
    assert.deepEqual(v.Description.TLSInfo, { TrustRoot: '', CertIssuerSubject: '', CertIssuerPublicKey: '' });
    assert.deepEqual(v.Status, { State: 'ready', Addr: '10.1.0.5' });
    assert.deepEqual(v.ManagerStatus, { Leader: true, Reachability: 'reachable', Addr: '10.1.0.5:2377' });
  });

  test('a follower has no Leader key (omitempty); empty engine labels and generic resources are left out', () => {
    const v = nodeView(rec(), { leaderId: 'someoneelse' }) as any;
    assert.deepEqual(v.ManagerStatus, { Reachability: 'reachable', Addr: '10.1.0.5:2377' });
    assert.ok(!('Labels' in v.Description.Engine));
    assert.ok(!('GenericResources' in v.Description.Resources));
    const noLeader = nodeView(rec(), { leaderId: undefined }) as any;
    assert.ok(!('Leader' in noLeader.ManagerStatus));
  });

  test('generic resources appear in the Engine API shape', () => {
    const gr = [{ DiscreteResourceSpec: { Kind: 'gpu', Value: 2 } }, { NamedResourceSpec: { Kind: 'ssd', Value: 'sda1' } }];
    const v = nodeView(rec({ genericResources: gr }), { leaderId: undefined }) as any;
    assert.deepEqual(v.Description.Resources.GenericResources, gr);
  });

  test('a down node: State down, unreachable, never the leader', () => {
    const v = nodeView(rec(), { leaderId: 'abcdefghijklmnopqrstuvwxy', down: true }) as any;
    assert.equal(v.Status.State, 'down');
    // As dockerd 20.10 shows it (docs/reference-swarm.md, "Joining"): the message before the address.
    assert.deepEqual(Object.keys(v.Status), ['State', 'Message', 'Addr']);
    assert.equal(v.Status.Message, 'heartbeat failure');
    assert.deepEqual(v.ManagerStatus, { Reachability: 'unreachable', Addr: '10.1.0.5:2377' });
    const fromRecord = nodeView(rec({ state: 'down' }), { leaderId: undefined }) as any;
    assert.equal(fromRecord.Status.State, 'down');
    assert.equal(fromRecord.ManagerStatus.Reachability, 'unreachable');
  });

  test('zero values are omitted as Go omitempty does, structs stay', () => {
    const v = nodeView(rec({ version: 0, nanoCpus: 0, memoryBytes: 0, hostname: '', engineVersion: '' }), { leaderId: undefined }) as any;
    assert.deepEqual(v.Version, {});
    assert.deepEqual(v.Description.Resources, {});
    assert.ok(!('Hostname' in v.Description));
    assert.ok(!('EngineVersion' in v.Description.Engine));
  });

  test('the output is JSON-clean and does not alias the record', () => {
    const r = rec({ labels: { a: 'b' } });
    const v = nodeView(r, { leaderId: undefined }) as any;
    v.Description.Engine.Labels.a = 'changed';
    assert.equal(r.labels.a, 'b');
    assert.deepEqual(JSON.parse(JSON.stringify(v)), v);
  });
});

describe('enginePlugins', () => {
  test('sorted by Type then Name (bytewise), de-duplicated, as the reference executor', () => {
    assert.deepEqual(enginePlugins({ Volume: ['local'], Network: ['null', 'bridge', 'overlay', 'bridge'], Authorization: null, Log: ['json-file', 'gelf'] }), [
      { Type: 'Log', Name: 'gelf' },
      { Type: 'Log', Name: 'json-file' },
      { Type: 'Network', Name: 'bridge' },
      { Type: 'Network', Name: 'null' },
      { Type: 'Network', Name: 'overlay' },
      { Type: 'Volume', Name: 'local' },
    ]);
  });
  test('the default list names the engine drivers', () => {
    const p = enginePlugins();
    assert.ok(p.some((x) => x.Type === 'Log' && x.Name === 'json-file'));
    assert.ok(p.some((x) => x.Type === 'Network' && x.Name === 'bridge'));
    assert.ok(p.some((x) => x.Type === 'Volume' && x.Name === 'local'));
  });
  test('the default Log list is the engine\'s registered log drivers', () => {
    assert.deepEqual(DEFAULT_INFO_PLUGINS.Log, LOG_DRIVERS);
  });
  test('nodeView takes the node plugin lists', () => {
    const v = nodeView(rec(), { leaderId: undefined, plugins: { Volume: ['local'] } }) as any;
    assert.deepEqual(v.Description.Engine.Plugins, [{ Type: 'Volume', Name: 'local' }]);
    const none = nodeView(rec(), { leaderId: undefined, plugins: {} }) as any;
    assert.ok(!('Plugins' in none.Description.Engine));
  });
});

describe('swarmInfo', () => {
  const a = rec();
  const b = rec({ id: '0000000000000000000000000b', hostname: 'node-b', addr: '10.1.0.6', createdAt: '2024-04-01T00:00:00Z' });

  test('inactive: the shape of info-defaults', () => {
    const v = swarmInfo(undefined, [], { clusterId: '', state: 'inactive' });
    assert.deepEqual(v, defaultInfo().Swarm);
    assert.deepEqual(inactiveSwarmInfo(), defaultInfo().Swarm);
    assert.deepEqual(swarmInfo(a, [a], { clusterId: 'c', state: 'inactive' }), defaultInfo().Swarm);
  });

  test('active manager: identity, counts, remote managers, and the whole Cluster', () => {
    const v = swarmInfo(a, [a, b], { clusterId: 'clusterid0000000000000000', state: 'active', leaderId: a.id }) as any;
    assert.deepEqual(Object.keys(v), ['NodeID', 'NodeAddr', 'LocalNodeState', 'ControlAvailable', 'Error', 'RemoteManagers', 'Nodes', 'Managers', 'Cluster']);
    assert.equal(v.NodeID, a.id);
    assert.equal(v.NodeAddr, '10.1.0.5');
    assert.equal(v.LocalNodeState, 'active');
    assert.equal(v.ControlAvailable, true);
    assert.equal(v.Error, '');
    assert.deepEqual(v.RemoteManagers, [
      { NodeID: b.id, Addr: '10.1.0.6:2377' },
      { NodeID: a.id, Addr: '10.1.0.5:2377' },
    ]);
    assert.equal(v.Nodes, 2);
    assert.equal(v.Managers, 2);
    assert.deepEqual(v.Cluster, {
      ID: 'clusterid0000000000000000',
      Version: { Index: 1 },
      CreatedAt: '2024-04-01T00:00:00Z',
      UpdatedAt: '2024-04-01T00:00:00Z',
      Spec: {
        Name: 'default',
        Labels: {},
        Orchestration: { TaskHistoryRetentionLimit: 5 },
        Raft: { SnapshotInterval: 10000, KeepOldSnapshots: 0, LogEntriesForSlowFollowers: 500, ElectionTick: 10, HeartbeatTick: 1 },
        Dispatcher: { HeartbeatPeriod: 5000000000 },
        CAConfig: { NodeCertExpiry: 7776000000000000 },
        TaskDefaults: {},
        EncryptionConfig: { AutoLockManagers: false },
      },
      TLSInfo: { TrustRoot: '', CertIssuerSubject: '', CertIssuerPublicKey: '' },
      RootRotationInProgress: false,
      DefaultAddrPool: ['10.0.0.0/8'],
      SubnetSize: 24,
      DataPathPort: 4789,
    });
  });

  test('active: Cluster created/version can be given', () => {
    const v = swarmInfo(a, [a], { clusterId: 'c', state: 'active', clusterCreatedAt: '2023-01-01T00:00:00Z', clusterVersion: 3 }) as any;
    assert.equal(v.Cluster.CreatedAt, '2023-01-01T00:00:00Z');
    assert.deepEqual(v.Cluster.Version, { Index: 3 });
  });

  test('pending and error: no control, no Cluster, no counts', () => {
    const p = swarmInfo(a, [a], { clusterId: 'c', state: 'pending' }) as any;
    assert.equal(p.LocalNodeState, 'pending');
    assert.equal(p.ControlAvailable, false);
    assert.ok(!('Cluster' in p) && !('Nodes' in p) && !('Managers' in p));
    const e = swarmInfo(a, [], { clusterId: 'c', state: 'error', error: 'etcd unreachable' }) as any;
    assert.equal(e.LocalNodeState, 'error');
    assert.equal(e.Error, 'etcd unreachable');
    assert.equal(e.ControlAvailable, false);
    assert.equal(e.RemoteManagers, null);
    assert.ok(!('Cluster' in e));
    assert.equal(e.NodeID, a.id);
  });
});

describe('pingSwarmHeader', () => {
  test('state, with the role when active', () => {
    assert.equal(pingSwarmHeader('inactive', false), 'inactive');
    assert.equal(pingSwarmHeader('pending', true), 'pending');
    assert.equal(pingSwarmHeader('error', true), 'error');
    assert.equal(pingSwarmHeader('locked', true), 'locked');
    assert.equal(pingSwarmHeader('active', true), 'active/manager');
    assert.equal(pingSwarmHeader('active', false), 'active/worker');
  });
});

// Each stored kind has a schema: writes are checked, records round-trip, records written before
// schemas (version 0) migrate at open, and a record that cannot be read is quarantined while the
// store opens with the rest.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterEach, beforeEach, test } from 'node:test';
import { isCode } from '../../../lib/errors.ts';
import { newId } from '../../../lib/ids.ts';
import { EMPTY_ENDPOINT_STATUS, endpointName, type EndpointSpec } from '../../../store/kinds/endpoint.ts';
import type { NetworkSpec, NetworkStatus } from '../../../store/kinds/network.ts';
import { STORE_KINDS } from '../../../store/kinds/index.ts';
import { openStore, type Store } from '../../../store/store.ts';
import { type ImageSpec, Images } from '../../../store/kinds/image.ts';
import type { VolumeSpec, VolumeStatus } from '../../../store/kinds/volume.ts';
import { containerRecord } from '../container/fake-world.ts';
import { fakeLog } from '../controllers/fake-log.ts';
import { Containers } from '../../../store/kinds/container.ts';
import { loose, testKind } from './test-kind.ts';

const K_SCRATCH = testKind('scratch');

let dir: string;
let dbPath: string;
let store: Store;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'engine-schema-'));
  dbPath = join(dir, 'engine.db');
  store = openStore(dbPath, { kinds: STORE_KINDS });
});
afterEach(() => {
  store.close();
  rmSync(dir, { recursive: true, force: true });
});

function reopen(schemas = STORE_KINDS, log = fakeLog()): Store {
  store.close();
  store = openStore(dbPath, { kinds: schemas, log });
  return store;
}

const digest = (c: string) => `sha256:${c.repeat(64)}`;
const now = '2026-11-25T17:00:00.123456789Z';

/** One realistic record of every kind the daemon stores. */
/** The stored kind named `name`. */
const kindOf = (name: string) => STORE_KINDS.get(name)!;

function recordsOfEveryKind(): Array<{ kind: string; name: string; spec: unknown; status: unknown }> {
  const cid = newId();
  const c = containerRecord(cid, {
    spec: { desired: 'running', mountPoints: [{ type: 'volume', name: 'data', source: '', destination: '/data', readOnly: false, mode: '', propagation: '', noCopy: false }] },
    status: {
      phase: 'running',
      pid: 4242,
      ports: [{ containerPort: 80, proto: 'tcp', hostIp: '0.0.0.0', hostPort: 8080 }],
      endpoint: { NetworkID: 'n', EndpointID: 'e', Gateway: '172.17.0.1', IPAddress: '172.17.0.2', IPPrefixLen: 16, MacAddress: '02:42:ac:11:00:02' },
      health: { Status: 'starting', FailingStreak: 0, Log: [{ Start: now, End: now, ExitCode: 0, Output: 'ok' }] },
      timers: [{ id: 'backoff', event: { type: 'RETRY' }, at: 1 }],
    },
  });
  const image: ImageSpec = {
    id: digest('a'), rawConfig: '{}', diffIds: [digest('b')], chainId: digest('b'), size: 100, repoDigests: [`busybox@${digest('c')}`],
    parent: '', loadedAt: now, desired: 'present',
  };
  const netId = newId();
  const network: NetworkSpec = {
    id: netId, name: 'web', driver: 'bridge', scope: 'local', created: now, enableIPv6: false, internal: false, attachable: false, ingress: false,
    ipam: { Driver: 'default', Options: null, Config: [{ Subnet: '172.30.0.0/16', Gateway: '172.30.0.1' }] },
    options: {}, labels: { a: 'b' },
    bridge: { bridgeName: 'br-x', mtu: 1500, icc: true, ipMasq: true, iptables: true, ipForward: true, userlandProxy: true, chainPrefix: 'ENGINE', defaultGateway: '' },
    desired: 'present',
  };
  const networkStatus: NetworkStatus = { observedGeneration: 1, phase: 'ready', error: '', lastRepair: '', lastRepairAt: '', applied: { bridgeName: 'br-x', subnet: '172.30.0.0/16', chainPrefix: 'ENGINE', iptables: true, icc: true, ipMasq: true } };
  const endpoint: EndpointSpec = { containerId: cid, networkId: netId, networkName: 'web', config: { Aliases: ['db'], IPAMConfig: null }, primary: true, desired: 'present' };
  const volume: VolumeSpec = { name: 'data', driver: 'local', options: {}, labels: {}, created: now, anonymous: false, desired: 'present' };
  const volumeStatus: VolumeStatus = { observedGeneration: 1, phase: 'ready', error: '', mountpoint: '/var/lib/engine/volumes/data/_data' };
  return [
    { kind: 'container', name: cid, ...c },
    { kind: 'image', name: image.id, spec: image, status: { observedGeneration: 1, phase: 'ready', error: '' } },
    { kind: 'reference', name: 'docker.io/library/busybox:latest', spec: { imageId: image.id }, status: {} },
    { kind: 'network', name: netId, spec: network, status: networkStatus },
    { kind: 'ipam-allocation', name: `${netId}/172.30.0.2`, spec: { networkId: netId, address: '172.30.0.2', prefixLen: 16, containerId: cid, allocatedAt: now }, status: {} },
    {
      kind: 'port-allocation', name: 'tcp/0.0.0.0/8080',
      spec: { containerId: cid, proto: 'tcp', hostIp: '0.0.0.0', hostPort: 8080, containerIp: '172.30.0.2', containerPort: 80, bridge: 'br-x', chainPrefix: 'ENGINE', iptables: true, userlandProxy: true },
      status: {},
    },
    { kind: 'endpoint', name: endpointName(cid, netId), spec: endpoint, status: { ...EMPTY_ENDPOINT_STATUS, phase: 'attached', pid: 4242, ifName: 'eth0' } },
    { kind: 'volume', name: 'data', spec: volume, status: volumeStatus },
    { kind: 'migration', name: 'endpoint-records', spec: { at: now }, status: {} },
    {
      kind: 'pull', name: 'docker.io/library/busybox:latest',
      spec: { reference: 'docker.io/library/busybox:latest', platform: '', request: 2, desired: 'present' },
      status: { observedGeneration: 2, phase: 'done', imageId: image.id, changed: true, error: '', errorCode: '', startedAt: now, finishedAt: now },
    },
    {
      kind: 'runtime', name: 'dbg',
      spec: { source: 'file', path: '/usr/sbin/runc', runtimeArgs: ['--debug'] },
      status: {
        observedGeneration: 1, shim: 'io.containerd.runc.v2',
        options: { typeUrl: 'containerd.runc.v1.Options', fields: { binary_name: '/var/lib/engine/runtimes/dbg', root: '/run/engine/runtime-runc', systemd_cgroup: false } },
        conditions: [{ type: 'Ready', status: 'True', reason: 'Valid', message: '' }],
      },
    },
    {
      kind: 'stack', name: 'shop',
      spec: { document: { services: { web: { image: 'busybox', deploy: { replicas: 2 } } } }, desired: 'present', removeVolumes: false, appliedAt: now },
      status: { observedGeneration: 1, conditions: [{ type: 'Ready', status: 'False', reason: 'NotConverged', message: '', lastTransitionTime: now, observedGeneration: 1 }], services: { web: { desired: 2, ready: 0, conditions: [] } } },
    },
    {
      kind: 'daemon-config', name: 'daemon',
      spec: { revision: 3, cause: 'watch', text: '{"debug": true}' },
      status: { observedRevision: 3, applied: { debug: true, labels: ['a=b'] }, conditions: [{ type: 'Applied', status: 'True', reason: 'Applied', message: 'debug', lastTransitionTime: now }] },
    },
    {
      kind: 'exec', name: newId(),
      spec: {
        containerId: cid, desired: 'started', start: { tty: true, consoleSize: [24, 80] },
        config: { User: '', Privileged: false, Tty: true, AttachStdin: true, AttachStdout: true, AttachStderr: false, DetachKeys: 'ctrl-p', Env: ['A=1'], WorkingDir: '/', Cmd: ['sh'], ConsoleSize: null },
      },
      status: { observedGeneration: 2, phase: 'exited', pid: 42, exitCode: 0, error: '', errorCode: '', finishedAt: now },
    },
  ];
}

test('a record of each kind passes its schema and reads back the same after a reopen', () => {
  const records = recordsOfEveryKind();
  assert.deepEqual(new Set(records.map((r) => r.kind)), new Set(STORE_KINDS.keys()), 'every kind with a schema has a record here');
  for (const r of records) store.create(kindOf(r.kind), r.name, r.spec, r.status);
  reopen();
  assert.deepEqual(store.quarantined(), []);
  for (const r of records) {
    const got = store.get(kindOf(r.kind), r.name);
    assert.ok(got, `${r.kind} kept`);
    assert.deepEqual(got.spec, r.spec, r.kind);
    assert.deepEqual(got.status, r.status, r.kind);
  }
});

test('a write that does not match its schema is refused and changes nothing', () => {
  const id = newId();
  const { spec, status } = containerRecord(id);
  assert.throws(() => store.create(loose(Containers), id, { ...spec, desired: 'sideways' }, status), /container\/\w+ does not match its schema: spec\.desired/);
  assert.equal(store.get(Containers, id), undefined);
  const before = store.revision;
  store.create(Containers, id, spec, status);
  assert.throws(
    () => store.updateStatus(Containers, id, (s) => ({ ...s, pid: 'x' as unknown as number })),
    (err: unknown) => isCode(err, 'Internal') && /status\.pid/.test(String(err)),
  );
  assert.equal(store.get(Containers, id)!.status.pid, 0);
  assert.equal(store.revision, before + 1, 'only the create was written');
  // Kinds without a schema are stored as given.
  store.create(K_SCRATCH, 'x', { anything: [1, 'two'] }, null);
});

test('records written before schemas (version 0) migrate at open: container counters become levels', () => {
  store.close();
  store = openStore(dbPath); // no schemas: what the daemon wrote until now
  const { spec, status } = containerRecord(newId());
  const { runGeneration: _a, ...oldSpec } = spec;
  const { runGeneration: _b, ...oldStatus } = status;
  // Started twice, the second start not yet seen; stopped once with -t 3; a pending kill.
  const pending = newId();
  store.create(loose(Containers), pending, { ...oldSpec, id: pending, desired: 'running', startSeq: 2, stop: { seq: 1, timeout: 3 }, kill: { seq: 1, signal: 'HUP' } }, { ...oldStatus, startSeq: 1, stopSeq: 1, killSeq: 0 });
  const current = newId();
  store.create(Containers, current, { ...spec, id: current }, status);
  const revision = store.revision;
  const log = fakeLog();
  reopen(STORE_KINDS, log);
  const r = store.get(Containers, pending)!;
  assert.equal(r.spec.runGeneration, 2);
  assert.equal(r.status.runGeneration, 1, 'the second start is still pending: a new run is wanted');
  assert.equal(r.spec.stopOptions?.timeout, 3);
  for (const k of ['startSeq', 'stop', 'kill']) assert.equal(k in r.spec, false, k);
  for (const k of ['startSeq', 'stopSeq', 'killSeq']) assert.equal(k in r.status, false, k);
  assert.deepEqual(store.get(Containers, current)!.spec, { ...spec, id: current });
  assert.equal(store.revision, revision, 'a migration is not a change: no revision, no event');
  // Written back at the new version: the next open finds nothing to migrate.
  store.close();
  const db = new DatabaseSync(dbPath);
  const versions = db.prepare('SELECT DISTINCT schema_version AS v FROM resources').all().map((x) => Number((x as { v: number }).v));
  db.close();
  assert.deepEqual(versions, [1]);
  reopen();
  assert.equal(store.get(Containers, pending)!.spec.runGeneration, 2);
});

test('a record that fails its schema or is not JSON is quarantined; the store opens with the rest', () => {
  const records = recordsOfEveryKind();
  for (const r of records) store.create(kindOf(r.kind), r.name, r.spec, r.status);
  const [container, image] = [records[0]!, records[1]!];
  store.close();
  const db = new DatabaseSync(dbPath);
  db.prepare('UPDATE resources SET status = ? WHERE kind = ? AND name = ?').run('{"phase":7}', 'container', container.name);
  db.prepare('UPDATE resources SET spec = ? WHERE kind = ? AND name = ?').run('{"id": "sha256:', 'image', image.name);
  db.close();
  const log = fakeLog();
  reopen(STORE_KINDS, log);
  assert.equal(store.get(Containers, container.name), undefined);
  assert.equal(store.get(Images, image.name), undefined);
  for (const r of records.slice(2)) assert.ok(store.get(kindOf(r.kind), r.name), `${r.kind} kept`);
  const q = store.quarantined();
  assert.deepEqual(q.map((x) => `${x.kind}/${x.name}`), [`container/${container.name}`, `image/${image.name}`]);
  assert.match(q[0]!.reason, /status\.phase/);
  assert.match(q[1]!.reason, /not JSON/);
  // The name is free again, and the quarantine is kept across opens (for a human to look at).
  store.create(loose(Containers), container.name, container.spec, container.status);
  reopen();
  assert.equal(store.quarantined().length, 2);
  assert.ok(store.get(Containers, container.name));
});

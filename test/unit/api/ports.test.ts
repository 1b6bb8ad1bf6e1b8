// Published ports: validation of HostConfig.PortBindings and Config.ExposedPorts at create (the
// reference's messages), the ExposedPorts merge, and inspect's NetworkSettings.Ports and ps' Ports.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { normalizeCreate, type CreateDefaults } from '../../../admission/containers/create-request.ts';
import { portsView, summaryPorts } from '../../../api/containers/ports.ts';
import { normalizeExposedPorts, normalizePortBindings } from '../../../admission/containers/port-bindings.ts';
import { inspectView, summaryView } from '../../../api/containers/views.ts';
import { EngineError } from '../../../lib/errors.ts';
import type { ContainerStatus, HostConfig, PublishedPort, ContainerResource as Rec } from '../../../store/kinds/container.ts';

type PortBindings = HostConfig['PortBindings'];
import { containerRecord } from '../container/fake-world.ts';

const ID = 'ab'.repeat(32);

function invalid(fn: () => unknown, message: string) {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof EngineError, `not an EngineError: ${String(err)}`);
    assert.equal(err.code, 'InvalidArgument');
    assert.equal(err.message, message);
    return true;
  });
}

const defaults: CreateDefaults = {
  runtime: 'runc',
  hasRuntime: () => true,
  shmSize: 64 * 1024 * 1024,
  logConfig: { Type: 'json-file', Config: {} },
  validateLogConfig: () => {},
  validateBind: () => {},
};

describe('normalizePortBindings', () => {
  test('absent → null; keys normalised to port/proto', () => {
    assert.equal(normalizePortBindings(undefined), null);
    assert.equal(normalizePortBindings(null), null);
    assert.deepEqual(normalizePortBindings({}), {});
    assert.deepEqual(
      normalizePortBindings({
        '80': [{ HostIp: '', HostPort: '8080' }],
        '53/UDP': [{ HostIp: '127.0.0.1', HostPort: '' }],
        '9000/sctp': [{ HostIp: '::1', HostPort: '9000-9010' }],
        '443/tcp': [{ HostPort: '0' }, { HostIp: '0.0.0.0' }],
        '22/tcp': null,
      }),
      {
        '80/tcp': [{ HostIp: '', HostPort: '8080' }],
        '53/udp': [{ HostIp: '127.0.0.1', HostPort: '' }],
        '9000/sctp': [{ HostIp: '::1', HostPort: '9000-9010' }],
        '443/tcp': [{ HostIp: '', HostPort: '0' }, { HostIp: '0.0.0.0', HostPort: '' }],
        '22/tcp': [],
      },
    );
  });

  test('keys that normalise alike join their bindings', () => {
    assert.deepEqual(normalizePortBindings({ '80': [{ HostIp: '', HostPort: '8080' }], '80/tcp': [{ HostIp: '', HostPort: '8081' }] }), {
      '80/tcp': [{ HostIp: '', HostPort: '8080' }, { HostIp: '', HostPort: '8081' }],
    });
  });

  test('invalid container ports', () => {
    invalid(() => normalizePortBindings({ x: [] }), 'invalid port specification: "x"');
    invalid(() => normalizePortBindings({ 'abc/tcp': [] }), 'invalid port specification: "abc"');
    invalid(() => normalizePortBindings({ '0/tcp': [] }), 'invalid port specification: "0"');
    invalid(() => normalizePortBindings({ '65536': [] }), 'invalid port specification: "65536"');
    invalid(() => normalizePortBindings({ '-1': [] }), 'invalid port specification: "-1"');
    invalid(() => normalizePortBindings({ '8000-8010/tcp': [] }), 'invalid port specification: "8000-8010"');
    invalid(() => normalizePortBindings({ '': [] }), 'invalid port specification: ""');
    invalid(() => normalizePortBindings({ '80/foo': [] }), 'invalid proto: foo');
  });

  test('invalid host ports', () => {
    invalid(() => normalizePortBindings({ '80/tcp': [{ HostIp: '', HostPort: 'x' }] }), 'invalid port specification: "x"');
    invalid(() => normalizePortBindings({ '80/tcp': [{ HostIp: '', HostPort: '65536' }] }), 'invalid port specification: "65536"');
    invalid(() => normalizePortBindings({ '80/tcp': [{ HostIp: '', HostPort: '9000-8000' }] }), 'invalid port specification: "9000-8000"');
    invalid(() => normalizePortBindings({ '80/tcp': [{ HostIp: '', HostPort: '8000-' }] }), 'invalid port specification: "8000-"');
    invalid(() => normalizePortBindings({ '80/tcp': [{ HostIp: '', HostPort: 8080 }] }), 'invalid port specification: "8080"');
  });

  test('invalid host addresses', () => {
    invalid(() => normalizePortBindings({ '80/tcp': [{ HostIp: 'x', HostPort: '' }] }), 'invalid IP address: x');
    invalid(() => normalizePortBindings({ '80/tcp': [{ HostIp: '1.2.3.256', HostPort: '' }] }), 'invalid IP address: 1.2.3.256');
    invalid(() => normalizePortBindings({ '80/tcp': [{ HostIp: '[::1]', HostPort: '' }] }), 'invalid IP address: [::1]');
    invalid(() => normalizePortBindings({ '80/tcp': [{ HostIp: 'fe80::1%eth0', HostPort: '' }] }), 'invalid IP address: fe80::1%eth0');
  });

  test('malformed shapes', () => {
    invalid(() => normalizePortBindings([]), 'invalid PortBindings: expected an object');
    invalid(() => normalizePortBindings({ '80/tcp': 'x' }), 'invalid PortBindings: expected an array of bindings for 80/tcp');
  });
});

describe('normalizeExposedPorts', () => {
  test('keys validated and normalised, PortBindings keys added', () => {
    assert.equal(normalizeExposedPorts(undefined, null), null);
    assert.deepEqual(normalizeExposedPorts({ '80': {}, '53/UDP': {} }, { '8080/tcp': [] }), { '80/tcp': {}, '53/udp': {}, '8080/tcp': {} });
    assert.deepEqual(normalizeExposedPorts(null, { '80/tcp': [] }), { '80/tcp': {} });
    invalid(() => normalizeExposedPorts({ x: {} }, null), 'invalid port specification: "x"');
    invalid(() => normalizeExposedPorts({ '80/icmp': {} }, null), 'invalid proto: icmp');
  });

  test('normalizeCreate merges the body, the bindings and the image', () => {
    const image = { config: { Cmd: ['sh'], ExposedPorts: { '443/tcp': {}, '80/tcp': {} } } };
    const n = normalizeCreate(
      { Image: 'img', ExposedPorts: { '80': {} }, HostConfig: { PortBindings: { '8080': [{ HostIp: '', HostPort: '' }] }, PublishAllPorts: true } },
      image as never,
      defaults,
    );
    assert.deepEqual(n.config.ExposedPorts, { '80/tcp': {}, '8080/tcp': {}, '443/tcp': {} });
    assert.deepEqual(n.hostConfig.PortBindings, { '8080/tcp': [{ HostIp: '', HostPort: '' }] });
    assert.equal(n.hostConfig.PublishAllPorts, true);
    assert.deepEqual(n.warnings, []);

    const plain = normalizeCreate({ Image: 'img' }, { config: { Cmd: ['sh'] } } as never, defaults);
    assert.equal(plain.config.ExposedPorts, null);
    assert.equal(plain.hostConfig.PortBindings, null);
    assert.equal(plain.hostConfig.PublishAllPorts, false);

    const img = normalizeCreate({ Image: 'img' }, image as never, defaults);
    assert.deepEqual(img.config.ExposedPorts, { '443/tcp': {}, '80/tcp': {} });
  });

  test('normalizeCreate refuses bad bindings and warns for host networking', () => {
    invalid(
      () => normalizeCreate({ Image: 'img', HostConfig: { PortBindings: { '80/tcp': [{ HostIp: 'nope', HostPort: '' }] } } }, { config: { Cmd: ['sh'] } } as never, defaults),
      'invalid IP address: nope',
    );
    invalid(() => normalizeCreate({ Image: 'img', ExposedPorts: { '70000/tcp': {} } }, { config: { Cmd: ['sh'] } } as never, defaults), 'invalid port specification: "70000"');
    const n = normalizeCreate(
      { Image: 'img', HostConfig: { NetworkMode: 'host', PortBindings: { '80/tcp': [{ HostIp: '', HostPort: '80' }] } } },
      { config: { Cmd: ['sh'] } } as never,
      defaults,
    );
    assert.deepEqual(n.warnings, ['Published ports are discarded when using host network mode']);
  });
});


function record(opts: { phase: ContainerStatus['phase']; ports?: PublishedPort[]; exposed?: string[]; bindings?: PortBindings; mode?: string }): Rec {
  const { spec, status } = containerRecord(ID, {
    config: { ExposedPorts: opts.exposed ? Object.fromEntries(opts.exposed.map((k) => [k, {}])) : null },
    hostConfig: { NetworkMode: opts.mode ?? 'bridge', PortBindings: opts.bindings ?? null },
    status: { phase: opts.phase, ports: opts.ports, startedAt: new Date().toISOString() },
  });
  return { kind: 'container', name: ID, spec, status, generation: 1, resourceVersion: 1, createdAt: spec.created };
}

const PUBLISHED: PublishedPort[] = [
  { containerPort: 80, proto: 'tcp', hostIp: '0.0.0.0', hostPort: 8080 },
  { containerPort: 80, proto: 'tcp', hostIp: '::', hostPort: 8080 },
  { containerPort: 53, proto: 'udp', hostIp: '127.0.0.1', hostPort: 32768 },
];
const EXPOSED = ['80/tcp', '53/udp', '443/tcp', '53/tcp'];

describe('portsView (inspect NetworkSettings.Ports)', () => {
  test('running: exposed ports with their bindings, null when unpublished, keys in byte order', () => {
    const r = record({ phase: 'running', ports: PUBLISHED, exposed: EXPOSED, bindings: { '80/tcp': [], '53/udp': [] } });
    const v = portsView(r.spec, r.status);
    assert.deepEqual(v, {
      '443/tcp': null,
      '53/tcp': null,
      '53/udp': [{ HostIp: '127.0.0.1', HostPort: '32768' }],
      '80/tcp': [{ HostIp: '0.0.0.0', HostPort: '8080' }, { HostIp: '::', HostPort: '8080' }],
    });
    assert.deepEqual(Object.keys(v), ['443/tcp', '53/tcp', '53/udp', '80/tcp']);
    const inspect = inspectView(r, { apiVersion: 1.47, graphDriverData: {} }) as { NetworkSettings: { Ports: unknown } };
    assert.deepEqual(inspect.NetworkSettings.Ports, v);
  });

  test('running before the host side has published: exposed keys all null', () => {
    const r = record({ phase: 'running', exposed: ['80/tcp'] });
    assert.deepEqual(portsView(r.spec, r.status), { '80/tcp': null });
    const paused = record({ phase: 'paused', exposed: ['80/tcp'], ports: [PUBLISHED[0]] });
    assert.deepEqual(portsView(paused.spec, paused.status), { '80/tcp': [{ HostIp: '0.0.0.0', HostPort: '8080' }] });
  });

  test('not running, or no network namespace of its own: {}', () => {
    for (const phase of ['created', 'exited', 'restarting', 'dead'] as const) {
      const r = record({ phase, exposed: EXPOSED, ports: phase === 'exited' ? undefined : PUBLISHED });
      assert.deepEqual(portsView(r.spec, r.status), {}, phase);
      assert.deepEqual((inspectView(r, { apiVersion: 1.47, graphDriverData: {} }) as { NetworkSettings: { Ports: unknown } }).NetworkSettings.Ports, {});
    }
    for (const mode of ['host', 'none', `container:${'cd'.repeat(32)}`]) {
      const r = record({ phase: 'running', exposed: EXPOSED, mode });
      assert.deepEqual(portsView(r.spec, r.status), {}, mode);
    }
  });
});

describe('summaryPorts (ps Ports)', () => {
  test('published with IP/PublicPort, unpublished with PrivatePort/Type only, sorted', () => {
    const r = record({ phase: 'running', ports: PUBLISHED, exposed: EXPOSED });
    const want = [
      { IP: '127.0.0.1', PrivatePort: 53, PublicPort: 32768, Type: 'udp' },
      { PrivatePort: 53, Type: 'tcp' },
      { IP: '0.0.0.0', PrivatePort: 80, PublicPort: 8080, Type: 'tcp' },
      { IP: '::', PrivatePort: 80, PublicPort: 8080, Type: 'tcp' },
      { PrivatePort: 443, Type: 'tcp' },
    ].sort((a, b) => a.PrivatePort - b.PrivatePort || (a.Type < b.Type ? -1 : a.Type > b.Type ? 1 : 0));
    const got = summaryPorts(r.spec, r.status);
    assert.deepEqual(got, want);
    assert.deepEqual(got.map((p) => `${p.PrivatePort}/${p.Type}`), ['53/tcp', '53/udp', '80/tcp', '80/tcp', '443/tcp']);
    assert.deepEqual(Object.keys(got[1]), ['IP', 'PrivatePort', 'PublicPort', 'Type']);
    assert.deepEqual((summaryView(r, { now: Date.now() }) as { Ports: unknown }).Ports, want);
  });

  test('stopped: []', () => {
    const r = record({ phase: 'exited', exposed: EXPOSED });
    assert.deepEqual(summaryPorts(r.spec, r.status), []);
    assert.deepEqual((summaryView(r, { now: Date.now() }) as { Ports: unknown }).Ports, []);
  });
});

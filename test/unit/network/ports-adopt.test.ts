// Live restore: an adopted container's published ports each get their userland proxy again — every
// one of them, not only the first (a container with two published ports answered on one after a kill -9).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import pino from 'pino';
import { PortPublisher } from '../../../reconcilers/network/ports.ts';
import type { PortAllocationSpec } from '../../../store/kinds/port-allocation.ts';

const spec = (hostPort: number, containerPort: number): PortAllocationSpec => ({
  containerId: 'c1', proto: 'tcp', hostIp: '127.0.0.1', hostPort, containerIp: '172.17.0.2', containerPort,
  bridge: 'engine0', chainPrefix: 'ENGINE', iptables: false, userlandProxy: true,
});

test('adopt starts a proxy for each of the container\'s ports', async () => {
  const allocations = [spec(18080, 80), spec(18443, 443)].map((s, i) => ({ name: `a${i}`, spec: s, status: {} }));
  const store = { list: () => allocations, get: () => undefined } as unknown as ConstructorParameters<typeof PortPublisher>[0];
  const started: number[] = [];
  const proxy = { start: async (s: { hostPort: number }) => (started.push(s.hostPort), { spec: s, close: async () => {} }) };
  const ports = new PortPublisher(store, {} as ConstructorParameters<typeof PortPublisher>[1], {
    log: pino({ level: 'silent' }), defaultIp: '0.0.0.0', userlandProxy: true, proxy, ephemeralRange: [49152, 60999],
  } as unknown as ConstructorParameters<typeof PortPublisher>[2]);
  const out = await ports.adopt('c1');
  assert.deepEqual(started.sort(), [18080, 18443]);
  assert.deepEqual(out.map((p) => p.hostPort).sort(), [18080, 18443]);
});

// deploy.placement constraints and resource reservations against this node.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { unmetPlacement, type NodeFacts } from '../../../lib/compose/placement.ts';
import { composeService } from '../../../lib/compose/schema.ts';

const node: NodeFacts = { id: 'n1', hostname: 'box', role: 'manager', os: 'linux', arch: 'x86_64', labels: { zone: 'earth' }, cpus: 2, memoryBytes: 24 * 1024 ** 3 };
const svc = (deploy: unknown) => composeService.parse({ image: 'b', deploy });

test('constraints: == and != on hostname, role, platform and labels; unknown keys and bad forms named', () => {
  assert.equal(unmetPlacement(svc({ placement: { constraints: ['node.hostname == box', 'node.role==manager', 'node.platform.os == linux', 'node.labels.zone == earth', 'engine.labels.zone != mars'] } }), node), undefined);
  assert.equal(unmetPlacement(svc({ placement: { constraints: ['node.labels.zone == mars'] } }), node), 'constraint "node.labels.zone == mars" is not met by this node (node.labels.zone is "earth")');
  assert.equal(unmetPlacement(svc({ placement: { constraints: ['node.hostname != box'] } }), node), 'constraint "node.hostname != box" is not met by this node (node.hostname is "box")');
  assert.equal(unmetPlacement(svc({ placement: { constraints: ['node.colour == red'] } }), node), 'constraint "node.colour == red": unknown key node.colour');
  assert.match(unmetPlacement(svc({ placement: { constraints: ['zone=earth'] } }), node)!, /^invalid constraint/);
});

test('reservations: more CPUs or memory than the node has', () => {
  assert.equal(unmetPlacement(svc({ resources: { reservations: { cpus: '1.5', memory: '1g' } } }), node), undefined);
  assert.equal(unmetPlacement(svc({ resources: { reservations: { cpus: 64 } } }), node), "reservation of 64 CPUs exceeds this node's 2");
  assert.match(unmetPlacement(svc({ resources: { reservations: { memory: '100g' } } }), node)!, /^reservation of \d+ bytes of memory exceeds this node's/);
});

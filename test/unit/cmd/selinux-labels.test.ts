// Where SELinux is active, a container create chooses the container's labels (issue (13 of 21), 3):
// a level no container in the store holds, the options the reference adds to its SecurityOpt
// (label=disable for --privileged, a joined container's label), and the labels reach the spec
// builder and inspect. This machine has no SELinux, so the choice is shown here, on the real store.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { containerLabels } from '../../../cmd/components/admission.ts';
import { McsAllocator, PRIV_MOUNT_LABEL } from '../../../drivers/oci/selinux.ts';
import { inspectView } from '../../../api/containers/views.ts';
import { Containers, type HostConfig } from '../../../store/kinds/container.ts';
import { STORE_KINDS } from '../../../store/kinds/index.ts';
import { openStore, type Store } from '../../../store/store.ts';
import { containerRecord } from '../container/fake-world.ts';

let dir: string;
let store: Store;
const OTHER = 'c'.repeat(64);
const TAKEN = 'system_u:system_r:container_t:s0:c1,c2';

before(() => {
  dir = mkdtempSync(join(tmpdir(), 'engine-selinux-labels-'));
  store = openStore(join(dir, 'engine.db'), { kinds: STORE_KINDS });
  const r = containerRecord(OTHER, { spec: { name: '/other' } });
  store.create(Containers, OTHER, { ...r.spec, labels: { processLabel: TAKEN, mountLabel: 'system_u:object_r:container_file_t:s0:c1,c2' } }, r.status);
});
after(() => {
  store.close();
  rmSync(dir, { recursive: true, force: true });
});

const hc = (h: Partial<HostConfig>) => ({ SecurityOpt: null, ...h }) as unknown as HostConfig;

test('a level held by a container in the store is never given again', () => {
  // Draws 1,2 (held by /other) first, then 3,4.
  const draws = [1, 2, 3, 4];
  const l = containerLabels(store, hc({}), () => new McsAllocator(() => draws.shift()!));
  assert.equal(l.labels!.processLabel, 'system_u:system_r:container_t:s0:c3,c4');
  assert.equal(l.labels!.mountLabel, 'system_u:object_r:container_file_t:s0:c3,c4');
  assert.deepEqual(l.securityOpt, []);
});

test('--privileged: label=disable is added; no process label, the shared mount label', () => {
  const l = containerLabels(store, hc({ Privileged: true }));
  assert.deepEqual(l.securityOpt, ['label=disable']);
  assert.equal(l.labels!.processLabel, '');
  assert.equal(l.labels!.mountLabel, PRIV_MOUNT_LABEL);
});

test('--security-opt label=… is honoured, and a joined IPC namespace takes its container\'s label', () => {
  const own = containerLabels(store, hc({ SecurityOpt: ['label=type:spc_t', 'label=level:s0:c7,c9'] } as Partial<HostConfig>));
  assert.equal(own.labels!.processLabel, 'system_u:system_r:spc_t:s0:c7,c9');
  const joined = containerLabels(store, hc({ IpcMode: `container:${OTHER}` } as Partial<HostConfig>));
  assert.deepEqual(joined.securityOpt, ['label=user:system_u', 'label=role:system_r', 'label=type:container_t', 'label=level:s0:c1,c2']);
  assert.equal(joined.labels!.processLabel, TAKEN);
});

test('inspect shows a container\'s labels', () => {
  const c = store.get(Containers, OTHER)!;
  const v = inspectView(c, { apiVersion: 1.48, graphDriverData: {} }) as { ProcessLabel: string; MountLabel: string };
  assert.equal(v.ProcessLabel, TAKEN);
  assert.equal(v.MountLabel, 'system_u:object_r:container_file_t:s0:c1,c2');
});

test('without SELinux: --privileged still gets label=disable in its SecurityOpt (as dockerd 20.10 shows), and no labels', () => {
  const l = containerLabels(store, hc({ Privileged: true }), undefined, false);
  assert.deepEqual(l, { securityOpt: ['label=disable'] });
  assert.deepEqual(containerLabels(store, hc({}), undefined, false), { securityOpt: [] });
});

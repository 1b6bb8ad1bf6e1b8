// The update step: a running task gets the HostConfig's limits once they differ from what it has;
// a failure is recorded (and cleared when the limits match again); a run without a record adopts them.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { applyResources } from '../../../reconcilers/container/resources-step.ts';
import type { ContainerSpec, HostConfig } from '../../../store/kinds/container.ts';
import { stagedFake } from './staged-fake.ts';


test('applies a changed limit once, records a refusal, adopts limits of an older run', async () => {
  const updates: object[] = [];
  let fail = false;
  const deps = {
    spec: { updateResources: (h: HostConfig) => ({ memory: { limit: (h as unknown as { Memory: number }).Memory } }) },
    supervisor: {
      updateTask: async (_id: string, r: object) => {
        if (fail) throw new Error('cannot set memory limit: device or resource busy');
        updates.push(r);
      },
      getTask: async () => ({ status: 'RUNNING' }),
    },
  } as unknown as Parameters<typeof applyResources>[2];
  const spec = (mem: number) => ({ hostConfig: { Memory: mem } }) as unknown as ContainerSpec;
  const st = stagedFake({ appliedResources: JSON.stringify({ memory: { limit: 1 } }) });

  await applyResources('c', spec(1), deps, st);
  assert.deepEqual(updates, [], 'unchanged: nothing to do');
  await applyResources('c', spec(2), deps, st);
  assert.deepEqual(updates, [{ memory: { limit: 2 } }]);
  assert.equal(st.cur.appliedResources, JSON.stringify({ memory: { limit: 2 } }));
  await applyResources('c', spec(2), deps, st);
  assert.equal(updates.length, 1, 'applied once');

  fail = true;
  await applyResources('c', spec(3), deps, st);
  assert.match(st.cur.updateError!, /device or resource busy/);
  assert.equal(st.cur.appliedResources, JSON.stringify({ memory: { limit: 2 } }));
  await applyResources('c', spec(2), deps, st);
  assert.equal(st.cur.updateError, '', 'the old limits put back: the error is cleared');

  const old = stagedFake({});
  await applyResources('c', spec(5), deps, old);
  assert.equal(old.cur.appliedResources, JSON.stringify({ memory: { limit: 5 } }));
  assert.equal(updates.length, 1);
});

test('a task that ended as it was updated: no error, the limits are the next run\'s', async () => {
  const deps = {
    spec: { updateResources: (h: HostConfig) => ({ memory: { limit: (h as unknown as { Memory: number }).Memory } }) },
    supervisor: {
      updateTask: async () => {
        throw new Error('cannot update a stopped container: unknown');
      },
      getTask: async () => ({ status: 'STOPPED' }),
    },
  } as unknown as Parameters<typeof applyResources>[2];
  const st = stagedFake({ appliedResources: JSON.stringify({ memory: { limit: 1 } }) });
  await applyResources('c', { hostConfig: { Memory: 64 } } as unknown as ContainerSpec, deps, st);
  assert.equal(st.cur.updateError ?? '', '');
  assert.equal(st.cur.appliedResources, JSON.stringify({ memory: { limit: 64 } }));
});

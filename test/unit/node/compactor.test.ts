// The leader's compaction of etcd's history: each interval compacts up to the revision seen one
// interval before, only while this node leads; a revision already compacted (by etcd itself or a
// former leader) is no error.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import pino from 'pino';
import { ClusterCompactor } from '../../../reconcilers/node/compactor.ts';

function fakeEtcd() {
  const state = { revision: 10, compacted: [] as string[], refuse: false };
  const client = {
    kv: {
      range: async () => ({ header: { revision: String(state.revision) } }),
      compact: async (req: { revision: string }) => {
        if (state.refuse) throw new Error('etcdserver: mvcc: required revision has been compacted');
        state.compacted.push(req.revision);
        return {};
      },
    },
  };
  return { state, client: client as never };
}

test('compacts up to the revision of the tick before, only while leading', async () => {
  const { state, client } = fakeEtcd();
  let leading = true;
  const c = new ClusterCompactor({ etcd: () => client, leading: () => leading, log: pino({ level: 'silent' }) });
  await c.tick();
  assert.deepEqual(state.compacted, [], 'the first tick only marks');
  state.revision = 25;
  await c.tick();
  assert.deepEqual(state.compacted, ['10']);
  leading = false;
  state.revision = 40;
  await c.tick();
  assert.deepEqual(state.compacted, ['10'], 'not leading: nothing, and the mark is dropped');
  leading = true;
  await c.tick();
  assert.deepEqual(state.compacted, ['10'], 'leading again starts with a new mark');
  state.refuse = true;
  await c.tick();
  state.refuse = false;
  state.revision = 50;
  await c.tick();
  assert.deepEqual(state.compacted, ['10', '40']);
});

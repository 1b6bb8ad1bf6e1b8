// POST /volumes/create bodies: checked as the reference's decoder checks a volume.VolumeCreateBody,
// a refused one writes nothing; a good one makes the volume.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { volumeRoutes } from '../../../api/volumes/routes.ts';
import { Volumes } from '../../../store/kinds/volume.ts';
import { routeHarness } from './route-harness.ts';

async function setup() {
  const h = await routeHarness((store) => [volumeRoutes({ store, usage: { size: async () => 0 } })], {
    // The volume reconciler's observable behaviour: a pending volume becomes ready.
    react(store, ev) {
      const r = ev.kind === Volumes.name ? store.get(Volumes, ev.name) : undefined;
      if (r && r.status.observedGeneration < r.generation) {
        store.updateStatus(Volumes, r.name, (s) => ({ ...s, phase: 'ready', mountpoint: `/v/${r.name}`, observedGeneration: r.generation }));
      }
    },
  });
  const post = (payload: string) => h.app.inject({ method: 'POST', url: '/volumes/create', headers: { 'content-type': 'application/json' }, payload });
  return { ...h, post };
}

test('a body of the wrong type is 400 with the decoder\'s message and no volume is made', async () => {
  const { store, post, close } = await setup();
  try {
    const refused: Array<[string, string]> = [
      ['{"Labels":{"a":1}}', 'json: cannot unmarshal number into Go struct field VolumeCreateBody.Labels of type string'],
      ['{"Labels":["a"]}', 'json: cannot unmarshal array into Go struct field VolumeCreateBody.Labels of type map[string]string'],
      ['{"DriverOpts":{"type":true}}', 'json: cannot unmarshal bool into Go struct field VolumeCreateBody.DriverOpts of type string'],
      ['{"name":5}', 'json: cannot unmarshal number into Go struct field VolumeCreateBody.Name of type string'],
      ['{"Driver":{}}', 'json: cannot unmarshal object into Go struct field VolumeCreateBody.Driver of type string'],
      ['{"ClusterVolumeSpec":"x"}', 'json: cannot unmarshal string into Go struct field VolumeCreateBody.ClusterVolumeSpec of type volume.ClusterVolumeSpec'],
      ['[]', 'json: cannot unmarshal array into Go value of type volume.VolumeCreateBody'],
      ['"vol"', 'json: cannot unmarshal string into Go value of type volume.VolumeCreateBody'],
      ['{"Name":"a/b"}', 'create a/b: "a/b" includes invalid characters for a local volume name, only "[a-zA-Z0-9][a-zA-Z0-9_.-]" are allowed. If you intended to pass a host directory, use absolute path'],
    ];
    for (const [payload, message] of refused) {
      const r = await post(payload);
      assert.equal(r.statusCode, 400, payload);
      assert.equal(r.json().message, message, payload);
    }
    assert.deepEqual(store.list(Volumes), []);
    const swarm = await post('{"ClusterVolumeSpec":{}}');
    assert.equal(swarm.statusCode, 503);
    assert.match(swarm.json().message, /not a swarm manager/);
  } finally {
    await close();
  }
});

test('good bodies still make volumes: keys in any case, nulls as absent, no body an anonymous volume', async () => {
  const { store, app, post, close } = await setup();
  try {
    const r = await post(JSON.stringify({ name: 'data', driver: 'local', labels: { team: 'a' }, DriverOpts: null, ClusterVolumeSpec: null }));
    assert.equal(r.statusCode, 201, r.body);
    assert.equal(r.json().Name, 'data');
    assert.deepEqual(r.json().Labels, { team: 'a' });
    assert.equal(r.json().Driver, 'local');
    const anon = await app.inject({ method: 'POST', url: '/volumes/create' });
    assert.equal(anon.statusCode, 201, anon.body);
    assert.equal(store.list(Volumes).length, 2);
  } finally {
    await close();
  }
});

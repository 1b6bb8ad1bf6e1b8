// The watch-fed prefix cache (issue 60, 5) against a real etcd: it lists a prefix and follows its
// puts and deletes; cut off from etcd while a key went and etcd compacted past where it had read,
// its resumed watch is canceled by etcd, and it lists and watches again: the key is gone from the
// map and later puts are followed.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Etcd3 } from 'etcd3';
import { PrefixCache } from '../../reconcilers/node/prefix-cache.ts';
import { startEtcd, type EtcdHandle } from './harness/etcd.ts';
import { exitWhenLingering } from './harness/processes.ts';
import { Relay } from './harness/relay.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const P = '/engine/test/cache/';

/** Watch back-off as membership's: doubling from 100 ms up to 2 s. */
function backoff(ms = 100): { duration: number; next(): ReturnType<typeof backoff> } {
  return { duration: ms, next: () => backoff(Math.min(2000, ms * 2)) };
}

async function until(what: string, ok: () => boolean, ms = 15_000): Promise<void> {
  for (const end = Date.now() + ms; !ok(); await sleep(50)) if (Date.now() > end) assert.fail(`timed out waiting until ${what}`);
}

describe('the prefix cache follows etcd', () => {
  let etcd: EtcdHandle;
  let raw: Etcd3;
  let relay: Relay;
  let client: Etcd3 | undefined;
  let cache: PrefixCache | undefined;

  before(async () => {
    etcd = await startEtcd();
    raw = new Etcd3({ hosts: etcd.endpoints });
    relay = new Relay(new URL(etcd.clientUrl));
    await relay.listen();
  });
  after(async () => {
    cache?.stop();
    client?.close();
    await relay?.close();
    raw?.close();
    await etcd?.stop();
    exitWhenLingering();
  });

  test('puts and deletes are followed; after a cut, a delete and a compaction, the map is rebuilt and follows again', async () => {
    // The client as membership makes it: watch and gRPC back-offs bounded, so it comes back soon.
    client = new Etcd3({
      hosts: [`http://127.0.0.1:${relay.port}`],
      dialTimeout: 2000,
      faultHandling: { watchBackoff: backoff() },
      grpcOptions: { 'grpc.initial_reconnect_backoff_ms': 100, 'grpc.max_reconnect_backoff_ms': 2000 },
    });
    await raw.put(`${P}a`).value('1');
    await raw.put('/engine/test/other').value('not ours');
    let changes = 0;
    const c = (cache = new PrefixCache(P, () => changes++));
    await c.start(client);
    await until('the cache is ready', () => c.ready);
    assert.deepEqual([...c.entries()], [[`${P}a`, '1']], 'listed: only the prefix');
    assert.ok(changes > 0, 'becoming ready is a change');

    await raw.put(`${P}b`).value('2');
    await raw.put(`${P}a`).value('1b');
    await raw.delete().key(`${P}a`);
    await until('b is seen and a gone', () => c.entries().get(`${P}b`) === '2' && !c.entries().has(`${P}a`));
    assert.deepEqual(c.values(), ['2']);

    relay.sever();
    await until('the cut is noticed', () => !c.ready);
    await raw.delete().key(`${P}b`);
    await raw.put(`${P}c`).value('3');
    for (let i = 0; i < 5; i++) await raw.put(`/engine/test/churn${i}`).value(String(i));
    const rev = (await raw.get('/engine/test/churn4').exec()).header.revision;
    await raw.kv.compact({ revision: rev, physical: true });
    await sleep(1500);
    relay.restore();

    await until('the cache is rebuilt: b gone, c there', () => c.ready && !c.entries().has(`${P}b`) && c.entries().get(`${P}c`) === '3', 30_000);
    const seen = changes;
    await raw.put(`${P}d`).value('4');
    await until('a put after the rebuild is followed', () => c.entries().get(`${P}d`) === '4');
    assert.ok(changes > seen, 'the put was told to onChange');
    assert.deepEqual([...c.entries().keys()].sort(), [`${P}c`, `${P}d`]);
  });
});

// The watch-fed prefix cache (reconcilers/node/prefix-cache.ts) against a fake etcd client: it
// lists, watches from the revision after the list, follows puts and deletes, is not ready while
// its watch is cut off, lists and watches again when etcd cancels the watch (and when the list
// failed), moves to a new client, and ignores a dropped watch's late events without canceling it
// (etcd3 counts a canceled stream against the host).
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { test } from 'node:test';
import { etcdPrefix, PrefixCache } from '../../../reconcilers/node/prefix-cache.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const P = '/engine/x/';

class FakeWatcher extends EventEmitter {
  canceled = false;
  id: string | null = null;
  readonly prefix: string;
  readonly from: string;
  constructor(prefix: string, from: string) {
    super();
    this.prefix = prefix;
    this.from = from;
  }
  cancel(): Promise<void> {
    this.canceled = true;
    return Promise.resolve();
  }
  /** etcd confirmed it (etcd3 sets the watch id, then emits). */
  connect(): void {
    this.id = '1';
    this.emit('connected', {});
  }
  put(key: string, value: string): void {
    this.emit('put', { key: Buffer.from(key), value: Buffer.from(value) });
  }
  del(key: string): void {
    this.emit('delete', { key: Buffer.from(key), value: Buffer.alloc(0) });
  }
}

function fakeEtcd(data: Record<string, string>) {
  const state = { revision: 7, lists: 0, failList: false, watchers: [] as FakeWatcher[] };
  const kvs = (p: string) => Object.entries(data).filter(([k]) => k.startsWith(p)).map(([k, v]) => ({ key: Buffer.from(k), value: Buffer.from(v) }));
  const client = {
    getAll: () => ({
      prefix: (p: string) => ({
        exec: async () => {
          state.lists++;
          if (state.failList) throw new Error('14 UNAVAILABLE');
          return { header: { revision: String(state.revision) }, kvs: kvs(p) };
        },
      }),
    }),
    namespace: () => ({
      watch: () => {
        const req = { prefix: '', from: '' };
        const b = {
          prefix: (p: string) => ((req.prefix = p), b),
          startRevision: (r: string) => ((req.from = r), b),
          watcher: () => {
            const w = new FakeWatcher(req.prefix, req.from);
            state.watchers.push(w);
            return w;
          },
        };
        return b;
      },
    }),
  };
  return { state, data, client: client as never, last: () => state.watchers.at(-1)! };
}

test('lists, watches from the next revision, follows puts and deletes, and tells onChange', async () => {
  const etcd = fakeEtcd({ [`${P}a`]: '1', '/engine/y/z': 'no' });
  let changes = 0;
  const c = new PrefixCache(P, () => changes++);
  await c.start(etcd.client);
  assert.equal(c.ready, false, 'not ready before etcd confirmed the watch');
  const w = etcd.last();
  assert.deepEqual([w.prefix, w.from], [P, '8']);
  w.connect();
  assert.equal(c.ready, true);
  assert.equal(changes, 1, 'ready is a change');
  assert.deepEqual([...c.entries()], [[`${P}a`, '1']]);
  w.put(`${P}b`, '2');
  w.put(`${P}a`, '1b');
  w.del(`${P}b`);
  assert.deepEqual(c.values(), ['1b']);
  assert.equal(changes, 4);
  await c.start(etcd.client);
  assert.equal(etcd.state.lists, 1, 'the same client: nothing again');
  c.stop();
  assert.equal(w.canceled, false, 'left to the client, closed by its owner');
  w.put(`${P}late`, 'x');
  assert.equal(c.entries().has(`${P}late`), false, 'a stopped cache drops late events');
  assert.equal(c.ready, false);
});

test('not ready while cut off; a watch etcd canceled is dropped and the map rebuilt from a new list', async () => {
  const etcd = fakeEtcd({ [`${P}a`]: '1', [`${P}b`]: '2' });
  const c = new PrefixCache(P, () => {});
  const told: string[][] = [];
  const seen: string[] = [];
  c.subscribe((keys) => told.push([...keys].sort()));
  const unsubscribe = etcdPrefix(c).subscribe((k) => seen.push(k));
  await c.start(etcd.client);
  const first = etcd.last();
  first.connect();
  assert.deepEqual(told.at(-1), [`${P}a`, `${P}b`], 'ready: every key held');
  first.emit('disconnected', new Error('stream ended'));
  assert.equal(c.ready, false, 'cut off: what it holds may be behind');
  first.connect();
  assert.equal(c.ready, true, 'resumed');

  delete etcd.data[`${P}b`];
  etcd.data[`${P}c`] = '3';
  etcd.state.revision = 20;
  first.emit('error', new Error('Watcher canceled: '));
  assert.equal(c.ready, false);
  for (let i = 0; i < 40 && etcd.state.watchers.length < 2; i++) await sleep(50);
  const second = etcd.last();
  assert.notEqual(second, first, 'watched again');
  assert.equal(first.canceled, false, 'a watch etcd ended is not canceled again');
  assert.equal(second.from, '21');
  second.connect();
  assert.deepEqual(Object.fromEntries(c.entries()), { [`${P}a`]: '1', [`${P}c`]: '3' });
  assert.deepEqual(told.at(-1), [`${P}a`, `${P}b`, `${P}c`], 'rebuilt: the keys held and the one the rebuild dropped (its delete was missed)');
  second.put(`${P}d`, '4');
  assert.deepEqual(told.at(-1), [`${P}d`]);
  assert.equal(seen.at(-1), `${P}d`, 'etcdPrefix: a source of the changed keys, one by one');
  unsubscribe();
  second.del(`${P}d`);
  assert.equal(seen.at(-1), `${P}d`);
  assert.deepEqual(told.at(-1), [`${P}d`]);
  first.put(`${P}stale`, 'x');
  assert.equal(c.entries().has(`${P}stale`), false, "the dropped watch's late events are ignored");
  c.stop();
});

test('a failed list is tried again; a new client is listed and watched, the old watch dropped', async () => {
  const one = fakeEtcd({ [`${P}a`]: '1' });
  one.state.failList = true;
  const c = new PrefixCache(P, () => {});
  await c.start(one.client);
  assert.equal(one.state.watchers.length, 0);
  one.state.failList = false;
  for (let i = 0; i < 40 && !one.state.watchers.length; i++) await sleep(50);
  one.last().connect();
  assert.equal(c.ready, true);

  const two = fakeEtcd({ [`${P}b`]: '2' });
  await c.start(two.client);
  assert.equal(c.ready, false);
  two.last().connect();
  assert.deepEqual(c.values(), ['2']);
  one.last().put(`${P}old`, 'x');
  assert.deepEqual(c.values(), ['2'], "the old client's watch is dropped");
  c.stop();
});

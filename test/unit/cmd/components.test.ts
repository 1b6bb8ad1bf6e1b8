import { test } from 'node:test';
import assert from 'node:assert/strict';
import { component, orderComponents, startComponents, type Component } from '../../../cmd/components.ts';

function recorder() {
  const seen: string[] = [];
  const warnings: Array<{ obj: object; msg: string }> = [];
  const log = { warn: (obj: object, msg: string) => warnings.push({ obj, msg }) };
  const make = (id: string, requires: string[] = [], opts: { failInit?: boolean; failClose?: boolean } = {}): Component<string> =>
    component({
      id,
      requires,
      init: () => {
        seen.push(`init ${id}`);
        if (opts.failInit) throw new Error(`${id} broke`);
        return `${id}-value`;
      },
      close: (value) => {
        seen.push(`close ${value}`);
        if (opts.failClose) throw new Error(`${id} close broke`);
      },
    });
  return { seen, warnings, log, make };
}

test('starts each component after what it requires, keeping list order otherwise', async () => {
  const { seen, log, make } = recorder();
  await startComponents([make('api', ['store', 'net']), make('store'), make('net', ['store']), make('other')], log);
  assert.deepEqual(seen, ['init store', 'init net', 'init api', 'init other']);
});

test('a list already in dependency order starts as written', () => {
  const { make } = recorder();
  const list = [make('a'), make('c'), make('b', ['a']), make('d', ['c', 'b'])];
  assert.deepEqual(orderComponents(list).map((c) => c.id), ['a', 'c', 'b', 'd']);
});

/** A registry: `get` is typed by the id. */
type NM = { n: number; m: number };

test('init sees the values of its requirements; close gets its own value', async () => {
  const { log } = recorder();
  const closed: number[] = [];
  const started = await startComponents(
    [
      component<number, NM>({ id: 'n', requires: [], init: () => 20 }),
      component<number, NM>({ id: 'm', requires: ['n'], init: (ctx) => ctx.get('n') + 1, close: (v) => void closed.push(v) }),
    ],
    log,
  );
  assert.equal(started.get('m'), 21);
  await started.close();
  assert.deepEqual(closed, [21]);
});

test('close runs in reverse start order and logs a failing close instead of throwing', async () => {
  const { seen, warnings, log, make } = recorder();
  const started = await startComponents([make('a'), make('b', ['a'], { failClose: true }), make('c', ['b'])], log);
  seen.length = 0;
  await started.close();
  assert.deepEqual(seen, ['close c-value', 'close b-value', 'close a-value']);
  assert.equal(warnings.length, 1);
  assert.deepEqual((warnings[0].obj as { component: string }).component, 'b');
  // Closing twice closes nothing twice.
  await started.close();
  assert.equal(seen.length, 3);
});

test('a failing init closes the started components in reverse and rethrows', async () => {
  const { seen, log, make } = recorder();
  await assert.rejects(startComponents([make('a'), make('b', ['a']), make('c', ['b'], { failInit: true }), make('d')], log), /c broke/);
  assert.deepEqual(seen, ['init a', 'init b', 'init c', 'close b-value', 'close a-value']);
});

test('an unknown requirement or a cycle is refused before anything starts', async () => {
  const { seen, log, make } = recorder();
  await assert.rejects(startComponents([make('a'), make('b', ['nope'])], log), /component b requires nope, which is not registered/);
  await assert.rejects(startComponents([make('a', ['c']), make('b', ['a']), make('c', ['b'])], log), /cycle: a -> c -> b -> a/);
  assert.throws(() => orderComponents([make('a'), make('a')]), /listed twice/);
  assert.deepEqual(seen, []);
});

test('asking for an id not in requires throws, even when that component exists', async () => {
  const { log, make } = recorder();
  await assert.rejects(
    startComponents([make('a'), component({ id: 'b', requires: [], init: (ctx) => ctx.get('a') })], log),
    /component b asked for a, which it does not require/,
  );
});

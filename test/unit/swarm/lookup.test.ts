// The lookup of a swarm object by reference (lib/swarm/lookup.ts) as dockerd's: full id, then exact
// name (each name in turn), then unique id prefix; none the caller's 404, several its ambiguity error.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { conflict, notFound } from '../../../lib/errors.ts';
import { lookup } from '../../../lib/swarm/lookup.ts';

interface Obj {
  id: string;
  name?: string;
  host?: string;
}

const A: Obj = { id: 'abc123', name: 'web', host: 'h1' };
const B: Obj = { id: 'abd456', name: 'abc123x', host: 'web' };
const C: Obj = { id: 'xyz789', name: 'abd456', host: 'h3' };
const ALL = [A, B, C];
const opts = { id: (x: Obj) => x.id, names: [(x: Obj) => x.name, (x: Obj) => x.host], notFound: (r: string) => notFound(`thing ${r} not found`) };

test('by full id, before any name', () => {
  assert.equal(lookup(ALL, 'abc123', opts), A);
  assert.equal(lookup(ALL, 'abd456', opts), B, "an id wins over another object's name");
});

test('by exact name, each name function in turn over all the objects', () => {
  assert.equal(lookup(ALL, 'web', opts), A, 'the first name before the second');
  assert.equal(lookup(ALL, 'h3', opts), C);
  assert.equal(lookup(ALL, 'abc123x', opts), B, 'a name before an id prefix');
  assert.equal(lookup(ALL, 'web', { ...opts, names: [(x: Obj) => x.host] }), B);
});

test('by unique id prefix', () => {
  assert.equal(lookup(ALL, 'x', opts), C);
  assert.equal(lookup(ALL, 'abc', opts), A);
  assert.equal(lookup(ALL, 'abd', opts), B);
});

test("nothing, or an ambiguous prefix: the caller's not-found error unless it gives an ambiguity one", () => {
  assert.throws(() => lookup(ALL, 'nope', opts), { name: 'EngineError(NotFound)', message: 'thing nope not found' });
  assert.throws(() => lookup(ALL, 'ab', opts), { message: 'thing ab not found' });
  const ambiguous = (r: string, n: number) => conflict(`thing ${r} is ambiguous (${n} matches found)`);
  assert.throws(() => lookup(ALL, 'ab', { ...opts, ambiguous }), { message: 'thing ab is ambiguous (2 matches found)' });
  assert.throws(() => lookup(ALL, 'nope', { ...opts, ambiguous }), { message: 'thing nope not found' });
  assert.throws(() => lookup([], 'abc', opts), { message: 'thing abc not found' });
});

test('without names: the id and its prefixes only', () => {
  const ids = { id: (x: Obj) => x.id, notFound: (r: string) => notFound(`task ${r} not found`) };
  assert.equal(lookup(ALL, 'xyz789', ids), C);
  assert.equal(lookup(ALL, 'xy', ids), C);
  assert.throws(() => lookup(ALL, 'web', ids), { message: 'task web not found' });
});

test('an empty ref is no prefix, unless emptyPrefix (then the one object, if there is one)', () => {
  assert.throws(() => lookup([A], '', opts), { message: 'thing  not found' });
  assert.equal(lookup([A], '', { ...opts, emptyPrefix: true }), A);
  assert.throws(() => lookup(ALL, '', { ...opts, emptyPrefix: true }), { message: 'thing  not found' });
  assert.equal(lookup([{ id: 'q1', name: '' }], '', opts).id, 'q1', 'an exact empty name still matches');
});

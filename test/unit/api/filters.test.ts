// The one `filters` reader of the API areas, its label matcher and the prune filters, held to the
// reference daemon's words (moby v20.10 api/types/filters and Go's encoding/json).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { matchAnyKV, matchKVList, parseFilters, pruneFilters, pruneMatches, untilFilter } from '../../../api/filters.ts';
import { goJsonSyntaxError } from '../../../lib/go-json-syntax.ts';
import { EngineError } from '../../../lib/errors.ts';

/** The 400 a call answers: its message. */
function refusal(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof EngineError, String(err));
    assert.equal(err.code, 'InvalidArgument');
    return err.message;
  }
  assert.fail('no error');
}

const entries = (raw: string | undefined) => Object.fromEntries(parseFilters(raw));

describe('parseFilters', () => {
  test('both encodings read the same', () => {
    assert.deepEqual(entries('{"label":{"a=b":true,"c":true},"name":{"x":true}}'), { label: ['a=b', 'c'], name: ['x'] });
    assert.deepEqual(entries('{"label":["a=b","c"],"name":["x"]}'), { label: ['a=b', 'c'], name: ['x'] });
  });

  test('empty, absent and null are no filters; a key with null has no values', () => {
    assert.equal(parseFilters('').size, 0);
    assert.equal(parseFilters(undefined).size, 0);
    assert.equal(parseFilters('null').size, 0);
    assert.deepEqual(entries('{"label":null}'), { label: [] });
  });

  test('a value given twice counts once; a false member of a set is still a value (Args.Get)', () => {
    assert.deepEqual(entries('{"name":["x","x"]}'), { name: ['x'] });
    assert.deepEqual(entries('{"name":{"x":false}}'), { name: ['x'] });
  });

  test('text that is not JSON: 400 in Go\'s words', () => {
    assert.equal(refusal(() => parseFilters('nope')), "invalid character 'o' in literal null (expecting 'u')");
    assert.equal(refusal(() => parseFilters('{"label":')), 'unexpected end of JSON input');
    assert.equal(refusal(() => parseFilters('{label:1}')), "invalid character 'l' looking for beginning of object key string");
    assert.equal(refusal(() => parseFilters('x', undefined, 'error reading volume filters: ')), "error reading volume filters: invalid character 'x' looking for beginning of value");
  });

  test('JSON of another shape: 400 with the first decode\'s type error', () => {
    assert.equal(refusal(() => parseFilters('["label"]')), 'json: cannot unmarshal array into Go value of type map[string]map[string]bool');
    assert.equal(refusal(() => parseFilters('{"label":"a"}')), 'json: cannot unmarshal string into Go value of type map[string]bool');
    assert.equal(refusal(() => parseFilters('{"label":{"a":"yes"}}')), 'json: cannot unmarshal string into Go value of type bool');
    assert.equal(refusal(() => parseFilters('{"label":[1]}')), 'json: cannot unmarshal array into Go value of type map[string]bool');
    // One object mixing both encodings is neither.
    assert.equal(refusal(() => parseFilters('{"a":{"x":true},"b":["y"]}')), 'json: cannot unmarshal array into Go value of type map[string]bool');
  });

  test('a key the endpoint does not know: 400 naming it', () => {
    const keys = new Set(['label']);
    assert.equal(refusal(() => parseFilters('{"color":["red"]}', keys)), "invalid filter 'color'");
    assert.deepEqual(Object.fromEntries(parseFilters('{"label":["a"]}', keys)), { label: ['a'] });
  });
});

describe('goJsonSyntaxError', () => {
  test('valid JSON has none; each scanner state has its words', () => {
    assert.equal(goJsonSyntaxError(' {"a":[1,-2.5e+3,"\\u00e9",true,null]} '), undefined);
    assert.equal(goJsonSyntaxError(''), 'unexpected end of JSON input');
    assert.equal(goJsonSyntaxError('{"a" 1}'), "invalid character '1' after object key");
    assert.equal(goJsonSyntaxError('{"a":1 2}'), "invalid character '2' after object key:value pair");
    assert.equal(goJsonSyntaxError('[1 2]'), "invalid character '2' after array element");
    assert.equal(goJsonSyntaxError('{} {}'), "invalid character '{' after top-level value");
    assert.equal(goJsonSyntaxError('"\\q"'), "invalid character 'q' in string escape code");
    assert.equal(goJsonSyntaxError('"a\nb"'), "invalid character '\\n' in string literal");
    assert.equal(goJsonSyntaxError('-x'), "invalid character 'x' in numeric literal");
    assert.equal(goJsonSyntaxError('1.x'), "invalid character 'x' after decimal point in numeric literal");
    assert.equal(goJsonSyntaxError("'a'"), "invalid character '\\'' looking for beginning of value");
  });
});

describe('matchKVList', () => {
  const labels = { a: 'b', c: '' };
  test('key matches presence, key=value the value; every one must hold', () => {
    assert.ok(matchKVList(['a'], labels));
    assert.ok(matchKVList(['a=b', 'c'], labels));
    assert.ok(matchKVList(['c='], labels));
    assert.ok(!matchKVList(['a=x'], labels));
    assert.ok(!matchKVList(['a', 'd'], labels));
  });

  test('no wanted labels match everything; wanted labels never match an object\'s inherited keys', () => {
    assert.ok(matchKVList(undefined, {}));
    assert.ok(matchKVList([], {}));
    assert.ok(!matchKVList(['a'], {}));
    assert.ok(!matchKVList(['constructor'], {}));
  });

  test('matchAnyKV: one holding is enough, none given is none', () => {
    assert.ok(matchAnyKV(['x', 'a=b'], labels));
    assert.ok(!matchAnyKV(['x', 'a=x'], labels));
    assert.ok(!matchAnyKV(undefined, labels));
  });
});

describe('prune filters', () => {
  const now = Date.parse('2024-01-02T00:00:00Z');

  test('until as a timestamp or a duration before now; one at most', () => {
    assert.equal(untilFilter(parseFilters('{"until":["2024-01-01T00:00:00Z"]}'), now), Date.parse('2024-01-01T00:00:00Z'));
    assert.equal(untilFilter(parseFilters('{"until":["1h"]}'), now), now - 3_600_000);
    assert.equal(untilFilter(parseFilters('{}'), now), undefined);
    assert.equal(refusal(() => untilFilter(parseFilters('{"until":["1h","2h"]}'), now)), 'more than one until filter specified');
  });

  test('only until, label and label! are taken', () => {
    assert.equal(refusal(() => pruneFilters(parseFilters('{"dangling":["true"]}'))), "invalid filter 'dangling'");
  });

  test('created before until, every label holds, no label! does', () => {
    const f = pruneFilters(parseFilters('{"until":["1h"],"label":["keep=no"],"label!":["pin","lock=1"]}'), now);
    const old = now - 7_200_000;
    assert.ok(pruneMatches(f, { keep: 'no' }, old));
    assert.ok(!pruneMatches(f, { keep: 'no' }, now), 'too new');
    assert.ok(!pruneMatches(f, { keep: 'yes' }, old), 'label value differs');
    assert.ok(!pruneMatches(f, { keep: 'no', pin: '' }, old), 'one label! holds');
    assert.ok(!pruneMatches(f, { keep: 'no', lock: '1' }, old), 'the other label! holds');
    assert.ok(pruneMatches(f, { keep: 'no', lock: '2' }, old));
    assert.ok(pruneMatches(pruneFilters(parseFilters('')), {}, now), 'no filters: everything');
  });
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  parseReference, normalizeName, familiarName, familiarRepository, repositoryName,
  isDigest, isFullImageId, isValidTag, withTag,
} from '../../../lib/reference.ts';
import { EngineError } from '../../../lib/errors.ts';

const HEX = 'a'.repeat(64);

test('parseReference normalises', () => {
  const cases: Array<[string, { domain: string; path: string; tag?: string; digest?: string }]> = [
    ['busybox', { domain: 'docker.io', path: 'library/busybox' }],
    ['busybox:1.36', { domain: 'docker.io', path: 'library/busybox', tag: '1.36' }],
    ['user/repo:tag', { domain: 'docker.io', path: 'user/repo', tag: 'tag' }],
    ['docker.io/busybox', { domain: 'docker.io', path: 'library/busybox' }],
    ['index.docker.io/busybox', { domain: 'docker.io', path: 'library/busybox' }],
    ['index.docker.io/library/busybox:x', { domain: 'docker.io', path: 'library/busybox', tag: 'x' }],
    ['localhost/foo', { domain: 'localhost', path: 'foo' }],
    ['localhost:5000/a/b:1', { domain: 'localhost:5000', path: 'a/b', tag: '1' }],
    ['quay.io/org/img', { domain: 'quay.io', path: 'org/img' }],
    ['[::1]:5000/x', { domain: '[::1]:5000', path: 'x' }],
    ['example.com/a/b/c:v1.0-rc_2', { domain: 'example.com', path: 'a/b/c', tag: 'v1.0-rc_2' }],
    [`busybox@sha256:${HEX}`, { domain: 'docker.io', path: 'library/busybox', digest: `sha256:${HEX}` }],
    [`busybox:1@sha256:${HEX}`, { domain: 'docker.io', path: 'library/busybox', tag: '1', digest: `sha256:${HEX}` }],
    ['a__b/c-d--e.f:g', { domain: 'docker.io', path: 'a__b/c-d--e.f', tag: 'g' }],
    ['Foo.io/bar', { domain: 'Foo.io', path: 'bar' }],
  ];
  for (const [input, want] of cases) assert.deepEqual(parseReference(input), want, input);
});

test('parseReference rejects bad input with the reference messages', () => {
  const cases: Array<[string, RegExp]> = [
    ['', /^invalid reference format$/],
    ['Busybox', /^invalid reference format: repository name must be lowercase$/],
    ['user/Repo:tag', /^invalid reference format: repository name must be lowercase$/],
    // As dockerd 20.10: an upper-case first component is a Hub user, not a registry host.
    ['UPPER/case', /^invalid reference format: repository name must be lowercase$/],
    ['UPPER/case:tag', /^invalid reference format: repository name must be lowercase$/],
    [HEX, /^invalid repository name \(a{64}\), cannot specify 64-byte hexadecimal strings$/],
    ['busybox:', /^invalid reference format$/],
    ['busybox:-x', /^invalid reference format$/],
    [`busybox:${'t'.repeat(129)}`, /^invalid reference format$/],
    ['a//b', /^invalid reference format$/],
    ['a/b/', /^invalid reference format$/],
    ['-a', /^invalid reference format$/],
    ['a_-b', /^invalid reference format$/],
    ['busybox@sha256:abc', /^invalid reference format$/],
    [`busybox@sha256:${'a'.repeat(65)}`, /^invalid checksum digest length$/],
    [`busybox@md5:${'a'.repeat(32)}`, /^unsupported digest algorithm$/],
    [`x/${'a'.repeat(260)}`, /must not be more than 255 characters/],
    ['has space', /^invalid reference format$/],
  ];
  for (const [input, re] of cases) {
    assert.throws(() => parseReference(input), (e: unknown) => {
      assert.ok(e instanceof EngineError, input);
      assert.equal(e.code, 'InvalidArgument');
      assert.match(e.message, re, input);
      return true;
    });
  }
});

test('normalizeName and familiar forms', () => {
  assert.equal(normalizeName('busybox'), 'docker.io/library/busybox:latest');
  assert.equal(normalizeName('busybox', false), 'docker.io/library/busybox');
  assert.equal(normalizeName(`busybox@sha256:${HEX}`), `docker.io/library/busybox@sha256:${HEX}`);
  assert.equal(normalizeName('localhost:5000/a/b:1'), 'localhost:5000/a/b:1');
  assert.equal(repositoryName(parseReference('user/repo:tag')), 'docker.io/user/repo');

  const fam: Array<[string, string]> = [
    ['docker.io/library/busybox:latest', 'busybox:latest'],
    ['docker.io/user/repo:tag', 'user/repo:tag'],
    ['docker.io/library/a/b:1', 'library/a/b:1'],
    ['localhost:5000/a/b:1', 'localhost:5000/a/b:1'],
    ['busybox', 'busybox'],
    [`docker.io/library/busybox@sha256:${HEX}`, `busybox@sha256:${HEX}`],
  ];
  for (const [input, want] of fam) assert.equal(familiarName(input), want, input);
  assert.equal(familiarRepository('docker.io/library/busybox:latest'), 'busybox');
  assert.equal(familiarRepository('quay.io/x/y:z'), 'quay.io/x/y');
});

test('small predicates', () => {
  assert.ok(isDigest(`sha256:${HEX}`));
  assert.ok(!isDigest(`sha256:${HEX.slice(1)}`));
  assert.ok(!isDigest('busybox'));
  assert.ok(isFullImageId(`sha256:${HEX}`));
  assert.ok(isFullImageId(HEX));
  assert.ok(!isFullImageId(HEX.slice(2)));
  assert.ok(!isFullImageId(`sha256:${HEX.toUpperCase()}`));
  assert.ok(isValidTag('latest'));
  assert.ok(isValidTag('_x.y-z'));
  assert.ok(!isValidTag('.x'));
  assert.ok(!isValidTag('t'.repeat(129)));
  assert.deepEqual(withTag(parseReference(`a@sha256:${HEX}`), 'v2'), { domain: 'docker.io', path: 'library/a', tag: 'v2' });
  assert.throws(() => withTag(parseReference('a'), 'bad tag'), /invalid tag format/);
});

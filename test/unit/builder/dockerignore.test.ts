import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cleanPath, IgnoreMatcher, parseDockerignore } from '../../../drivers/builder/dockerignore.ts';
import { isCode } from '../../../lib/errors.ts';

const m = (...patterns: string[]) => new IgnoreMatcher(patterns);

test('cleanPath is Go path.Clean', () => {
  const cases: Array<[string, string]> = [
    ['', '.'], ['.', '.'], ['./a/', 'a'], ['a//b/./c/', 'a/b/c'], ['a/../b', 'b'], ['a/../..', '..'],
    ['../../x', '../../x'], ['/../x', '/x'], ['/', '/'], ['/a/b/..', '/a'],
  ];
  for (const [i, want] of cases) assert.equal(cleanPath(i), want, i);
});

test('parseDockerignore: comments, trimming, exceptions, cleaning, leading slash, BOM, CRLF', () => {
  const text = '\uFEFF# comment\r\n\r\n  node_modules  \n!  keep.txt\n./a/../b/\n/abs/path\n #not a comment\n/\n!/x/./y\n\n';
  assert.deepEqual(parseDockerignore(text), ['node_modules', '!keep.txt', 'b', 'abs/path', '#not a comment', '/', '!x/y']);
  assert.deepEqual(parseDockerignore(''), []);
  // A lone `!` is kept for the matcher to refuse, as the reference does.
  assert.deepEqual(parseDockerignore('!\n'), ['!']);
});

test('single `*` and `?` do not cross a slash; classes and escapes as Go filepath.Match', () => {
  assert.ok(m('*.txt').matches('a.txt'));
  assert.ok(!m('*.txt').matches('dir/a.txt'));
  assert.ok(m('*/*.txt').matches('dir/a.txt'));
  assert.ok(m('a?c').matches('abc'));
  assert.ok(!m('a?c').matches('a/c'));
  assert.ok(m('[a-c]x').matches('bx'));
  assert.ok(!m('[a-c]x').matches('dx'));
  assert.ok(m('[^a-c]x').matches('dx'));
  assert.ok(!m('[^a-c]x').matches('ax'));
  assert.ok(m('[\\]]').matches(']'));
  assert.ok(m('\\*').matches('*'));
  assert.ok(!m('\\*').matches('a'));
  // Regex metacharacters are literals.
  assert.ok(m('a.b+(c)|{d}$^').matches('a.b+(c)|{d}$^'));
  assert.ok(!m('a.b').matches('axb'));
  // A reversed range matches nothing (Go does not call it malformed).
  assert.ok(!m('[z-a]').matches('m'));
});

test('`**` matches any number of directories', () => {
  const p = m('**/*.log');
  for (const f of ['a.log', 'x/a.log', 'x/y/z/a.log']) assert.ok(p.matches(f), f);
  assert.ok(!p.matches('a.txt'));
  const mid = m('a/**/b');
  for (const f of ['a/b', 'a/x/b', 'a/x/y/b', 'a/x/y/b/c']) assert.ok(mid.matches(f), f);
  assert.ok(!mid.matches('a/xb'));
  assert.ok(!mid.matches('c/a/b'));
  const tail = m('foo/**');
  assert.ok(tail.matches('foo/x'));
  assert.ok(tail.matches('foo/x/y'));
  assert.ok(!tail.matches('foo'));
  assert.ok(m('**').matches('anything/at/all'));
  assert.ok(m('**/node_modules').matches('a/b/node_modules/c/d.js'));
});

test('a pattern that matches a parent directory matches everything below it', () => {
  const p = m('build');
  assert.ok(p.matches('build'));
  assert.ok(p.matches('build/a/b.o'));
  assert.ok(!p.matches('builder'));
  assert.ok(!p.matches('src/build'));
  assert.ok(m('src/*').matches('src/x/y'));
  assert.ok(m('./build/').matches('./build/x'));
});

test('later patterns override earlier ones; `!` re-includes', () => {
  assert.ok(!m('*.md', '!README.md').matches('README.md'));
  assert.ok(m('*.md', '!README.md').matches('CHANGES.md'));
  assert.ok(m('*.md', '!README.md', 'README*').matches('README.md'));
  const dir = m('build', '!build/keep.txt');
  assert.ok(dir.matches('build'));
  assert.ok(dir.matches('build/out.bin'));
  assert.ok(!dir.matches('build/keep.txt'));
  // An exception alone matches nothing.
  assert.ok(!m('!a').matches('a'));
  assert.ok(!m().matches('a'));
  assert.ok(m().empty);
});

test('malformed patterns are InvalidArgument', () => {
  for (const bad of ['!', '[', '[]', '[a', 'a\\', '[a-]', '[-a]']) {
    assert.throws(() => m(bad), (err: Error) => isCode(err, 'InvalidArgument'), bad);
  }
  assert.throws(() => m('!'), /illegal exclusion pattern: "!"/);
});

test('canReincludeUnder: only when an exception could name something below the directory', () => {
  assert.ok(!m('build').canReincludeUnder('build'));
  assert.ok(m('build', '!build/keep.txt').canReincludeUnder('build'));
  assert.ok(!m('build', '!other/keep.txt').canReincludeUnder('build'));
  assert.ok(m('build', '!b*/keep.txt').canReincludeUnder('build'));
  assert.ok(m('build', '!**/keep.txt').canReincludeUnder('build'));
  assert.ok(m('a', '!a/b/c').canReincludeUnder('a/b'));
  assert.ok(!m('a', '!a/x/c').canReincludeUnder('a/b'));
});

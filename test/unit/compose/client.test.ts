// Compose's client-side work as bin/engine does it before PUT /stacks/{name}: interpolation and
// .env, env_file, configs and secrets files, relative binds, the project name.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { ComposeClientError, interpolate, interpolateTree, loadProject, normalizeProjectName, parseDotEnv, projectName } from '../../../lib/compose/client.ts';
import { composeApp } from '../../../lib/compose/schema.ts';

const env = (vars: Record<string, string>) => (k: string) => vars[k];

describe('interpolation', () => {
  const look = env({ A: 'alpha', EMPTY: '', N: '3' });
  const i = (s: string) => interpolate(s, look, 'x');

  test('$VAR, ${VAR} and $$', () => {
    assert.equal(i('$A ${A}-$N'), 'alpha alpha-3');
    assert.equal(i('a$$b $${A} $$$A'), 'a$b ${A} $alpha');
    assert.equal(i('no dollars'), 'no dollars');
    assert.equal(i('$A_B'), '', 'the longest name is taken');
  });

  test('an unset variable is empty, with a warning', () => {
    const warnings: string[] = [];
    assert.equal(interpolate('[${NOPE}$NOPE2]', look, 'x', (m) => warnings.push(m)), '[]');
    assert.deepEqual(warnings, ['The "NOPE" variable is not set. Defaulting to a blank string.', 'The "NOPE2" variable is not set. Defaulting to a blank string.']);
  });

  test('defaults: :- when unset or empty, - when unset; nested', () => {
    assert.equal(i('${A:-d}'), 'alpha');
    assert.equal(i('${EMPTY:-d}'), 'd');
    assert.equal(i('${EMPTY-d}'), '');
    assert.equal(i('${UNSET-d}'), 'd');
    assert.equal(i('${UNSET:-d}'), 'd');
    assert.equal(i('${UNSET:-}'), '');
    assert.equal(i('${UNSET:-${A}-x}'), 'alpha-x');
    assert.equal(i('${UNSET:-${ALSO:-deep}}'), 'deep');
    assert.equal(i('${UNSET:-a:b/c}'), 'a:b/c');
  });

  test('required: :? when unset or empty, ? when unset, with the message', () => {
    assert.equal(i('${A:?need A}'), 'alpha');
    assert.equal(i('${EMPTY?need}'), '');
    assert.throws(() => i('${EMPTY:?set EMPTY please}'), (e: Error) => e instanceof ComposeClientError && e.message === 'required variable EMPTY is missing a value: set EMPTY please');
    assert.throws(() => i('${UNSET?}'), /^ComposeClientError: required variable UNSET is missing a value$/);
    assert.throws(() => i('${UNSET:?}'), /required variable UNSET is missing a value/);
  });

  test('alternates: :+ and +', () => {
    assert.equal(i('${A:+yes}'), 'yes');
    assert.equal(i('${EMPTY:+yes}'), '');
    assert.equal(i('${EMPTY+yes}'), 'yes');
    assert.equal(i('${UNSET+yes}'), '');
  });

  test('a bad template is an error naming the value', () => {
    for (const bad of ['${A', '${}', '${1A}', '$1', 'cost: 5$', '${A!x}', 'x $ y']) {
      assert.throws(() => interpolate(bad, look, 'services.web.image'), /invalid interpolation format for services\.web\.image/, bad);
    }
  });

  test('the tree: string values are interpolated, keys and other types are not', () => {
    const out = interpolateTree({ services: { $A: { image: '${A}', command: ['echo', '$N'], init: true, deploy: { replicas: 2 } } } }, look);
    assert.deepEqual(out, { services: { $A: { image: 'alpha', command: ['echo', '3'], init: true, deploy: { replicas: 2 } } } });
    assert.throws(() => interpolateTree({ services: { web: { command: ['x', '${B:?no B}'] } } }, look), /required variable B is missing a value: no B/);
    assert.throws(() => interpolateTree({ services: { web: { command: ['x', '${B'] } } }, look), /services\.web\.command\[1\]/);
  });
});

test('.env files: comments, export, quotes, inline comments, KEY alone', () => {
  const parsed = parseDotEnv([
    '# a comment',
    '',
    'PLAIN=value # trailing comment',
    'export EXPORTED=1',
    'SINGLE=\'$literal # kept\'',
    'DOUBLE="a\\nb \\"q\\""',
    'MULTI="one',
    'two"',
    'EQUALS=a=b',
    'EMPTY=',
    'BARE',
    '  SPACED = x  ',
  ].join('\n'));
  assert.deepEqual(parsed, {
    PLAIN: 'value',
    EXPORTED: '1',
    SINGLE: '$literal # kept',
    DOUBLE: 'a\nb "q"',
    MULTI: 'one\ntwo',
    EQUALS: 'a=b',
    EMPTY: '',
    BARE: undefined,
    SPACED: 'x',
  });
  assert.throws(() => parseDotEnv('A="open', 'f'), /unterminated quoted value for A/);
});

describe('project name', () => {
  test('normalised from a directory as Compose does', () => {
    assert.equal(normalizeProjectName('My App.v2'), 'myappv2');
    assert.equal(normalizeProjectName('__-Shop_1-'), 'shop_1-');
    assert.equal(normalizeProjectName('Ünïcode'), 'ncode');
  });
  test('-p, else COMPOSE_PROJECT_NAME, else name:, else the directory', () => {
    assert.equal(projectName({ explicit: 'cli', env: { COMPOSE_PROJECT_NAME: 'env' }, documentName: 'doc', file: '/srv/My-Dir/compose.yaml' }), 'cli');
    assert.equal(projectName({ env: { COMPOSE_PROJECT_NAME: 'env' }, documentName: 'doc', file: '/srv/My-Dir/compose.yaml' }), 'env');
    assert.equal(projectName({ env: {}, documentName: 'doc', file: '/srv/My-Dir/compose.yaml' }), 'doc');
    assert.equal(projectName({ env: {}, file: '/srv/.My-Dir/compose.yaml' }), 'my-dir');
    assert.throws(() => projectName({ env: {}, file: '/srv/___/compose.yaml' }), /project name must not be empty/);
  });
});

describe('loadProject', () => {
  const root = mkdtempSync(join(tmpdir(), 'engine-client-test-'));
  after(() => rmSync(root, { recursive: true, force: true }));
  let n = 0;
  const project = (files: Record<string, string>, dirName = `Proj${++n}`): string => {
    const dir = join(root, dirName);
    for (const [name, text] of Object.entries(files)) {
      mkdirSync(join(dir, name, '..'), { recursive: true });
      writeFileSync(join(dir, name), text);
    }
    return dir;
  };

  test('the process environment wins over .env; .env fills the rest; the name from the directory', () => {
    const dir = project({
      '.env': 'IMAGE=from-dotenv\nTAG=1.0\n# comment\nONLY_FILE="quoted value"\n',
      'compose.yaml': 'services:\n  web:\n    image: ${IMAGE}:${TAG}\n    environment:\n      A: $ONLY_FILE\n      B: ${MISSING:-dflt}\n',
    }, 'My_Project');
    const p = loadProject({ file: join(dir, 'compose.yaml'), env: { TAG: '2.0' } });
    assert.equal(p.name, 'my_project');
    assert.equal(p.document.name, 'my_project', 'the name sent matches the stack');
    assert.deepEqual(p.document.services, { web: { image: 'from-dotenv:2.0', environment: { A: 'quoted value', B: 'dflt' } } });
    assert.equal(composeApp.safeParse(p.document).success, true);
  });

  test('--env-file replaces .env and must exist; a required variable missing is an error', () => {
    const dir = project({ '.env': 'X=dotenv\n', 'other.env': 'X=other\n', 'compose.yaml': 'services:\n  a:\n    image: ${X:?X is required}\n' });
    assert.equal((loadProject({ file: join(dir, 'compose.yaml'), env: {}, envFile: join(dir, 'other.env') }).document.services as any).a.image, 'other'); // eslint-disable-line @typescript-eslint/no-explicit-any
    assert.throws(() => loadProject({ file: join(dir, 'compose.yaml'), env: {}, envFile: join(dir, 'none.env') }), /none\.env/);
    const bare = project({ 'compose.yaml': 'services:\n  a:\n    image: ${X:?X is required}\n' });
    assert.throws(() => loadProject({ file: join(bare, 'compose.yaml'), env: {} }), /required variable X is missing a value: X is required/);
  });

  test('-p and name: (interpolated) set the project name', () => {
    const dir = project({ 'compose.yaml': 'name: ${NAME:-docname}\nservices:\n  a:\n    image: busybox\n' });
    assert.equal(loadProject({ file: join(dir, 'compose.yaml'), env: {} }).name, 'docname');
    assert.equal(loadProject({ file: join(dir, 'compose.yaml'), env: { NAME: 'fromenv' } }).name, 'fromenv');
    const p = loadProject({ file: join(dir, 'compose.yaml'), env: {}, projectName: 'cli' });
    assert.equal(p.name, 'cli');
    assert.equal(p.document.name, 'cli');
  });

  test('env_file (string or list, relative to the file) merged into environment, environment winning; the key removed', () => {
    const dir = project({
      'conf/app.env': 'FROM_FILE=1\nSHARED=file\nLATER=first\nPASS\n',
      'conf/more.env': 'LATER=second\n',
      'compose.yaml': [
        'services:',
        '  list:',
        '    image: busybox',
        '    env_file: [conf/app.env, ./conf/more.env]',
        '    environment: [SHARED=env, ONLY_ENV=2, FROM_SHELL, NOT_SET]',
        '  str:',
        '    image: busybox',
        '    env_file: conf/more.env',
        '  optional:',
        '    image: busybox',
        '    env_file: [{ path: conf/none.env, required: false }, conf/more.env]',
      ].join('\n'),
    });
    const p = loadProject({ file: join(dir, 'compose.yaml'), env: { PASS: 'through', FROM_SHELL: 'shell' } });
    const s = p.document.services as Record<string, Record<string, unknown>>;
    assert.deepEqual(s.list, { image: 'busybox', environment: { FROM_FILE: '1', SHARED: 'env', LATER: 'second', PASS: 'through', ONLY_ENV: '2', FROM_SHELL: 'shell' } });
    assert.deepEqual(s.str, { image: 'busybox', environment: { LATER: 'second' } });
    assert.deepEqual(s.optional, { image: 'busybox', environment: { LATER: 'second' } });
    assert.equal(composeApp.safeParse(p.document).success, true);
    const missing = project({ 'compose.yaml': 'services:\n  a:\n    image: busybox\n    env_file: nope.env\n' });
    assert.throws(() => loadProject({ file: join(missing, 'compose.yaml'), env: {} }), (e: Error) => e instanceof ComposeClientError && e.message === `env file ${join(missing, 'nope.env')} not found`);
  });

  test('configs and secrets: file read into content (relative to the file), environment from the variable, content kept', () => {
    const dir = project({
      'files/site.conf': 'server { listen 80; }\n',
      '.env': 'TOKEN=from-dotenv\n',
      'compose.yaml': [
        'services:',
        '  web:',
        '    image: busybox',
        '    configs: [site, inline]',
        '    secrets: [token, key]',
        'configs:',
        '  site:',
        '    file: ./files/site.conf',
        '  inline:',
        '    content: "hello ${WHO:-world}"',
        'secrets:',
        '  token:',
        '    environment: TOKEN',
        '  key:',
        '    file: files/site.conf',
      ].join('\n'),
    });
    const p = loadProject({ file: join(dir, 'compose.yaml'), env: {} });
    assert.deepEqual(p.document.configs, { site: { content: 'server { listen 80; }\n' }, inline: { content: 'hello world' } });
    assert.deepEqual(p.document.secrets, { token: { content: 'from-dotenv' }, key: { content: 'server { listen 80; }\n' } });
    assert.equal(composeApp.safeParse(p.document).success, true);
    const missing = project({ 'compose.yaml': 'services:\n  a:\n    image: busybox\nconfigs:\n  c:\n    file: ./gone.txt\nsecrets:\n  s:\n    environment: NOPE\n' });
    assert.throws(() => loadProject({ file: join(missing, 'compose.yaml'), env: {} }), /config c: file .*gone\.txt not found/);
  });

  test('relative bind sources made absolute against the file\'s directory; named volumes and absolute paths left', () => {
    const dir = project({
      'sub/compose.yaml': [
        'services:',
        '  web:',
        '    image: busybox',
        '    volumes:',
        '      - ./data:/data',
        '      - ../up:/up:ro',
        '      - .:/here',
        '      - ~/cache:/cache',
        '      - /abs:/abs',
        '      - named:/named',
        '      - /anon',
        '      - { type: bind, source: ./long, target: /long, read_only: true }',
        '      - { type: bind, source: rel, target: /rel }',
        '      - { type: volume, source: named, target: /n2 }',
        'volumes:',
        '  named: {}',
      ].join('\n'),
    });
    const p = loadProject({ file: join(dir, 'sub/compose.yaml'), env: {}, home: '/home/me' });
    assert.deepEqual((p.document.services as any).web.volumes, [ // eslint-disable-line @typescript-eslint/no-explicit-any
      `${dir}/sub/data:/data`,
      `${dir}/up:/up:ro`,
      `${dir}/sub:/here`,
      '/home/me/cache:/cache',
      '/abs:/abs',
      'named:/named',
      '/anon',
      { type: 'bind', source: `${dir}/sub/long`, target: '/long', read_only: true },
      { type: 'bind', source: `${dir}/sub/rel`, target: '/rel' },
      { type: 'volume', source: 'named', target: '/n2' },
    ]);
    assert.equal(composeApp.safeParse(p.document).success, true);
  });

  test('x- extension fields and YAML merge keys are resolved client-side', () => {
    const dir = project({
      'compose.yaml': 'x-common: &common\n  image: busybox\n  init: true\nservices:\n  a:\n    <<: *common\n    x-note: ignored\n    command: ["true"]\n',
    });
    const p = loadProject({ file: join(dir, 'compose.yaml'), env: {} });
    assert.deepEqual(p.document, { services: { a: { image: 'busybox', init: true, command: ['true'] } }, name: `proj${n}` });
    assert.equal(composeApp.safeParse(p.document).success, true);
  });

  test('a missing compose file or bad YAML is an error', () => {
    assert.throws(() => loadProject({ file: join(root, 'nope/compose.yaml'), env: {} }), /compose file .* not found/);
    const dir = project({ 'compose.yaml': 'services: [\n' });
    assert.throws(() => loadProject({ file: join(dir, 'compose.yaml'), env: {} }), /invalid YAML/);
  });
});

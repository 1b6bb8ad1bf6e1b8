// Log drivers, issue 42 (remaining items), end to end with the docker CLI: json-file's labels,
// labels-regex, env, env-regex and tag options written as "attrs" in each JSON line and shown by
// `docker logs --details`; the local driver refusing those options as the reference's; and
// mode=non-blocking with max-buffer-size on json-file and local.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import type { DaemonHandle } from './harness/daemon.ts';
import { docker, dockerOk, type TestImages } from './harness/clients.ts';
import { removeAllAndCleanup, startWithImages } from './harness/setup.ts';

const lines = (s: string) => s.split('\n').filter(Boolean);

describe('log drivers: json-file attrs, --details, non-blocking file drivers', () => {
  let d: DaemonHandle;
  let imgs: TestImages;
  const dk = dockerOk(() => d);

  before(async () => {
    ({ d, imgs } = await startWithImages());
  });
  after(async () => {
    await removeAllAndCleanup(d);
  });

  test('json-file: labels/env/tag options become "attrs"; docker logs --details shows them query-escaped', async () => {
    await dk(
      'run', '--network', 'none', '--name', 'attrs',
      '--label', 'team=core team', '--label', 'com.example.tier=front&back', '--label', 'other=x',
      '-e', 'APP_MODE=prod', '-e', 'SECRET=s',
      '--log-opt', 'labels=team', '--log-opt', 'labels-regex=^com\\.', '--log-opt', 'env-regex=^APP_', '--log-opt', 'tag={{.Name}}',
      imgs.tag, 'sh', '-c', 'echo one; echo two >&2',
    );
    const logPath = await dk('inspect', '-f', '{{.LogPath}}', 'attrs');
    const recs = lines(readFileSync(logPath, 'utf8'));
    assert.equal(recs.length, 2);
    for (const r of recs) {
      assert.match(r, /^\{"log":"(one|two)\\n","stream":"std(out|err)","attrs":\{"APP_MODE":"prod","com\.example\.tier":"front\\u0026back","tag":"attrs","team":"core team"\},"time":"[^"]+"\}$/);
    }
    const det = await docker(d, ['logs', '--details', 'attrs']);
    assert.equal(det.code, 0, det.stderr);
    const prefix = 'APP_MODE=prod,com.example.tier=front%26back,tag=attrs,team=core+team ';
    assert.deepEqual(lines(det.stdout), [`${prefix}one`]);
    assert.deepEqual(lines(det.stderr), [`${prefix}two`]);
    // Without --details, the lines as they were.
    assert.deepEqual(lines(await dk('logs', 'attrs')), ['one']);
    // No attributes: --details adds a lone space.
    await dk('run', '--network', 'none', '--name', 'plain', imgs.tag, 'echo', 'bare');
    assert.equal((await docker(d, ['logs', '--details', 'plain'])).stdout, ' bare\n');
    assert.doesNotMatch(readFileSync(await dk('inspect', '-f', '{{.LogPath}}', 'plain'), 'utf8'), /attrs/);
  });

  test('local refuses labels, env and tag as the reference; json-file takes them', async () => {
    for (const opt of ['labels=a', 'env=A', 'tag=x', 'labels-regex=.', 'env-regex=.']) {
      const r = await docker(d, ['create', '--log-driver', 'local', '--log-opt', opt, imgs.tag, 'true']);
      assert.notEqual(r.code, 0);
      assert.match(r.stderr, new RegExp(`unknown log opt '${opt.split('=')[0]}' for log driver local`));
    }
    const ok = await docker(d, ['create', '--log-opt', 'tag={{.ID}}', '--log-opt', 'env-regex=.', imgs.tag, 'true']);
    assert.equal(ok.code, 0, ok.stderr);
  });

  for (const driver of ['json-file', 'local']) {
    test(`${driver}: mode=non-blocking with max-buffer-size; every line kept when the writer keeps up`, async () => {
      const name = `nb-${driver}`;
      await dk('run', '--network', 'none', '--name', name, '--log-driver', driver, '--log-opt', 'mode=non-blocking', '--log-opt', 'max-buffer-size=4m',
        imgs.tag, 'sh', '-c', 'i=1; while [ $i -le 300 ]; do echo "nb-$i"; i=$((i+1)); done; printf last');
      const out = lines(await dk('logs', name));
      assert.equal(out.length, 301);
      assert.equal(out[0], 'nb-1');
      assert.equal(out[299], 'nb-300');
      assert.equal(out[300], 'last');
      assert.equal(await dk('inspect', '-f', '{{index .HostConfig.LogConfig.Config "mode"}}', name), 'non-blocking');
    });
  }

  test('max-buffer-size needs mode=non-blocking', async () => {
    const r = await docker(d, ['create', '--log-driver', 'local', '--log-opt', 'max-buffer-size=1m', imgs.tag, 'true']);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /max-buffer-size option is only supported with 'mode=non-blocking'/);
  });

  test('json-file: a bad labels-regex fails the start', async () => {
    const r = await docker(d, ['run', '--network', 'none', '--log-opt', 'labels-regex=(', imgs.tag, 'true']);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /failed to initialize logging driver: error parsing regexp/);
  });
});

// Log drivers, issue 42 (remaining items), end to end with the docker CLI: json-file's labels,
// labels-regex, env, env-regex and tag options written as "attrs" in each JSON line and shown by
// `docker logs --details`; the local driver refusing those options as the reference's; and
// mode=non-blocking with max-buffer-size on json-file and local; `docker logs -f` across ~230
// json-file rotations (max-size=1k, max-file=1000: all kept, so no assert leans on timing) prints
// every line once and in order.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { basename, dirname } from 'node:path';
import type { DaemonHandle } from './harness/daemon.ts';
import { docker, dockerOk, type TestImages } from './harness/clients.ts';
import { removeAllAndCleanup, startWithImages } from './harness/setup.ts';

const lines = (s: string) => s.split('\n').filter(Boolean);

/** Which wanted lines are missing, which are repeated, and which came out of order (first few of each). */
function diff(got: string[], want: string[]): string {
  const count = new Map<string, number>();
  for (const l of got) count.set(l, (count.get(l) ?? 0) + 1);
  const missing = want.filter((l) => !count.has(l));
  const repeated = [...count].filter(([, n]) => n > 1).map(([l, n]) => `${l} x${n}`);
  const wanted = new Set(want);
  const extra = got.filter((l) => !wanted.has(l));
  const off = got.findIndex((l, i) => l !== want[i]);
  const firstOff = off === -1 ? got.length : off;
  return [
    `got ${got.length} lines, want ${want.length}`,
    `missing ${missing.length}: ${missing.slice(0, 20).join(' ')}`,
    `repeated ${repeated.length}: ${repeated.slice(0, 20).join(' ')}`,
    `unexpected ${extra.length}: ${extra.slice(0, 5).map((l) => JSON.stringify(l)).join(' ')}`,
    `first difference at index ${firstOff}: got ${JSON.stringify(got[firstOff])}, want ${JSON.stringify(want[firstOff])}`,
  ].join('\n');
}

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

  test('docker logs -f of a json-file log rotated ~230 times loses no line and repeats none', { timeout: 120_000 }, async () => {
    const N = 3000;
    const want = Array.from({ length: N }, (_, i) => `line-${i}`);
    const id = await dk(
      'run', '-d', '--network', 'none', '--log-driver', 'json-file', '--log-opt', 'max-size=1k', '--log-opt', 'max-file=1000',
      imgs.tag, 'sh', '-c', `i=0; while [ $i -lt ${N} ]; do echo line-$i; i=$((i+1)); done; sleep 1`,
    );
    // Started at once, most likely while the lines are being written (lines already written come
    // first, from the oldest kept file); it exits when the container stops.
    const followed = await docker(d, ['logs', '-f', id], { timeoutMs: 100_000 });
    assert.equal(followed.code, 0, followed.stderr);
    assert.equal(followed.stderr, '');
    const got = lines(followed.stdout);
    assert.ok(got.length === N && got.every((l, i) => l === want[i]), `docker logs -f:\n${diff(got, want)}`);

    await dk('wait', id);
    // The log did rotate many times (~230 KB in 1 KiB files), and no file was removed.
    const logPath = await dk('inspect', '-f', '{{.LogPath}}', id);
    const files = readdirSync(dirname(logPath)).filter((n) => n.startsWith(basename(logPath)));
    assert.ok(files.length >= 150 && files.length < 1000, `${files.length} log files`);
    // Every rotated file is kept: a plain read shows all the lines too.
    const all = await docker(d, ['logs', id]);
    assert.equal(all.code, 0, all.stderr);
    const kept = lines(all.stdout);
    assert.ok(kept.length === N && kept.every((l, i) => l === want[i]), `docker logs:\n${diff(kept, want)}`);
  });
});

// `docker logs -f` across many json-file rotations, end to end with the docker CLI: a container
// writes 3000 short lines with max-size=1k and max-file=1000 (each JSON record is ~80 bytes, so
// ~230 KB in ~230 rotated files, none of them removed), a follower started right after
// `docker run -d` returns prints each line exactly once and in order, and a plain `docker logs`
// afterwards shows the same 3000 lines. Whenever the follower starts, it prints the retained log
// from its start before following, and all of it is retained, so no assert leans on timing.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
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

describe('log follow across json-file rotations', () => {
  let d: DaemonHandle;
  let imgs: TestImages;
  const dk = dockerOk(() => d);

  before(async () => {
    ({ d, imgs } = await startWithImages());
  });
  after(async () => {
    await removeAllAndCleanup(d);
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

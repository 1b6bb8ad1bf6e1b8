// The config-reload reconciler through a real daemon: the configuration file is watched, so an
// edit in place, a replace by rename and a re-create after a delete are applied with no signal
// (a deleted file changes nothing); SIGHUP takes the same path. A reload is a `daemon reload`
// event with the new values; an invalid or conflicting file changes nothing and the daemon serves.
// --validate refuses what a reload refuses.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { renameSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { docker } from './harness/clients.ts';
import { REPO, startDaemon, type DaemonHandle } from './harness/daemon.ts';

const ENGINED = join(REPO, 'bin', 'engined');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('config reload', () => {
  let d: DaemonHandle;
  before(async () => {
    d = await startDaemon({ daemonJson: { labels: ['stage=zero'] }, args: ['--max-concurrent-uploads', '4'] });
  });
  after(() => d?.cleanup());

  const info = async () => (await docker(d, ['info', '--format', '{{.Debug}} {{json .Labels}}'])).stdout.trim();
  async function until(want: string, what: string): Promise<void> {
    let now = '';
    for (let i = 0; i < 100 && now !== want; i++) {
      await sleep(100);
      now = await info();
    }
    assert.equal(now, want, what);
  }
  const write = (json: unknown) => writeFileSync(d.configFile, JSON.stringify(json));

  test('an edit in place, no signal: docker info follows and a daemon reload event carries the new values', async () => {
    const since = Math.floor(Date.now() / 1000) - 1;
    assert.equal(await info(), 'false ["stage=zero"]');
    write({ debug: true, labels: ['stage=one'], 'max-concurrent-downloads': 2 });
    await until('true ["stage=one"]', 'the edit was applied');
    const ev = await docker(d, ['events', '--since', String(since), '--until', String(Math.floor(Date.now() / 1000) + 1), '--filter', 'type=daemon', '--format', '{{json .}}']);
    const reloads = ev.stdout.trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as { Type: string; Action: string; Actor: { ID: string; Attributes: Record<string, string> } });
    const last = reloads.filter((e) => e.Action === 'reload').at(-1);
    assert.ok(last, ev.stdout);
    assert.equal(last.Type, 'daemon');
    assert.equal(last.Actor.Attributes.debug, 'true');
    assert.equal(last.Actor.Attributes.labels, '["stage=one"]');
    assert.equal(last.Actor.Attributes['max-concurrent-downloads'], '2');
    assert.equal(last.Actor.Attributes['max-concurrent-uploads'], '4');
    assert.equal(last.Actor.Attributes['default-runtime'], 'stdrt');
    const id = (await docker(d, ['info', '--format', '{{.ID}}'])).stdout.trim();
    assert.equal(last.Actor.ID, id);
  });

  test('a replace by rename, then a delete (nothing changes, logged) and a re-create, with no signal', async () => {
    writeFileSync(`${d.configFile}.new`, JSON.stringify({ debug: false, labels: ['stage=two'] }));
    renameSync(`${d.configFile}.new`, d.configFile);
    await until('false ["stage=two"]', 'the renamed file was applied');
    unlinkSync(d.configFile);
    for (let i = 0; i < 50 && !/configuration file was removed/.test(d.logs()); i++) await sleep(100);
    assert.match(d.logs(), /the configuration file was removed; the daemon keeps its configuration until it exists again/);
    assert.equal(await info(), 'false ["stage=two"]');
    write({ labels: ['stage=three'] });
    await until('false ["stage=three"]', 'the re-created file was applied');
  });

  test('SIGHUP takes the same path', async () => {
    // Written where the watcher cannot tell (same size, same content class): the signal asks anyway.
    write({ labels: ['stage=four'] });
    process.kill(d.pid, 'SIGHUP');
    await until('false ["stage=four"]', 'the signal reload was applied');
  });

  test('an invalid file and one conflicting with a flag change nothing; the daemon keeps serving', async () => {
    const pid = d.pid;
    const before = await info();
    const logged = (re: RegExp) => re.test(d.logs());
    write({ labels: ['stage=five'], 'max-concurrent-downloads': -3 });
    for (let i = 0; i < 50 && !logged(/invalid max concurrent downloads: -3/); i++) await sleep(100);
    assert.ok(logged(/reload refused.*invalid max concurrent downloads: -3/), 'the invalid value was refused');
    write({ labels: ['stage=six'], 'max-concurrent-uploads': 9 });
    for (let i = 0; i < 50 && !logged(/specified both as a flag and in the configuration file: max-concurrent-uploads/); i++) await sleep(100);
    assert.ok(logged(/specified both as a flag and in the configuration file: max-concurrent-uploads/), 'the conflict was refused');
    write({ labels: ['stage=seven'], runtimes: { broken: { runtimeType: 'not a shim' } } });
    for (let i = 0; i < 50 && !logged(/invalid runtimeType not a shim/); i++) await sleep(100);
    assert.ok(logged(/invalid runtimeType not a shim/), 'the runtime table was refused');
    assert.equal(d.pid, pid);
    assert.equal(await info(), before, 'nothing changed');
  });

  test('--validate refuses what a reload refuses', async () => {
    const run = async (json: unknown) => {
      const file = join(d.root, 'validate.json');
      writeFileSync(file, JSON.stringify(json));
      try {
        const r = await promisify(execFile)(ENGINED, ['--validate', '--config-file', file], { timeout: 30_000 });
        return { code: 0, out: r.stdout + r.stderr };
      } catch (err) {
        const e = err as { code?: number; stdout?: string; stderr?: string };
        return { code: e.code ?? -1, out: (e.stdout ?? '') + (e.stderr ?? '') };
      }
    };
    const ok = await run({ labels: ['a=b'], runtimes: { good: { runtimeType: 'io.containerd.runc.v2' } } });
    assert.equal(ok.code, 0, ok.out);
    const bad = await run({ runtimes: { broken: { runtimeType: 'not a shim' } } });
    assert.notEqual(bad.code, 0);
    assert.match(bad.out, /invalid runtimeType not a shim/);
  });
});

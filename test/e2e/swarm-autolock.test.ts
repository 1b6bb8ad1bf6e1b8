// Autolock (issue (5 of 21), 5) with the stock docker CLI: `swarm init --autolock` prints the unlock
// key; the manager's key is sealed on disk (no private key in the clear under the data root); after
// a restart the node is locked (/info, the swarm's 503) with its etcd member down until `swarm unlock`
// gives the key (a wrong one refused); a rotation replaces the key (the old one no longer opens it);
// `swarm update --autolock=false` keeps the key plain and a restart needs no unlock. Secrets under
// autolock (issue (9 of 21), 2): sealed by the data key, itself sealed by the unlock key — while
// locked none can be made or read; unlocked, a service's task gets its secret's content.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { apiRequest, docker, testImages } from './harness/clients.ts';
import { startDaemon, type DaemonHandle } from './harness/daemon.ts';
import { freePort } from './harness/free-port.ts';
import { until } from './harness/wait.ts';

const canRun = existsSync('/usr/bin/etcd') && process.getuid?.() === 0;

describe('swarm autolock', { skip: !canRun && 'needs root and etcd-server (hack/install.sh installs it)' }, () => {
  let d: DaemonHandle;
  const dk = async (...args: string[]) => {
    const r = await docker(d, args);
    assert.equal(r.code, 0, `docker ${args.join(' ')}: ${r.stderr}\n${d.logs().split('\n').slice(-20).join('\n')}`);
    return r.stdout;
  };
  const state = async () => (await apiRequest(d, 'GET', '/info')).body.Swarm.LocalNodeState as string;
  const keyFile = () => readFileSync(join(d.dataRoot, 'swarm', 'certificates', 'swarm-node.key'), 'utf8');
  /** The swarm's data key (it will seal secrets, (9 of 21)): sealed like the node key. */
  const dataKeyFile = () => readFileSync(join(d.dataRoot, 'swarm', 'certificates', 'swarm-data.key'), 'utf8');
  const unlock = (key: string) => apiRequest(d, 'POST', '/swarm/unlock', JSON.stringify({ UnlockKey: key }));

  let image = '';
  before(async () => {
    d = await startDaemon();
    const imgs = await testImages();
    image = imgs.tag;
    await dk('load', '-i', imgs.dockerArchive);
  });
  after(async () => {
    await d?.cleanup();
  });

  test('init --autolock: the key printed, the node key sealed; a restart locks it; unlock with the key', { timeout: 120_000 }, async () => {
    const out = await dk('swarm', 'init', '--autolock', '--advertise-addr', '127.0.0.1', '--listen-addr', `127.0.0.1:${await freePort()}`);
    const key = /SWMKEY-1-[A-Za-z0-9+/]+/.exec(out)?.[0];
    assert.ok(key, `the unlock key is printed:\n${out}`);
    assert.equal((await dk('swarm', 'unlock-key', '-q')).trim(), key);
    assert.equal((await apiRequest(d, 'GET', '/swarm')).body.Spec.EncryptionConfig.AutoLockManagers, true);
    assert.doesNotMatch(keyFile(), /PRIVATE KEY/, 'no private key in the clear on disk');
    assert.match(dataKeyFile(), /^-----BEGIN ENGINE SEALED KEY-----/, 'the data key sealed on disk');
    assert.doesNotMatch(dataKeyFile(), /SWMDEK/);
    const notLocked = await unlock(key);
    assert.deepEqual([notLocked.status, notLocked.body.message], [400, 'swarm is not locked']);
    await docker(d, ['secret', 'create', 'locked-s', '-'], { input: 'opened by the unlock key' }).then((r) => assert.equal(r.code, 0, r.stderr));

    await d.restart();
    assert.equal(await state(), 'locked');
    assert.equal((await apiRequest(d, 'GET', '/secrets')).status, 503, 'no secret while locked');
    const sw = await apiRequest(d, 'GET', '/swarm');
    assert.equal(sw.status, 503);
    assert.equal(sw.body.message, 'Swarm is encrypted and needs to be unlocked before it can be used. Please use "docker swarm unlock" to unlock it.');
    assert.equal(existsSync(join(d.execRoot, 'swarm-etcd.pid')), false, 'the etcd member is down while locked');
    // Another key (its first character changed: the last one carries padding bits base64 ignores).
    const wrong = await unlock(key.replace(/^SWMKEY-1-(.)/, (_, c: string) => `SWMKEY-1-${c === 'A' ? 'B' : 'A'}`));
    assert.deepEqual([wrong.status, wrong.body.message], [400, 'swarm could not be unlocked: invalid key provided']);
    const junk = await unlock('nonsense');
    assert.deepEqual([junk.status, junk.body.message], [400, 'invalid key string']);
    const cli = await docker(d, ['swarm', 'unlock'], { input: `${key}\n` });
    assert.equal(cli.code, 0, cli.stderr);
    await until('active again', async () => (await state()) === 'active', 30_000);
    assert.equal((await apiRequest(d, 'GET', '/nodes')).status, 200);
    // Unlocked: the data key opens the secret sealed before the restart, for the task that uses it.
    await dk('service', 'create', '--detach', '--no-resolve-image', '--name', 'sec', '--secret', 'locked-s', image, 'sleep', '300');
    let task = '';
    await until('the task runs', async () => (task = (await dk('ps', '-q', '--filter', 'label=com.docker.swarm.service.name=sec')).trim()) !== '', 60_000);
    assert.equal(await dk('exec', task, 'cat', '/run/secrets/locked-s'), 'opened by the unlock key');
    await dk('service', 'rm', 'sec');
  });

  test('rotate: a new key, the old one no longer opens the node; autolock off: plain again, no unlock after a restart', { timeout: 120_000 }, async () => {
    const old = (await dk('swarm', 'unlock-key', '-q')).trim();
    await dk('swarm', 'unlock-key', '--rotate');
    const rotated = (await dk('swarm', 'unlock-key', '-q')).trim();
    assert.notEqual(rotated, old);
    await d.restart();
    assert.equal(await state(), 'locked');
    const withOld = await unlock(old);
    assert.equal(withOld.status, 400, withOld.text);
    assert.equal((await unlock(rotated)).status, 200);
    await until('active again', async () => (await state()) === 'active', 30_000);

    await dk('swarm', 'update', '--autolock=false');
    assert.equal((await dk('swarm', 'unlock-key', '-q').catch((e: Error) => e.message)).includes('SWMKEY'), false);
    assert.match(keyFile(), /PRIVATE KEY/);
    assert.match(dataKeyFile(), /^SWMDEK-1-/, 'the data key plain again');
    await d.restart();
    await until('active without an unlock', async () => (await state()) === 'active', 30_000);
  });
});

// Crash consistency: rounds of concurrent create/start/stop/rm/connect, network create/rm, pulls
// from a local registry and builds, with the daemon killed (kill -9) at a seeded random moment in
// each. After every restart each acknowledged create, pull and build is there and each
// acknowledged removal is not; after removing everything nothing is left: no supervisor
// containers or tasks, no shims, no mounts, no veths on the bridges, no published-port rules, no
// address or port leases in the store, no layer but the base image's.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { promisify } from 'node:util';
import { tmpdir } from 'node:os';
import { startDaemon, type DaemonHandle } from './harness/daemon.ts';
import { docker, testImages, type TestImages } from './harness/clients.ts';
import { layerOf, noise, writeImage } from './registry/images.ts';
import { registryAvailable, startRegistry, type TestRegistry } from './registry/registry.ts';

const GOARCH: Record<string, string> = { x64: 'amd64', arm64: 'arm64' };
/** Images in the registry that the rounds pull (one small layer of their own each). */
const PULLABLE = 6;

const run = promisify(execFile);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** mulberry32: the kill moments and the work mix replay from the seed. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('crash consistency', () => {
  let d: DaemonHandle;
  let imgs: TestImages;
  let reg: TestRegistry | undefined;
  let buildDir = '';
  const net = 'crashnet';
  before(async () => {
    if (registryAvailable()) {
      reg = await startRegistry();
      for (let i = 0; i < PULLABLE; i++) {
        const layer = await layerOf({ [`data/p${i}`]: noise(`crash-${i}`, 512 << 10) });
        await writeImage(reg.url, 'crash/img', `t${i}`, { layers: [layer], architecture: GOARCH[process.arch] ?? process.arch });
      }
    }
    buildDir = mkdtempSync(join(tmpdir(), 'engine-crash-build-'));
    d = await startDaemon({ bridge: true });
    imgs = await testImages();
    assert.equal((await docker(d, ['load', '-i', imgs.dockerArchive])).code, 0);
    const r = await docker(d, ['network', 'create', '--subnet', '10.251.7.0/24', net]);
    assert.equal(r.code, 0, r.stderr);
  });
  after(async () => {
    await d?.cleanup();
    await reg?.stop();
    if (buildDir) rmSync(buildDir, { recursive: true, force: true });
  });

  // Rounds with pulls and builds run well past the suite's default test deadline on a slow machine.
  test('kill -9 during rounds of concurrent work: acknowledged writes survive, nothing is left after removing everything', { timeout: 180_000 }, async () => {
    const random = rng(20261125);
    const created = new Set<string>();
    /** Removals acknowledged; and asked for at all (one cut off by the kill may or may not have been written). */
    const removed = new Set<string>();
    const asked = new Set<string>();
    /** The same for networks (by name). */
    const nets = new Set<string>();
    const netsRemoved = new Set<string>();
    const netsAsked = new Set<string>();
    let netSeq = 0;
    /** Pulls and builds acknowledged (references). */
    const images = new Set<string>();
    const t0 = Date.now();
    const mark = (what: string) => process.env.CRASH_DEBUG && console.log(`${((Date.now() - t0) / 1000).toFixed(1)} s: ${what}`);
    // One build acknowledged before the first kill, whatever the rounds manage: a round lasts
    // 1.5-4 s and a pull or build it starts may be cut off by the kill, so under load the rounds
    // alone sometimes acknowledged none and the image check below had nothing to check.
    {
      const dir = join(buildDir, 'crashbuild-first');
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, 'Dockerfile'), `FROM ${imgs.tag}\nRUN echo first > /tag\n`);
      const b = await docker(d, ['build', '-q', '-t', 'crashbuild:first', dir], { env: { DOCKER_BUILDKIT: '0' } });
      assert.equal(b.code, 0, b.stderr);
      images.add('crashbuild:first');
    }
    for (let round = 0; round < 3; round++) {
      let alive = true;
      const worker = async (w: number) => {
        let n = 0;
        while (alive) {
          const ids = [...created].filter((id) => !removed.has(id));
          const pick = random();
          if (pick < 0.06 && reg) {
            const ref = `${reg.hostPort}/crash/img:t${Math.floor(random() * PULLABLE)}`;
            if ((await docker(d, ['pull', '-q', ref])).code === 0) images.add(ref);
          } else if (pick < 0.1) {
            const tag = `crashbuild:r${round}w${w}n${n++}`;
            const dir = join(buildDir, tag.replace(':', '-'));
            mkdirSync(dir, { recursive: true });
            writeFileSync(join(dir, 'Dockerfile'), `FROM ${imgs.tag}\nCOPY Dockerfile /\nRUN echo ${tag} > /tag\nENV TAG=${tag}\n`);
            if ((await docker(d, ['build', '-q', '-t', tag, dir], { env: { DOCKER_BUILDKIT: '0' } })).code === 0) images.add(tag);
          } else if (pick < 0.5 || ids.length === 0) {
            const netArgs = random() < 0.5 ? ['--network', net] : ['--network', 'bridge', '-p', '127.0.0.1::80'];
            const c = await docker(d, ['create', '--stop-timeout', '1', ...netArgs, '--name', `r${round}w${w}n${n++}`, imgs.tag, 'sleep', '300']);
            if (c.code !== 0) continue;
            const id = c.stdout.trim();
            created.add(id);
            await docker(d, ['start', id]);
          } else if (pick < 0.75) {
            const id = ids[Math.floor(random() * ids.length)]!;
            asked.add(id);
            if ((await docker(d, ['rm', '-f', id])).code === 0) removed.add(id);
          } else if (pick < 0.85) {
            await docker(d, ['stop', '-t', '0', ids[Math.floor(random() * ids.length)]!]);
          } else if (pick < 0.92) {
            await docker(d, ['network', 'connect', net, ids[Math.floor(random() * ids.length)]!]);
          } else if (pick < 0.97 || nets.size === netsRemoved.size) {
            const k = netSeq++;
            const name = `cn${k}`;
            if ((await docker(d, ['network', 'create', '--subnet', `10.252.${k}.0/24`, name])).code === 0) nets.add(name);
          } else {
            const live = [...nets].filter((n) => !netsRemoved.has(n));
            const name = live[Math.floor(random() * live.length)]!;
            netsAsked.add(name);
            if ((await docker(d, ['network', 'rm', name])).code === 0) netsRemoved.add(name);
          }
        }
      };
      const workers = [0, 1, 2, 3].map(worker);
      await sleep(1500 + Math.floor(random() * 2500));
      await d.stop({ signal: 'SIGKILL' });
      mark(`round ${round} killed`);
      alive = false;
      await Promise.all(workers);
      mark('workers done');
      await d.restart();
      mark('restarted');
      const ps = await docker(d, ['ps', '-a', '--no-trunc', '--format', '{{.ID}}']);
      assert.equal(ps.code, 0, ps.stderr);
      const present = new Set(ps.stdout.split('\n').filter(Boolean));
      const netLs = await docker(d, ['network', 'ls', '--format', '{{.Name}}']);
      const netsPresent = new Set(netLs.stdout.split('\n').filter(Boolean));
      for (const n of nets) {
        if (netsRemoved.has(n)) assert.ok(!netsPresent.has(n), `round ${round}: network ${n} was removed (acknowledged) but is back`);
        else if (!netsAsked.has(n)) assert.ok(netsPresent.has(n), `round ${round}: acknowledged network ${n} is missing`);
        else if (!netsPresent.has(n)) netsRemoved.add(n);
      }
      for (const ref of images) {
        const r = await docker(d, ['image', 'inspect', '-f', '{{.Id}}', ref]);
        assert.equal(r.code, 0, `round ${round}: acknowledged image ${ref} is missing: ${r.stderr}`);
      }
      for (const id of created) {
        if (removed.has(id)) assert.ok(!present.has(id), `round ${round}: ${id} was removed (acknowledged) but is back`);
        else if (!asked.has(id)) assert.ok(present.has(id), `round ${round}: acknowledged create ${id} is missing`);
        else if (!present.has(id)) removed.add(id); // the cut-off removal had been written
      }
    }
    assert.ok(created.size > 4, `only ${created.size} creates were acknowledged`);
    assert.ok(images.size > 0, 'no pull or build was acknowledged');

    mark('rounds done');
    // Everything goes; then nothing of it may be left anywhere.
    const all = (await docker(d, ['ps', '-aq', '--no-trunc'])).stdout.split('\n').filter(Boolean);
    for (const id of all) {
      const rm = await docker(d, ['rm', '-f', id]);
      // A removal cut off by a kill is finished by the daemon itself: 409 while it is.
      if (rm.code !== 0) assert.match(rm.stderr, /removal of container \w+ is already in progress/);
    }
    let left = all;
    for (const until = Date.now() + 30_000; left.length && Date.now() < until; await sleep(200)) {
      left = (await docker(d, ['ps', '-aq', '--no-trunc'])).stdout.split('\n').filter(Boolean);
    }
    assert.deepEqual(left, [], 'containers left after removing everything');
    mark('containers removed');
    assert.equal((await docker(d, ['network', 'rm', net])).code, 0);
    const bridges: string[] = [];
    // Every network but the builtins: a create cut off by the kill may have been written too.
    const userNets = (await docker(d, ['network', 'ls', '--format', '{{.Name}}'])).stdout.split('\n').filter((x) => x && !['bridge', 'host', 'none'].includes(x));
    for (const n of userNets) {
      const id = (await docker(d, ['network', 'inspect', '--format', '{{.Id}}', n])).stdout.trim();
      if (id) bridges.push(`br-${id.slice(0, 12)}`);
      const rm = await docker(d, ['network', 'rm', n]);
      assert.equal(rm.code, 0, rm.stderr);
    }
    assert.deepEqual((await docker(d, ['network', 'ls', '--format', '{{.Name}}'])).stdout.split('\n').filter(Boolean).sort(), ['bridge', 'host', 'none']);
    // Every image but the base goes (a pull or build cut off by a kill may have left one more):
    // then no layer may be left but the base image's.
    const imageIds = (await docker(d, ['images', '-aq', '--no-trunc'])).stdout.split('\n').filter((x) => x && x !== imgs.id);
    for (const id of new Set(imageIds)) {
      const rmi = await docker(d, ['rmi', '-f', id]);
      // An intermediate build image goes with the image it was the parent of.
      if (rmi.code !== 0) assert.match(rmi.stderr, /No such image/);
    }
    assert.deepEqual((await docker(d, ['images', '-aq', '--no-trunc'])).stdout.split('\n').filter(Boolean), [imgs.id], 'images left');
    mark('images removed');
    const layerdb = join(d.dataRoot, 'image', readdirSync(join(d.dataRoot, 'image'))[0]!, 'layerdb');
    assert.equal(readdirSync(join(layerdb, 'sha256')).length, 1, 'layers left besides the base image\'s');
    assert.deepEqual(readdirSync(join(layerdb, 'mounts')), [], 'read-write layers left');
    const supervisor = join(d.execRoot, 'containerd', 'containerd.sock');
    const ctr = async (...args: string[]) => (await run('ctr', ['-a', supervisor, '-n', 'engine', ...args])).stdout.trim();
    assert.equal(await ctr('containers', 'ls', '-q'), '', 'supervisor containers');
    assert.equal(await ctr('tasks', 'ls', '-q'), '', 'supervisor tasks');
    const shims = (await run('ps', ['-eo', 'pid,args'])).stdout.split('\n').filter((l) => l.includes('containerd-shim') && l.includes(supervisor));
    if (shims.length && process.env.CRASH_DEBUG) {
      const tree = (await run('ps', ['-eo', 'pid,ppid,stat,args'])).stdout;
      const bundles = (await run('sh', ['-c', `ls -la ${join(d.execRoot, 'containerd', 'state')}/io.containerd.runtime.v2.task/engine/ 2>&1; for p in ${shims.map((l) => l.trim().split(' ')[0]).join(' ')}; do ls -l /proc/$p/cwd; ls /proc/$p/cwd; done`])).stdout;
      const ids = shims.map((l) => /-id (\w+)/.exec(l)?.[1] ?? '');
      console.log(JSON.stringify({ shims, bundles, tree: tree.split('\n').filter((l) => shims.some((x) => l.includes(x.trim().split(' ')[0]!))), inLog: ids.map((id) => d.logs().split('\n').filter((l) => l.includes(id.slice(0, 12)) && !l.includes('level=debug')).slice(0, 20)) }, null, 1));
    }
    assert.deepEqual(shims.map((l) => l.trim().replace(/^\d+ /, '')), [], 'shims');
    const mounts = readFileSync('/proc/self/mountinfo', 'utf8').split('\n').filter((l) => l.includes(join(d.dataRoot, 'overlay2')) || l.includes(join(d.dataRoot, 'containers')));
    assert.deepEqual(mounts, [], 'mounts');
    const ports = (await run('ip', ['-o', 'link', 'show', 'master', d.bridge])).stdout.trim();
    assert.equal(ports, '', 'veths on the default bridge');
    const links = (await run('ip', ['-o', 'link', 'show'])).stdout;
    assert.deepEqual(bridges.filter((b) => links.includes(` ${b}:`)), [], 'bridges of removed networks');
    const dnat = (await run('iptables-save', ['-t', 'nat'])).stdout.split('\n').filter((l) => l.includes('DNAT') && l.includes(`-A ${d.bridge.replace(/^et/, 'E')}`));
    assert.deepEqual(dnat, [], 'published-port rules');
    assert.equal(await d.stop({ signal: 'SIGTERM', timeoutMs: 60_000 }), 0);
    const db = new DatabaseSync(join(d.dataRoot, 'engine.db'));
    try {
      const left = db.prepare(`SELECT kind, COUNT(*) AS n FROM resources WHERE kind IN ('container', 'endpoint', 'ipam-allocation', 'port-allocation') OR (kind = 'network' AND json_extract(spec, '$.name') NOT IN ('bridge', 'host', 'none')) GROUP BY kind`).all();
      assert.deepEqual(left, [], 'records left in the store');
    } finally {
      db.close();
    }
  });
});

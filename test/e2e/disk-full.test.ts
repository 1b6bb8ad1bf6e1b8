// The disk filling up under the daemon (issue 13): its data root is a small tmpfs, so a container
// writing logs without end, a container writing into its own file system until not a byte is left
// (its exit is still recorded: the store keeps a reserve beside its database), a pull of an image
// larger than the free space, a load of such an archive and a build (its RUN's write, and the
// layer it would keep) each run out of room. The daemon stays up (same PID, still answering), says clearly
// "no space left on device" where a client asked for the write, leaves no partial image, layer or
// temp file behind, gets the space back when the culprit is removed, and restarts clean.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statfsSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { tarOf } from '../../hack/images/build-busybox.ts';
import { docker, testImages, type RunResult, type TestImages } from './harness/clients.ts';
import { startDaemon, type DaemonHandle } from './harness/daemon.ts';
import { layerFromTar, layerOf, noise, writeImage, type WrittenImage } from './registry/images.ts';
import { registryAvailable, startRegistry, type TestRegistry } from './registry/registry.ts';

const skip = !registryAvailable() && 'docker-registry is not installed';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const GOARCH: Record<string, string> = { x64: 'amd64', arm64: 'arm64' };
const native = GOARCH[process.arch] ?? process.arch;

/** Bytes free on the file system holding `path`. */
function free(path: string): number {
  const s = statfsSync(path);
  return s.bavail * s.bsize;
}

/** Every path under `dir` (directories with a trailing '/'), relative to it, sorted. */
function tree(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    let entries;
    try {
      entries = readdirSync(d, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      const p = join(d, e.name);
      if (e.isDirectory()) {
        out.push(`${relative(dir, p)}/`);
        walk(p);
      } else out.push(relative(dir, p));
    }
  };
  walk(dir);
  return out.sort();
}

/** What holds the data root's space: its biggest files, and files the daemon keeps open though deleted. */
function holders(d: DaemonHandle): string {
  const du = execFileSync('sh', ['-c', `du -ax ${d.dataRoot} 2>/dev/null | sort -rn | head -8`]).toString();
  const open = execFileSync('sh', ['-c', `ls -l /proc/${d.pid}/fd 2>/dev/null | grep deleted || true`]).toString();
  return `${du}\nopen deleted files:\n${open}`;
}

/** What a failed write may leave behind: the layer store, the graph driver's dirs, the temp dir. */
function storage(d: DaemonHandle): string[] {
  return ['image', 'overlay2', 'tmp'].flatMap((sub) => tree(join(d.dataRoot, sub)).map((p) => `${sub}/${p}`));
}

describe('disk full under the data root', { skip }, () => {
  let imgs: TestImages;
  let reg: TestRegistry;
  let d: DaemonHandle;
  let big: WrittenImage;
  let small: WrittenImage;
  let pid = 0;

  const ok = async (args: string[], opts: { timeoutMs?: number } = {}): Promise<string> => {
    const r = await docker(d, args, opts);
    assert.equal(r.code, 0, `docker ${args.join(' ')}:\n${r.stdout}\n${r.stderr}`);
    return r.stdout;
  };
  const fails = async (args: string[]): Promise<RunResult> => {
    const r = await docker(d, args, { timeoutMs: 120_000 });
    assert.notEqual(r.code, 0, `docker ${args.join(' ')} should fail:\n${r.stdout}\n${r.stderr}`);
    assert.doesNotMatch(r.stderr, /timed out/, 'it failed, it did not hang');
    return r;
  };
  /** The daemon is the same process and logged nothing unhandled. */
  const healthy = () => {
    assert.equal(d.pid, pid, `the daemon is still the same process:\n${d.logs().split('\n').slice(-30).join('\n')}`);
    assert.doesNotMatch(d.logs(), /unhandled rejection|uncaught exception/);
  };

  before(async () => {
    imgs = await testImages();
    reg = await startRegistry();
    // Three layers of 24 MiB that do not compress: more than the whole data root.
    const layers = await Promise.all([0, 1, 2].map((i) => layerOf({ [`data/big${i}`]: noise(`big-${i}`, 24 << 20) })));
    big = await writeImage(reg.url, 'test/big', 'v1', { layers, architecture: native });
    const busybox = layerFromTar(readFileSync(imgs.rootfsTar));
    small = await writeImage(reg.url, 'test/small', 'v1', { layers: [busybox, await layerOf({ 'etc/small': 'small\n' })], architecture: native });
    d = await startDaemon({ dataRootTmpfs: '48m' });
    pid = d.pid;
    await ok(['load', '-i', imgs.dockerArchive]);
  });

  after(async () => {
    await d?.cleanup();
    await reg?.stop();
  });

  test('a container logging until the disk is full: the daemon stays up, the space comes back on rm', async () => {
    const before = free(d.dataRoot);
    const id = (await ok(['run', '-d', '--network', 'none', imgs.tag, 'sh', '-c', 'yes 0123456789abcdef | head -c 40000000; echo done'])).trim();
    // Until the file system is full (but for the few MiB logs leave the daemon), or the container is done.
    let state = '';
    for (const until = Date.now() + 90_000; Date.now() < until; await sleep(250)) {
      state = (await ok(['inspect', '--format', '{{.State.Status}}', id])).trim();
      if (free(d.dataRoot) < 5 << 20 || state === 'exited') break;
    }
    assert.ok(free(d.dataRoot) < 5 << 20, `the disk filled up (${free(d.dataRoot)} bytes free, container ${state})`);
    // The daemon answers while the disk is full.
    assert.match(await ok(['ps', '-a', '--no-trunc', '--format', '{{.ID}}']), new RegExp(id));
    assert.equal(JSON.parse(await ok(['inspect', id]))[0].Id, id);
    const tail = await ok(['logs', '--tail', '5', id]);
    assert.ok(tail.split('\n').filter(Boolean).every((l) => /^(0123456789abcdef)?$|^[0-9a-f]*$/.test(l) || l === 'done'), tail);
    // The container finishes (its output is dropped, not blocking it forever).
    for (const until = Date.now() + 90_000; Date.now() < until && state !== 'exited'; await sleep(500)) {
      state = (await ok(['inspect', '--format', '{{.State.Status}}', id])).trim();
    }
    assert.equal(state, 'exited');
    // The log file holds whole entries only: what did not fit was dropped, not cut in half.
    const file = readFileSync(join(d.dataRoot, 'containers', id, `${id}-json.log`), 'utf8');
    assert.ok(file.length > 1 << 20 && file.endsWith('\n'), `${file.length} bytes, ending ${JSON.stringify(file.slice(-80))}`);
    for (const line of file.slice(0, -1).split('\n')) assert.equal(JSON.parse(line).stream, 'stdout', line);
    // The writer's warning (from the log thread, where a log this busy is written) names the container.
    assert.ok(d.logs().split('\n').some((l) => l.includes('writing container log failed') && l.includes(id)), 'the failed write is logged with the container');
    healthy();
    await ok(['rm', '-f', id]);
    assert.ok(free(d.dataRoot) >= before - (1 << 20), `the space came back: ${free(d.dataRoot)} free, ${before} before`);
    assert.equal(await ok(['run', '--rm', '--network', 'none', imgs.tag, 'echo', 'ok']), 'ok\n');
    healthy();
  });

  test('a container filling its own file system to the last byte: its exit is recorded, rm gives the space back', async () => {
    const before = free(d.dataRoot);
    const id = (await ok(['run', '-d', '--network', 'none', imgs.tag, 'sh', '-c', 'dd if=/dev/zero of=/fill bs=1M 2>/dev/null; echo dd $?; exit 3'])).trim();
    let state = '';
    for (const until = Date.now() + 90_000; Date.now() < until && !state.startsWith('exited'); await sleep(250)) {
      state = (await ok(['inspect', '--format', '{{.State.Status}} {{.State.ExitCode}}', id])).trim();
    }
    // The store recorded the exit although the container had taken every byte (its reserve went to it).
    assert.equal(state, 'exited 3');
    assert.match(d.logs(), /released the store reserve/);
    assert.match(await ok(['ps', '-a', '--no-trunc', '--format', '{{.ID}} {{.Status}}']), new RegExp(`${id} Exited \\(3\\)`));
    healthy();
    await ok(['rm', id]);
    assert.ok(free(d.dataRoot) >= before - (1 << 20), `the space came back: ${free(d.dataRoot)} free, ${before} before`);
    assert.equal(await ok(['run', '--rm', '--network', 'none', imgs.tag, 'echo', 'ok']), 'ok\n');
    // The reserve is made again once there is room for it.
    for (const until = Date.now() + 20_000; Date.now() < until && !readdirSync(d.dataRoot).includes('engine.db.reserve'); await sleep(250));
    assert.ok(readdirSync(d.dataRoot).includes('engine.db.reserve'), 'the store reserve is back');
    healthy();
  });

  test('a pull larger than the free space fails clearly and leaves nothing; a small one works; a restart is clean', async () => {
    const images = await ok(['images', '-a', '--no-trunc', '--format', '{{.ID}} {{.Repository}}:{{.Tag}}']);
    const files = storage(d);
    const before = free(d.dataRoot);
    assert.ok(before < 3 * (24 << 20), `the image does not fit: ${before} bytes free`);
    const name = `${reg.hostPort}/test/big:v1`;
    const pull = await fails(['pull', name]);
    // As the reference: `write /var/lib/docker/tmp/GetImageBlob…: no space left on device`, at once (not retried).
    assert.match(pull.stderr, new RegExp(`write ${d.dataRoot}/tmp/engine-pull-[0-9a-f]+: no space left on device`), pull.stderr);
    assert.doesNotMatch(pull.stdout, /Retrying/);
    assert.doesNotMatch(pull.stderr, /EN[O]SPC|Internal Server Error/, pull.stderr);
    healthy();
    assert.equal(await ok(['images', '-a', '--no-trunc', '--format', '{{.ID}} {{.Repository}}:{{.Tag}}']), images);
    assert.equal((await docker(d, ['image', 'inspect', big.id])).code, 1);
    assert.deepEqual(storage(d), files);
    assert.ok(free(d.dataRoot) >= before - (256 << 10), `the space came back: ${free(d.dataRoot)} free, ${before} before`);

    const smallName = `${reg.hostPort}/test/small:v1`;
    assert.match(await ok(['pull', smallName]), /^Status: Downloaded newer image for /m);
    assert.equal((await ok(['image', 'inspect', '--format', '{{.Id}}', smallName])).trim(), small.id);
    assert.equal(await ok(['run', '--rm', '--network', 'none', smallName, 'cat', '/etc/small']), 'small\n');

    await d.restart();
    pid = d.pid;
    assert.equal((await ok(['image', 'inspect', '--format', '{{.Id}}', smallName])).trim(), small.id);
    assert.equal((await docker(d, ['image', 'inspect', big.id])).code, 1);
    assert.equal(await ok(['run', '--rm', '--network', 'none', imgs.tag, 'echo', 'ok']), 'ok\n');
    await ok(['rmi', smallName]);
    assert.deepEqual(storage(d), files, 'no layer of the failed pull came back after the restart');
    healthy();
  });

  test('a build that runs out of room: a RUN writing past it fails in words, a layer too big to keep fails clearly; nothing is left; a small build works', async () => {
    const images = await ok(['images', '-a', '--no-trunc', '--format', '{{.ID}} {{.Repository}}:{{.Tag}}']);
    const files = storage(d);
    const before = free(d.dataRoot);
    // --force-rm: the failed step's container is removed too (without it the classic builder keeps it, as the reference).
    const build = (dockerfile: string) => docker(d, ['build', '-q', '--force-rm', '-t', 'test/full-build', '-'], { env: { DOCKER_BUILDKIT: '0' }, input: dockerfile, timeoutMs: 120_000 });
    // The RUN's own write fails inside its container: the step's exit ends the build.
    const more = Math.ceil(before / (1 << 20)) + 8;
    const full = await build(`FROM ${imgs.tag}\nRUN head -c ${more}m /dev/zero > /big\n`);
    assert.notEqual(full.code, 0, full.stdout);
    assert.match(full.stderr, /The command '\/bin\/sh -c head -c \d+m \/dev\/zero > \/big' returned a non-zero code: 1/, full.stderr);
    healthy();
    // A write that fits once but not twice: the container's layer is written, its copy for the image is not.
    const most = Math.floor((free(d.dataRoot) * 0.6) / (1 << 20));
    const twice = await build(`FROM ${imgs.tag}\nRUN head -c ${most}m /dev/urandom > /big\n`);
    assert.notEqual(twice.code, 0, twice.stdout);
    assert.match(twice.stderr, /no space left on device/, twice.stderr);
    assert.doesNotMatch(twice.stderr, /EN[O]SPC|Internal Server Error/, twice.stderr);
    healthy();
    assert.equal(await ok(['images', '-a', '--no-trunc', '--format', '{{.ID}} {{.Repository}}:{{.Tag}}']), images);
    assert.equal(await ok(['ps', '-aq']), '', 'no build container left');
    assert.deepEqual(storage(d), files);
    let now = free(d.dataRoot);
    for (const until = Date.now() + 5000; now < before - (256 << 10) && Date.now() < until; await sleep(200)) now = free(d.dataRoot);
    assert.ok(now >= before - (256 << 10), `the space came back: ${now} free, ${before} before; held by: ${holders(d)}`);
    const small = await build(`FROM ${imgs.tag}\nRUN echo small > /small\n`);
    assert.equal(small.code, 0, small.stderr);
    assert.equal(await ok(['run', '--rm', '--network', 'none', 'test/full-build', 'cat', '/small']), 'small\n');
    await ok(['rmi', 'test/full-build']);
    // The store's reserve, freed if a write needed it while the disk was full, is made again (store/reserve.ts) before the next case measures.
    const reserve = join(d.dataRoot, 'engine.db.reserve');
    for (const until = Date.now() + 15_000; !existsSync(reserve) && Date.now() < until; await sleep(250));
    assert.ok(existsSync(reserve), 'the store reserve is back');
  });

  test('a docker load larger than the free space fails clearly and leaves nothing', async () => {
    const images = await ok(['images', '-a', '--no-trunc', '--format', '{{.ID}} {{.Repository}}:{{.Tag}}']);
    const files = storage(d);
    const before = free(d.dataRoot);
    // An archive in the docker save layout, built here, of two 24 MiB layers: more than is free.
    const archive = join(d.root, 'big.tar');
    writeFileSync(archive, await bigArchive());
    const load = await fails(['load', '-i', archive]);
    assert.match(load.stderr, new RegExp(`write ${d.dataRoot}/tmp/\\S+: no space left on device`), load.stderr);
    healthy();
    assert.equal(await ok(['images', '-a', '--no-trunc', '--format', '{{.ID}} {{.Repository}}:{{.Tag}}']), images);
    assert.deepEqual(storage(d), files);
    assert.ok(free(d.dataRoot) >= before - (256 << 10), `the space came back: ${free(d.dataRoot)} free, ${before} before`);
  });
});

/** A `docker save` archive of an image with two 24 MiB layers of noise. */
async function bigArchive(): Promise<Buffer> {
  const hex = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');
  const layers = await Promise.all(
    [0, 1].map((i) => tarOf([{ name: `big${i}`, type: 'file', mode: 0o644, data: noise(`load-${i}`, 24 << 20) }], new Date(0))),
  );
  const config = Buffer.from(
    JSON.stringify({
      architecture: native,
      os: 'linux',
      config: { Cmd: ['sh'] },
      rootfs: { type: 'layers', diff_ids: layers.map((l) => `sha256:${hex(l)}`) },
    }),
  );
  const manifest = [{ Config: `${hex(config)}.json`, RepoTags: ['test/big-load:v1'], Layers: layers.map((l) => `${hex(l)}/layer.tar`) }];
  return tarOf(
    [
      { name: `${hex(config)}.json`, type: 'file', mode: 0o644, data: config },
      ...layers.flatMap((l) => [
        { name: `${hex(l)}/`, type: 'directory' as const, mode: 0o755 },
        { name: `${hex(l)}/layer.tar`, type: 'file' as const, mode: 0o644, data: l },
      ]),
      { name: 'manifest.json', type: 'file', mode: 0o644, data: Buffer.from(JSON.stringify(manifest)) },
    ],
    new Date(0),
  );
}

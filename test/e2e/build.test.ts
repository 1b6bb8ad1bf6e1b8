// `docker build` with the classic builder through real clients: the docker CLI (DOCKER_BUILDKIT=0),
// docker-py and dockerode. Every instruction, the cache (a rebuild runs no RUN), a failing RUN's
// output and exit code, multi-stage builds with --target and COPY --from, .dockerignore, and bad
// Dockerfiles answered with the reference's messages, leaving nothing behind.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { decodeTrace } from '../../api/builder/buildkit-progress.ts';
import type { Vertex } from '../../api/builder/gen/control.ts';
import { docker, dockerOk, dockerode, pythonDocker, type TestImages } from './harness/clients.ts';
import type { DaemonHandle } from './harness/daemon.ts';
import { removeAllAndCleanup, startWithImages } from './harness/setup.ts';
import { registryAvailable, startRegistry } from './registry/registry.ts';

const CLASSIC = { DOCKER_BUILDKIT: '0' };

describe('docker build (classic builder)', () => {
  let d: DaemonHandle;
  let imgs: TestImages;
  const dk = dockerOk(() => d);
  const dirs: string[] = [];
  before(async () => {
    ({ d, imgs } = await startWithImages());
  });
  after(async () => {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
    await removeAllAndCleanup(d);
  });

  /** A build context directory with these files. */
  function context(files: Record<string, string>): string {
    const dir = mkdtempSync(join(tmpdir(), 'engine-build-'));
    dirs.push(dir);
    for (const [name, text] of Object.entries(files)) {
      mkdirSync(join(dir, name, '..'), { recursive: true });
      writeFileSync(join(dir, name), text);
    }
    return dir;
  }

  const build = (args: string[], timeoutMs = 120_000) => docker(d, ['build', ...args], { env: CLASSIC, timeoutMs });

  test('every config instruction, RUN, COPY and ADD end up in the image; tags; the step output', async () => {
    const dir = context({
      Dockerfile: `
ARG BASE=${imgs.tag}
FROM \${BASE}
ARG GREETING=hello
ENV APP=/app NAME="the app"
LABEL org.test.a=one "org.test.b"="two words"
WORKDIR \${APP}
RUN echo "\${GREETING} \${NAME}" > greeting.txt && mkdir -p /data
COPY files/ ./files/
COPY top*.txt /app/
ADD archive.tar.gz /unpacked/
COPY --chown=1000:1000 --chmod=750 script.sh /usr/local/bin/script.sh
USER 1000
EXPOSE 8080/tcp 53/udp
VOLUME ["/data"]
STOPSIGNAL SIGTERM
HEALTHCHECK --interval=30s --retries=3 CMD true
ONBUILD RUN echo triggered
SHELL ["/bin/sh", "-ec"]
ENTRYPOINT ["/bin/sh", "-c"]
CMD ["cat /app/greeting.txt"]
`,
      'files/a.txt': 'A\n',
      'files/sub/b.txt': 'B\n',
      'top1.txt': 'one\n',
      'top2.txt': 'two\n',
      'script.sh': '#!/bin/sh\necho script\n',
    });
    const staging = mkdtempSync(join(tmpdir(), 'engine-build-tar-'));
    dirs.push(staging);
    writeFileSync(join(staging, 'inner.txt'), 'inside the archive\n');
    execFileSync('tar', ['-czf', join(dir, 'archive.tar.gz'), '-C', staging, 'inner.txt']);

    const r = await build(['-t', 'built:one', '-t', 'built:two', '--build-arg', 'GREETING=hi', dir]);
    assert.equal(r.code, 0, r.stderr + r.stdout);
    assert.match(r.stdout, /Step 1\/20 : ARG BASE=/);
    assert.match(r.stdout, /Step 2\/20 : FROM \$\{BASE\}/);
    assert.match(r.stdout, / ---> Running in [0-9a-f]{12}/);
    assert.match(r.stdout, /Removing intermediate container [0-9a-f]{12}/);
    assert.match(r.stdout, /Successfully built [0-9a-f]{12}/);
    assert.match(r.stdout, /Successfully tagged built:one/);
    assert.match(r.stdout, /Successfully tagged built:two/);

    assert.equal(await dk('run', '--rm', 'built:one'), 'hi the app');
    assert.equal(await dk('run', '--rm', 'built:two', 'cat files/a.txt files/sub/b.txt top1.txt top2.txt /unpacked/inner.txt'), 'A\nB\none\ntwo\ninside the archive');
    assert.equal(await dk('run', '--rm', 'built:one', 'stat -c "%u:%g %a" /usr/local/bin/script.sh; id -u; pwd'), '1000:1000 750\n1000\n/app');
    const cfg = JSON.parse(await dk('inspect', '-f', '{{json .Config}}', 'built:one')) as Record<string, unknown>;
    assert.deepEqual(cfg.Entrypoint, ['/bin/sh', '-c']);
    assert.deepEqual(cfg.Cmd, ['cat /app/greeting.txt']);
    assert.equal(cfg.WorkingDir, '/app');
    assert.equal(cfg.User, '1000');
    assert.deepEqual(cfg.ExposedPorts, { '53/udp': {}, '8080/tcp': {} });
    assert.deepEqual(cfg.Volumes, { '/data': {} });
    assert.equal(cfg.StopSignal, 'SIGTERM');
    assert.deepEqual(cfg.Labels, { 'org.test.a': 'one', 'org.test.b': 'two words' });
    assert.deepEqual(cfg.Healthcheck, { Test: ['CMD-SHELL', 'true'], Interval: 30e9, Retries: 3 });
    assert.deepEqual(cfg.OnBuild, ['RUN echo triggered']);
    assert.deepEqual(cfg.Shell, ['/bin/sh', '-ec']);
    assert.ok((cfg.Env as string[]).includes('APP=/app'));
    assert.ok((cfg.Env as string[]).includes('NAME=the app'));
    // Build args are not kept in the image.
    assert.ok(!(cfg.Env as string[]).some((e) => e.startsWith('GREETING=')));
    // History: one entry per step, the config steps marked as empty layers.
    const history = await dk('history', '--no-trunc', '--format', '{{.CreatedBy}}', 'built:one');
    assert.match(history, /#\(nop\) {2}ENV APP=\/app NAME=the app/);
    assert.match(history, /\|1 GREETING=hi \/bin\/sh -c echo/);
    // No intermediate container is left.
    assert.equal(await dk('ps', '-aq'), '');

    // An image built FROM it runs its ONBUILD trigger first.
    const child = context({ Dockerfile: 'FROM built:one\nRUN test -f /app/greeting.txt\n' });
    const rc = await build(['-t', 'built:child', child]);
    assert.equal(rc.code, 0, rc.stderr + rc.stdout);
    assert.match(rc.stdout, /# Executing 1 build trigger/);
    assert.match(rc.stdout, /triggered/);
  });

  test('a rebuild comes from the cache and runs no RUN; --no-cache runs it again', async () => {
    const dir = context({ Dockerfile: `FROM ${imgs.tag}\nRUN echo built > /stamp\nCOPY f.txt /f.txt\nENV X=1\n`, 'f.txt': 'f\n' });
    const first = await build(['-t', 'cached:1', dir]);
    assert.equal(first.code, 0, first.stderr + first.stdout);
    const second = await build(['-t', 'cached:2', dir]);
    assert.equal(second.code, 0, second.stderr + second.stdout);
    assert.equal((second.stdout.match(/Using cache/g) ?? []).length, 3, second.stdout);
    assert.doesNotMatch(second.stdout, /Running in/);
    assert.equal(await dk('inspect', '-f', '{{.Id}}', 'cached:1'), await dk('inspect', '-f', '{{.Id}}', 'cached:2'));
    // The classic builder's cache is its images (with the supervisor's snapshotter too, as in the
    // reference's containerd store): builder prune frees none of it, and the next build still hits it.
    assert.match(await dk('builder', 'prune', '-f'), /Total reclaimed space: 0B/);
    const again = await build(['-t', 'cached:3', dir]);
    assert.equal((again.stdout.match(/Using cache/g) ?? []).length, 3, again.stdout);
    // A changed file busts the cache from its COPY on.
    writeFileSync(join(dir, 'f.txt'), 'changed\n');
    const third = await build([dir]);
    assert.equal((third.stdout.match(/Using cache/g) ?? []).length, 1, third.stdout);
    const fresh = await build(['--no-cache', dir]);
    assert.match(fresh.stdout, /Running in/);
    assert.doesNotMatch(fresh.stdout, /Using cache/);
  });

  test('a failing RUN: its output and the exit code reach the CLI; nothing is tagged', async () => {
    const dir = context({ Dockerfile: `FROM ${imgs.tag}\nRUN echo to-stdout; echo to-stderr >&2; exit 3\n` });
    const r = await build(['-t', 'broken:1', dir]);
    assert.equal(r.code, 3, r.stderr + r.stdout);
    assert.match(r.stdout, /to-stdout/);
    assert.match(r.stdout + r.stderr, /to-stderr/);
    assert.match(r.stderr, /The command '\/bin\/sh -c echo to-stdout; echo to-stderr >&2; exit 3' returned a non-zero code: 3/);
    assert.equal((await docker(d, ['image', 'inspect', 'broken:1'])).code, 1);
    // --force-rm removes the failed step's container too.
    await docker(d, ['rm', '-f', ...(await dk('ps', '-aq')).split('\n').filter(Boolean)]);
    const r2 = await build(['--force-rm', dir]);
    assert.equal(r2.code, 3);
    assert.equal(await dk('ps', '-aq'), '');
  });

  test('multi-stage: FROM a stage, COPY --from by name and index, --target stops early', async () => {
    const dir = context({
      Dockerfile: `FROM ${imgs.tag} AS first\nRUN echo from-first > /out.txt\n\nFROM first AS second\nRUN echo from-second > /second.txt\n\nFROM ${imgs.tag}\nCOPY --from=first /out.txt /got/first.txt\nCOPY --from=1 /second.txt /got/\n`,
    });
    const r = await build(['-t', 'multi:final', dir]);
    assert.equal(r.code, 0, r.stderr + r.stdout);
    assert.equal(await dk('run', '--rm', 'multi:final', 'cat', '/got/first.txt', '/got/second.txt'), 'from-first\nfrom-second');
    const t = await build(['--target', 'first', '-t', 'multi:first', dir]);
    assert.equal(t.code, 0, t.stderr + t.stdout);
    assert.doesNotMatch(t.stdout, /from-second/);
    assert.equal(await dk('run', '--rm', 'multi:first', 'cat', '/out.txt'), 'from-first');
    const missing = await build(['--target', 'nope', dir]);
    assert.notEqual(missing.code, 0);
    assert.match(missing.stderr, /failed to reach build target nope in Dockerfile/);

    // FROM scratch with files from a stage; exec-form RUN; -q prints only the image ID.
    const scratch = context({
      Dockerfile: `FROM ${imgs.tag} AS tools\nRUN ["sh", "-c", "echo exec-form > /made.txt"]\nFROM scratch\nCOPY --from=tools /made.txt /\nCOPY --from=tools /bin/busybox /bin/busybox\nCMD ["/bin/busybox", "cat", "/made.txt"]\n`,
    });
    const q = await build(['-q', '-t', 'multi:scratch', scratch]);
    assert.equal(q.code, 0, q.stderr + q.stdout);
    assert.match(q.stdout.trim(), /^sha256:[0-9a-f]{64}$/);
    assert.equal(await dk('inspect', '-f', '{{len .RootFS.Layers}}', 'multi:scratch'), '2');
    assert.equal(await dk('run', '--rm', 'multi:scratch'), 'exec-form');
  });

  test('.dockerignore, a Dockerfile elsewhere (-f), and bad Dockerfiles with the reference messages', async () => {
    const dir = context({
      'build/My.Dockerfile': `FROM ${imgs.tag}\nCOPY . /ctx/\nRUN ls -a /ctx | sort | tr '\\n' ' '\n`,
      '.dockerignore': 'secret*\n*.log\n!keep.log\n',
      'secret.txt': 'no',
      'a.log': 'no',
      'keep.log': 'yes',
      'plain.txt': 'yes',
    });
    const r = await build(['-f', join(dir, 'build/My.Dockerfile'), '-t', 'ignored:1', dir]);
    assert.equal(r.code, 0, r.stderr + r.stdout);
    const listing = await dk('run', '--rm', 'ignored:1', 'ls', '/ctx');
    assert.deepEqual(listing.split('\n').sort(), ['build', 'keep.log', 'plain.txt']);

    const before = await dk('images', '-aq');
    const unknown = context({ Dockerfile: `FROM ${imgs.tag}\nFOO bar\n` });
    const u = await build([unknown]);
    assert.notEqual(u.code, 0);
    assert.match(u.stderr, /dockerfile parse error on line 2: unknown instruction: FOO/i);
    const empty = context({ Dockerfile: '# nothing\n' });
    const e = await build([empty]);
    assert.notEqual(e.code, 0);
    assert.match(e.stderr, /file with no instructions|No image was generated/);
    const noFile = context({ 'x.txt': 'x' });
    const n = await docker(d, ['build', '-f', 'Missing.Dockerfile', noFile], { env: CLASSIC });
    assert.notEqual(n.code, 0);
    const noFrom = context({ Dockerfile: 'RUN true\n' });
    const f = await build([noFrom]);
    assert.notEqual(f.code, 0);
    assert.match(f.stderr, /no build stage in current context/);
    assert.equal(await dk('images', '-aq'), before);
    assert.equal(await dk('ps', '-aq'), '');
  });

  test('docker-py and dockerode build from a context tarball and get the image id', async () => {
    const dir = context({ Dockerfile: `FROM ${imgs.tag}\nLABEL via=sdk\nCOPY hello.txt /\n`, 'hello.txt': 'hello\n' });
    const out = await pythonDocker(d, `
      img, logs = client.images.build(path=${JSON.stringify(dir)}, tag='py:built', rm=True)
      print(img.id)
      print(img.labels['via'])
    `);
    const [pyId, label] = out.trim().split('\n');
    assert.match(pyId, /^sha256:[0-9a-f]{64}$/);
    assert.equal(label, 'sdk');

    const tarPath = join(mkdtempSync(join(tmpdir(), 'engine-build-ctx-')), 'ctx.tar');
    dirs.push(join(tarPath, '..'));
    execFileSync('tar', ['-cf', tarPath, '-C', dir, '.']);
    const api = dockerode(d);
    const stream = await api.buildImage(tarPath, { t: 'node:built' });
    const lines = await new Promise<Array<Record<string, unknown>>>((resolve, reject) => {
      api.modem.followProgress(stream, (err: Error | null, res: Array<Record<string, unknown>>) => (err ? reject(err) : resolve(res)));
    });
    const aux = lines.find((l) => l.aux)?.aux as { ID: string } | undefined;
    assert.equal(aux?.ID, pyId);
    assert.equal(await dk('inspect', '-f', '{{.Id}}', 'node:built'), pyId);
  });
  test('ADD of an http URL the daemon can reach: named after the URL, 0600, not extracted; a 404 fails the build', async () => {
    const server = createServer((req, res) => {
      if (req.url === '/files/data.txt') {
        res.writeHead(200, { 'Last-Modified': 'Wed, 01 Jan 2020 00:00:00 GMT' });
        res.end('from the web\n');
      } else {
        res.writeHead(404);
        res.end('nope');
      }
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    try {
      const dir = context({ Dockerfile: `FROM ${imgs.tag}\nADD http://127.0.0.1:${port}/files/data.txt /web/\nADD http://127.0.0.1:${port}/files/data.txt /renamed.txt\n` });
      const r = await build(['-t', 'web:1', dir]);
      assert.equal(r.code, 0, r.stderr + r.stdout);
      assert.equal(await dk('run', '--rm', 'web:1', 'sh', '-c', 'cat /web/data.txt /renamed.txt; stat -c %a /web/data.txt; date -u -r /renamed.txt +%Y'), 'from the web\nfrom the web\n600\n2020');
      const missing = context({ Dockerfile: `FROM ${imgs.tag}\nADD http://127.0.0.1:${port}/none.txt /\n` });
      const m = await build([missing]);
      assert.notEqual(m.code, 0);
      assert.match(m.stderr, /failed to GET http:\/\/127\.0\.0\.1:\d+\/none\.txt with status 404/);
      const copyUrl = context({ Dockerfile: `FROM ${imgs.tag}\nCOPY http://127.0.0.1:${port}/files/data.txt /\n` });
      const c = await build([copyUrl]);
      assert.match(c.stderr, /source can't be a URL for COPY/);
    } finally {
      server.close();
    }
  });

  test('RUN containers get the build\'s network mode, extra hosts, /dev/shm size and memory limit', async () => {
    const dir = context({
      Dockerfile: `FROM ${imgs.tag}\nRUN grep -q 'buildhost' /etc/hosts && ip link | grep -vq eth0 && df -k /dev/shm | tail -1 | awk '{print $2}' > /shm && cat /sys/fs/cgroup/memory/memory.limit_in_bytes > /mem\n`,
    });
    const r = await build(['--network', 'none', '--add-host', 'buildhost:10.1.2.3', '--shm-size', '32m', '--memory', '64m', '-t', 'hostcfg:1', dir]);
    assert.equal(r.code, 0, r.stderr + r.stdout);
    assert.equal(await dk('run', '--rm', 'hostcfg:1', 'cat', '/shm', '/mem'), `32768\n${64 * 1024 * 1024}`);
  });

  test('a client that goes away cancels the build: the RUN container is killed and removed', async () => {
    const dir = context({ Dockerfile: `FROM ${imgs.tag}\nRUN echo out-$((1+1)); sleep 60\n` });
    const tarPath = join(mkdtempSync(join(tmpdir(), 'engine-build-ctx-')), 'ctx.tar');
    dirs.push(join(tarPath, '..'));
    execFileSync('tar', ['-cf', tarPath, '-C', dir, '.']);
    const stream = (await dockerode(d).buildImage(tarPath, { t: 'cancelled:1' })) as NodeJS.ReadableStream & { destroy(): void };
    await new Promise<void>((resolve, reject) => {
      let seen = '';
      stream.on('data', (c: Buffer) => {
        seen += c.toString();
        if (seen.includes('out-2')) resolve();
      });
      stream.on('error', reject);
      stream.on('end', () => reject(new Error(`build ended before its RUN started: ${seen}`)));
    });
    assert.notEqual(await dk('ps', '-q'), '');
    stream.destroy();
    const deadline = Date.now() + 20_000;
    while ((await dk('ps', '-aq')) !== '' && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
    assert.equal(await dk('ps', '-aq'), '');
    assert.equal((await docker(d, ['image', 'inspect', 'cancelled:1'])).code, 1);
  });

  test('--cache-from an image loaded without its build history: every step comes from it, no RUN runs', async () => {
    const dir = context({ Dockerfile: `FROM ${imgs.tag}\nENV CF=1\nRUN echo cf > /cf\nCOPY f.txt /f.txt\nCMD ["cat", "/cf"]\n`, 'f.txt': 'f\n' });
    const first = await build(['-t', 'cf:1', dir]);
    assert.equal(first.code, 0, first.stderr + first.stdout);
    const id = await dk('inspect', '-f', '{{.Id}}', 'cf:1');
    const tarDir = mkdtempSync(join(tmpdir(), 'engine-build-save-'));
    dirs.push(tarDir);
    await dk('save', '-o', join(tarDir, 'cf.tar'), 'cf:1');
    await dk('rmi', 'cf:1');
    await docker(d, ['image', 'prune', '-f']);
    await dk('load', '-i', join(tarDir, 'cf.tar'));
    const plain = await build([dir]);
    assert.equal(plain.code, 0, plain.stderr + plain.stdout);
    assert.match(plain.stdout, /Running in/, 'without --cache-from the loaded image is not a cache');
    await docker(d, ['image', 'prune', '-f']);
    const r = await build(['--cache-from', 'cf:1', '-t', 'cf:2', dir]);
    assert.equal(r.code, 0, r.stderr + r.stdout);
    assert.equal((r.stdout.match(/Using cache/g) ?? []).length, 4, r.stdout);
    assert.doesNotMatch(r.stdout, /Running in/);
    assert.equal(await dk('inspect', '-f', '{{.Id}}', 'cf:2'), id);
    assert.equal(await dk('run', '--rm', 'cf:2'), 'cf');
  });

  test('a Dockerfile outside the context, as the CLI (-f /elsewhere/Dockerfile ctx) and docker-py (dockerfile=outside path) send it', async () => {
    const ctx = context({ 'hello.txt': 'hi\n', 'ignored.txt': 'no\n', '.dockerignore': 'ignored.txt\n' });
    const elsewhere = context({ 'Outside.Dockerfile': `FROM ${imgs.tag}\nCOPY . /ctx/\nRUN cat /ctx/hello.txt\n` });
    const cli = await build(['-f', join(elsewhere, 'Outside.Dockerfile'), '-t', 'outside:cli', ctx]);
    assert.equal(cli.code, 0, cli.stderr + cli.stdout);
    assert.match(cli.stdout, /\bhi\b/);
    const listed = await dk('run', '--rm', 'outside:cli', 'ls', '-A', '/ctx');
    assert.match(listed, /^hello\.txt$/m);
    assert.doesNotMatch(listed, /ignored\.txt|\.dockerfile\./, 'the .dockerignore still applies; the added Dockerfile is not part of the context');
    const out = await pythonDocker(d, `
      img, logs = client.images.build(path=${JSON.stringify(ctx)}, dockerfile=${JSON.stringify(join(elsewhere, 'Outside.Dockerfile'))}, tag='outside:py')
      print(json.dumps(img.tags))
    `);
    assert.deepEqual(JSON.parse(out.trim().split('\n').pop()!), ['outside:py']);
  });

  test('--cache-from: only the named images are cache sources (a name that matches nothing: no cache at all); a matching chain is used step by step', async () => {
    const dir = context({ Dockerfile: `FROM ${imgs.tag}\nRUN echo one > /one\nRUN echo two > /two\n` });
    const first = await build(['-t', 'cachesrc:1', dir]);
    assert.equal(first.code, 0, first.stderr + first.stdout);
    const local = await build([dir]);
    assert.equal((local.stdout.match(/Using cache/g) ?? []).length, 2, 'without --cache-from the local cache is used');
    const none = await build(['--cache-from', 'nothing:here', dir]);
    assert.equal(none.code, 0, none.stderr + none.stdout);
    assert.doesNotMatch(none.stdout, /Using cache/, 'a --cache-from that names nothing leaves no cache, not even the local one');
    const hit = await build(['--cache-from', 'cachesrc:1', dir]);
    assert.equal(hit.code, 0, hit.stderr + hit.stdout);
    assert.equal((hit.stdout.match(/Using cache/g) ?? []).length, 2, hit.stdout);
  });

  test('FROM an image that is not here pulls it from its registry, progress inside the build output', { skip: !registryAvailable() }, async () => {
    const reg = await startRegistry();
    try {
      const remote = `${reg.hostPort}/build/base:v1`;
      await dk('tag', imgs.tag, remote);
      await dk('push', remote);
      await dk('rmi', remote);
      const dir = context({ Dockerfile: `FROM ${remote}\nRUN echo pulled > /p\n` });
      const r = await build(['-t', 'pulled:1', dir]);
      assert.equal(r.code, 0, r.stderr + r.stdout);
      assert.match(r.stdout, /Status: (Downloaded newer image|Image is up to date) for/);
      assert.equal(await dk('run', '--rm', 'pulled:1', 'cat', '/p'), 'pulled');
      // With the supervisor's snapshotter a pulled image is known by the manifest digest it came by.
      const [pulledId, repoDigest] = (await dk('inspect', '-f', '{{.Id}} {{index .RepoDigests 0}}', remote)).split(' ');
      assert.equal(pulledId, process.env.ENGINE_E2E_STORAGE === 'snapshotter' ? repoDigest!.split('@')[1] : imgs.id);
      const missing = context({ Dockerfile: `FROM ${reg.hostPort}/build/missing:v1\n` });
      const m = await build([missing]);
      assert.notEqual(m.code, 0);
      assert.match(m.stderr, /not found|unknown|does not exist/i);
    } finally {
      await reg.stop();
    }
  });

  /** A raw request over the daemon's socket: status, headers and body. */
  function raw(method: string, path: string, body?: Buffer, headers: Record<string, string> = {}) {
    return new Promise<{ status: number; headers: Record<string, unknown>; body: string }>((resolve, reject) => {
      const req = request({ socketPath: d.socket, path, method, headers }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString() }));
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end(body);
    });
  }

  /** POST /build?version=2 with `dir` as a tar body: the JSON lines, the trace vertexes (last state of each) and their logs. */
  async function buildkitBuild(dir: string, qs: string) {
    const tar = execFileSync('tar', ['-cf', '-', '-C', dir, '.']);
    const r = await raw('POST', `/build?version=2&${qs}`, tar, { 'Content-Type': 'application/x-tar' });
    assert.equal(r.status, 200, r.body);
    const lines = r.body.split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>);
    const vertexes = new Map<string, Vertex>();
    const logs: string[] = [];
    for (const l of lines) {
      if (l.id !== 'moby.buildkit.trace') continue;
      assert.equal(typeof l.aux, 'string');
      const sr = decodeTrace(l.aux as string);
      for (const v of sr.vertexes) vertexes.set(v.digest, v);
      for (const g of sr.logs) logs.push(Buffer.from(g.msg).toString());
    }
    return { lines, vertexes: [...vertexes.values()], logs: logs.join('') };
  }

  test('version=2 (BuildKit): the steps as moby.buildkit.trace StatusResponses, moby.image.id, the tag; /_ping stays Builder-Version 1', async () => {
    const ping = await raw('GET', '/_ping');
    assert.equal(ping.headers['builder-version'], '1');
    const dir = context({ Dockerfile: `FROM ${imgs.tag}\nRUN echo built-by-$((40+2)) > /made.txt && cat /made.txt\nCOPY data.txt /data.txt\n`, 'data.txt': 'data\n' });
    const { lines, vertexes, logs } = await buildkitBuild(dir, 't=bk%3A1');
    assert.ok(!lines.some((l) => l.error || l.errorDetail), JSON.stringify(lines));
    assert.deepEqual(vertexes.map((v) => v.name), [`[1/3] FROM ${imgs.tag}`, '[2/3] RUN echo built-by-$((40+2)) > /made.txt && cat /made.txt', '[3/3] COPY data.txt /data.txt']);
    for (const v of vertexes) {
      assert.match(v.digest, /^sha256:[0-9a-f]{64}$/);
      assert.ok(v.started && v.completed, `${v.name} not completed`);
      assert.equal(v.error, '');
    }
    assert.match(logs, /built-by-42/);
    const idLine = lines.find((l) => l.id === 'moby.image.id');
    const id = (idLine?.aux as { ID?: string } | undefined)?.ID;
    assert.match(id ?? '', /^sha256:[0-9a-f]{64}$/, JSON.stringify(lines.at(-1)));
    assert.equal(lines.at(-1), idLine);
    const img = await raw('GET', '/images/bk:1/json');
    assert.equal(img.status, 200, img.body);
    assert.equal(JSON.parse(img.body).Id, id);
    assert.equal(await dk('run', '--rm', 'bk:1', 'cat', '/made.txt', '/data.txt'), 'built-by-42\ndata');

    // A rebuild: the steps after FROM come from the cache.
    const again = await buildkitBuild(dir, 't=bk%3A2');
    assert.deepEqual(again.vertexes.slice(1).map((v) => v.cached), [true, true]);
    assert.equal((again.lines.at(-1)?.aux as { ID?: string }).ID, id);
  });

  test('version=2 (BuildKit): a failing RUN marks its vertex with the error and the stream ends with the error line', async () => {
    const dir = context({ Dockerfile: `FROM ${imgs.tag}\nRUN echo bk-out; exit 4\n` });
    const { lines, vertexes, logs } = await buildkitBuild(dir, 't=bkbroken%3A1');
    const message = "The command '/bin/sh -c echo bk-out; exit 4' returned a non-zero code: 4";
    assert.deepEqual(lines.at(-1), { errorDetail: { code: 4, message }, error: message });
    assert.ok(!lines.some((l) => l.id === 'moby.image.id'));
    assert.deepEqual(vertexes.map((v) => [v.name, v.error, !!v.completed]), [
      [`[1/2] FROM ${imgs.tag}`, '', true],
      ['[2/2] RUN echo bk-out; exit 4', message, true],
    ]);
    assert.match(logs, /bk-out/);
    assert.equal((await raw('GET', '/images/bkbroken:1/json')).status, 404);
    await docker(d, ['rm', '-f', ...(await dk('ps', '-aq')).split('\n').filter(Boolean)]);
  });
});

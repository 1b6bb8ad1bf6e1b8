// Push, pull and login against a real docker-registry with the stock docker CLI and docker-py:
// the reference daemon's progress lines and errors, basic auth, TLS with a test CA in the
// certificates directory, and the insecure-registry rules for loopback and other addresses.
// (Mirrors, transfer limits, retries and multi-platform pulls: registry-transfer.test.ts.)
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { copyFile, mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { docker, pythonDocker, testImages, type RunResult, type TestImages } from './harness/clients.ts';
import { startDaemon, type DaemonHandle } from './harness/daemon.ts';
import { nonLoopbackAddress, type LocalAddress } from './registry/address.ts';
import { startProxy } from './registry/proxy.ts';
import { bcryptHtpasswd, makeTestCa, registryAvailable, startRegistry, type TestCa, type TestRegistry } from './registry/registry.ts';

const skip = !registryAvailable() && 'docker-registry is not installed';
const htpasswd = bcryptHtpasswd('alice', 's3cret');

const esc = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** The daemons run with the supervisor's snapshotter (hack/test.sh's snapshotter phase): images are known by their target digest. */
const SNAPSHOTTER = process.env.ENGINE_E2E_STORAGE === 'snapshotter';

describe('registry: push, pull and login with real clients', { skip }, () => {
  let d: DaemonHandle;
  let imgs: TestImages;
  /** Short id of the busybox layer as push shows it (its diff id). */
  let layerId: string;
  let reg: TestRegistry;
  let certsDir: string;
  const registries: TestRegistry[] = [];
  const dirs: string[] = [];
  const daemons: DaemonHandle[] = [];
  let ext: LocalAddress | undefined;

  const run = (h: DaemonHandle, args: string[], env?: Record<string, string>, input?: string): Promise<RunResult> => docker(h, args, { env, input });
  const ok = async (h: DaemonHandle, args: string[], env?: Record<string, string>): Promise<string> => {
    const r = await run(h, args, env);
    assert.equal(r.code, 0, `docker ${args.join(' ')}:\n${r.stdout}\n${r.stderr}`);
    return r.stdout;
  };
  const fails = async (h: DaemonHandle, args: string[], env?: Record<string, string>): Promise<RunResult> => {
    const r = await run(h, args, env);
    assert.equal(r.code, 1, `docker ${args.join(' ')} should fail:\n${r.stdout}\n${r.stderr}`);
    return r;
  };
  const registry = async (opts: Parameters<typeof startRegistry>[0]) => {
    const r = await startRegistry(opts);
    registries.push(r);
    return r;
  };
  const daemon = async (opts: Parameters<typeof startDaemon>[0]) => {
    const h = await startDaemon(opts);
    daemons.push(h);
    await ok(h, ['load', '-i', imgs.dockerArchive]);
    return h;
  };
  const tempDir = async (prefix: string) => {
    const dir = await mkdtemp(join(tmpdir(), prefix));
    dirs.push(dir);
    return dir;
  };
  const placeCa = async (hostPort: string, caFile: string) => {
    await mkdir(join(certsDir, hostPort), { recursive: true });
    await copyFile(caFile, join(certsDir, hostPort, 'ca.crt'));
  };
  const removeCa = (hostPort: string) => rm(join(certsDir, hostPort), { recursive: true, force: true });

  before(async () => {
    imgs = await testImages();
    layerId = createHash('sha256').update(await readFile(imgs.rootfsTar)).digest('hex').slice(0, 12);
    certsDir = await tempDir('engine-e2e-certs-');
    reg = await registry({});
    d = await daemon({ env: { ENGINE_CERTS_DIR: certsDir } });
  });

  after(async () => {
    for (const h of daemons) await h.cleanup();
    for (const r of registries) await r.stop();
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
    ext?.release();
  });

  test('docker push, push again, rmi, pull, run, pull by digest, missing tag', async () => {
    const repo = `${reg.hostPort}/test/busybox`;
    const name = `${repo}:v1`;
    await ok(d, ['tag', imgs.tag, name]);

    const push = await ok(d, ['push', name]);
    assert.match(push, new RegExp(`^The push refers to repository \\[${esc(repo)}\\]$`, 'm'));
    assert.match(push, new RegExp(`^${layerId}: Pushed$`, 'm'));
    const pushed = new RegExp(`^v1: digest: (sha256:[0-9a-f]{64}) size: (\\d+)$`, 'm').exec(push);
    assert.ok(pushed, push);
    const digest = pushed[1]!;
    // What the registry holds under the tag is what the daemon said it pushed.
    const head = await fetch(`${reg.url}/v2/test/busybox/manifests/v1`, { method: 'HEAD', headers: { Accept: 'application/vnd.docker.distribution.manifest.v2+json' } });
    assert.equal(head.headers.get('docker-content-digest'), digest);
    assert.equal(Number(head.headers.get('content-length')), Number(pushed[2]));
    const inspect = JSON.parse(await ok(d, ['image', 'inspect', name])) as Array<{ Id: string; RepoDigests: string[] }>;
    assert.ok(inspect[0]!.RepoDigests.includes(`${repo}@${digest}`), JSON.stringify(inspect[0]!.RepoDigests));

    const again = await ok(d, ['push', name]);
    assert.match(again, new RegExp(`^${layerId}: Layer already exists$`, 'm'));
    assert.match(again, new RegExp(`^v1: digest: ${digest} size: ${pushed[2]}$`, 'm'));

    // Remove every name of the image so that the pull has to download and register it again.
    await ok(d, ['rmi', name, imgs.tag]);
    assert.equal((await run(d, ['image', 'inspect', imgs.id])).code, 1);
    const pull = await ok(d, ['pull', name]);
    assert.match(pull, /^v1: Pulling from test\/busybox$/m);
    assert.match(pull, /^[0-9a-f]{12}: Pull complete$/m);
    assert.match(pull, new RegExp(`^Digest: ${digest}$`, 'm'));
    assert.match(pull, new RegExp(`^Status: Downloaded newer image for ${esc(name)}$`, 'm'));
    assert.match(pull, new RegExp(`^${esc(name)}$`, 'm'));
    const id = (await ok(d, ['image', 'inspect', '--format', '{{.Id}}', name])).trim();
    // With the supervisor's snapshotter a pulled image is known by the manifest digest it came by.
    assert.equal(id, SNAPSHOTTER ? digest : imgs.id);

    // The push and the pull are on the event stream as dockerd reports them.
    const evs = (await ok(d, ['events', '--since', '0', '--until', String(Math.ceil(Date.now() / 1000) + 1), '--filter', 'type=image', '--format', '{{.Action}} {{.Actor.ID}} {{.Actor.Attributes.name}}']))
      .trim().split('\n');
    assert.ok(evs.includes(`push ${name} ${repo}`), evs.join('\n'));
    assert.ok(evs.includes(`pull ${name} ${repo}`), evs.join('\n'));
    const hello = await ok(d, ['run', '--rm', '--network', 'none', name, 'echo', 'hello from the registry']);
    assert.equal(hello, 'hello from the registry\n');

    const byDigest = await ok(d, ['pull', `${repo}@${digest}`]);
    assert.match(byDigest, new RegExp(`^${digest}: Pulling from test/busybox$`, 'm'));
    assert.match(byDigest, new RegExp(`^Status: Image is up to date for ${esc(repo)}@${digest}$`, 'm'));
    // GET /distribution/{name}/json: what the registry holds for the name.
    const { execFile } = await import('node:child_process');
    const dist = await new Promise<string>((resolve, reject) =>
      execFile('curl', ['-sS', '--unix-socket', d.socket, `http://x/distribution/${name}/json`], (err, out) => (err ? reject(err) : resolve(out))));
    const di = JSON.parse(dist) as { Descriptor: { digest: string }; Platforms: Array<{ architecture: string; os: string }> };
    assert.equal(di.Descriptor.digest, digest, dist);
    assert.ok(di.Platforms.some((p) => p.os === 'linux'), dist);

    const missing = await fails(d, ['pull', `${repo}:nope`]);
    assert.equal(missing.stderr.trim(), `Error response from daemon: manifest for ${repo}:nope not found: manifest unknown: manifest unknown`);
    const noRepo = await fails(d, ['pull', `${reg.hostPort}/test/absent:v1`]);
    assert.match(noRepo.stderr, /^Error response from daemon: (manifest for \S+ not found: manifest unknown|repository \S+ not found: name unknown): /);

    await ok(d, ['tag', name, imgs.tag]);
  });

  test('docker-py: push with decoded stream (aux Tag/Digest/Size) and pull', async () => {
    const repo = `${reg.hostPort}/py/busybox`;
    const out = await pythonDocker(d, `
      repo = ${JSON.stringify(repo)}
      client.images.get(${JSON.stringify(imgs.tag)}).tag(repo, 'v2')
      lines = list(client.images.push(repo, tag='v2', stream=True, decode=True))
      print(json.dumps({'push': lines}))
      client.images.remove(repo + ':v2')
      img = client.images.pull(repo, tag='v2')
      print(json.dumps({'id': img.id, 'tags': img.tags, 'digests': img.attrs['RepoDigests']}))
      statuses = [l.get('status') for l in api.pull(repo, tag='v2', stream=True, decode=True)]
      print(json.dumps({'again': statuses}))
      try:
        api.pull('UPPER/case', tag='latest')
        print(json.dumps({'upper': 'pulled'}))
      except docker.errors.APIError as e:
        print(json.dumps({'upper': [e.status_code, e.explanation]}))
    `);
    const [pushLine, pullLine, againLine, upperLine] = out.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    // As dockerd 20.10: a Hub repository name in upper case, refused before any registry is asked.
    assert.deepEqual(upperLine!.upper, [400, 'invalid reference format: repository name must be lowercase']);
    const lines = pushLine!.push as Array<{ status?: string; id?: string; aux?: { Tag: string; Digest: string; Size: number }; error?: string }>;
    assert.ok(!lines.some((l) => l.error), JSON.stringify(lines));
    assert.equal(lines[0]!.status, `The push refers to repository [${repo}]`);
    // The daemon knows the layer is in test/busybox on the same registry: it mounts it from there.
    assert.ok(lines.some((l) => l.id === layerId && l.status === 'Mounted from test/busybox'), JSON.stringify(lines));
    const aux = lines.find((l) => l.aux)?.aux;
    assert.ok(aux, JSON.stringify(lines));
    assert.equal(aux.Tag, 'v2');
    assert.match(aux.Digest, /^sha256:[0-9a-f]{64}$/);
    assert.equal(typeof aux.Size, 'number');
    assert.ok(lines.some((l) => l.status === `v2: digest: ${aux.Digest} size: ${aux.Size}`), JSON.stringify(lines));

    assert.equal(pullLine!.id, SNAPSHOTTER ? aux.Digest : imgs.id);
    assert.ok((pullLine!.tags as string[]).includes(`${repo}:v2`));
    assert.ok((pullLine!.digests as string[]).includes(`${repo}@${aux.Digest}`));
    assert.ok((againLine!.again as string[]).includes(`Status: Image is up to date for ${repo}:v2`), JSON.stringify(againLine));
  });

  test('basic auth: docker login, wrong password, push and pull with and without credentials', { skip: !htpasswd && 'no bcrypt implementation (python3 crypt) to write an htpasswd file' }, async () => {
    const areg = await registry({ htpasswd });
    const repo = `${areg.hostPort}/auth/busybox`;
    const name = `${repo}:v1`;
    const loggedIn = { DOCKER_CONFIG: await tempDir('engine-e2e-dockercfg-auth-') };
    const anonymous = { DOCKER_CONFIG: await tempDir('engine-e2e-dockercfg-anon-') };
    await ok(d, ['tag', imgs.tag, name]);

    const noCreds = await fails(d, ['push', name], anonymous);
    assert.match(noCreds.stdout, new RegExp(`^The push refers to repository \\[${esc(repo)}\\]$`, 'm'));
    assert.equal(noCreds.stderr.trim(), 'no basic auth credentials');

    const wrong = await run(d, ['login', areg.hostPort, '-u', 'alice', '--password-stdin'], loggedIn, 'wrong\n');
    assert.equal(wrong.code, 1, wrong.stdout + wrong.stderr);
    assert.match(wrong.stderr, new RegExp(`Error response from daemon: login attempt to http://${esc(areg.hostPort)}/v2/ failed with status: 401 Unauthorized`));

    const login = await run(d, ['login', areg.hostPort, '-u', 'alice', '--password-stdin'], loggedIn, 's3cret\n');
    assert.equal(login.code, 0, login.stdout + login.stderr);
    assert.match(login.stdout, /Login Succeeded/);
    const saved = JSON.parse(await readFile(join(loggedIn.DOCKER_CONFIG, 'config.json'), 'utf8')) as { auths: Record<string, { auth?: string }> };
    assert.equal(Buffer.from(saved.auths[areg.hostPort]?.auth ?? '', 'base64').toString(), 'alice:s3cret');

    const push = await ok(d, ['push', name], loggedIn);
    assert.match(push, new RegExp(`^${layerId}: Pushed$`, 'm'));
    assert.match(push, /^v1: digest: sha256:[0-9a-f]{64} size: \d+$/m);

    await ok(d, ['rmi', name]);
    const anonPull = await fails(d, ['pull', name], anonymous);
    assert.equal(anonPull.stderr.trim(), `Error response from daemon: Head "http://${areg.hostPort}/v2/auth/busybox/manifests/v1": no basic auth credentials`);
    const pull = await ok(d, ['pull', name], loggedIn);
    assert.match(pull, new RegExp(`^Status: Downloaded newer image for ${esc(name)}$`, 'm'));

    // X-Registry-Auth with a wrong password, from docker-py.
    const badAuth = await pythonDocker(d, `
      try:
          client.images.pull(${JSON.stringify(repo)}, tag='v1', auth_config={'username': 'alice', 'password': 'nope'})
          print('pulled')
      except docker.errors.APIError as e:
          print(e.status_code, e.explanation)
    `);
    assert.equal(badAuth.trim(), '500 unauthorized: authentication required');
    const logout = await ok(d, ['logout', areg.hostPort], loggedIn);
    assert.match(logout, new RegExp(`Removing login credentials for ${esc(areg.hostPort)}`));
  });

  test('TLS on 127.0.0.1: works with its CA in the certificates directory, and (insecure by rule) without', async () => {
    const ca = await makeTestCa(['127.0.0.1']);
    dirs.push(ca.dir);
    const other = await makeTestCa(['127.0.0.1']);
    dirs.push(other.dir);
    const treg = await registry({ tls: { cert: ca.cert, key: ca.key } });
    const name = `${treg.hostPort}/tls/busybox:v1`;
    await ok(d, ['tag', imgs.tag, name]);
    await placeCa(treg.hostPort, ca.caCert);
    const push = await ok(d, ['push', name]);
    assert.match(push, /^v1: digest: sha256:[0-9a-f]{64} size: \d+$/m);
    // 127.0.0.0/8 is insecure: TLS is not verified, whatever the certificates directory holds.
    await placeCa(treg.hostPort, other.caCert);
    await ok(d, ['rmi', name]);
    const pull = await ok(d, ['pull', name]);
    assert.match(pull, new RegExp(`^Status: Downloaded newer image for ${esc(name)}$`, 'm'));
    await removeCa(treg.hostPort);
    await ok(d, ['rmi', name]);
    assert.match(await ok(d, ['pull', name]), new RegExp(`^Status: Downloaded newer image for ${esc(name)}$`, 'm'));
  });

  test('TLS on a non-loopback address: verified against <certs dir>/<host:port>/ca.crt', async () => {
    ext ??= nonLoopbackAddress();
    const ca: TestCa = await makeTestCa([ext.address]);
    dirs.push(ca.dir);
    const other = await makeTestCa([ext.address]);
    dirs.push(other.dir);
    const sreg = await registry({ host: ext.address, tls: { cert: ca.cert, key: ca.key } });
    const repo = `${sreg.hostPort}/secure/busybox`;
    const name = `${repo}:v1`;
    await ok(d, ['tag', imgs.tag, name]);
    const hint = new RegExp(`If this private registry supports only HTTP or HTTPS with an unknown CA certificate, please add \`--insecure-registry ${esc(sreg.hostPort)}\` to the daemon's arguments\\. ` +
      `In the case of HTTPS, if you have access to the registry's CA certificate, no need for the flag; simply place the CA certificate at ${esc(certsDir)}/${esc(sreg.hostPort)}/ca\\.crt`);
    const unknownCa = new RegExp(`Get "https://${esc(sreg.hostPort)}/v2/": tls: failed to verify certificate: x509: certificate signed by unknown authority\\. `);

    const noCa = await fails(d, ['push', name]);
    assert.match(noCa.stdout, new RegExp(`^The push refers to repository \\[${esc(repo)}\\]$`, 'm'));
    assert.match(noCa.stderr, unknownCa);
    assert.match(noCa.stderr, hint);

    await placeCa(sreg.hostPort, other.caCert);
    const wrongCa = await fails(d, ['pull', name]);
    assert.match(wrongCa.stderr, new RegExp(`^Error response from daemon: ${unknownCa.source}`));
    assert.match(wrongCa.stderr, hint);

    await placeCa(sreg.hostPort, ca.caCert);
    const push = await ok(d, ['push', name]);
    assert.match(push, new RegExp(`^${layerId}: Pushed$`, 'm'));
    await ok(d, ['rmi', name]);
    const pull = await ok(d, ['pull', name]);
    assert.match(pull, new RegExp(`^Status: Downloaded newer image for ${esc(name)}$`, 'm'));
    await removeCa(sreg.hostPort);
  });

  test('plain HTTP on a non-loopback address: refused unless marked with --insecure-registry; --http-proxy', async () => {
    ext ??= nonLoopbackAddress();
    const hreg = await registry({ host: ext.address });
    const repo = `${hreg.hostPort}/plain/busybox`;
    const name = `${repo}:v1`;
    await ok(d, ['tag', imgs.tag, name]);
    const wording = `Get "https://${hreg.hostPort}/v2/": http: server gave HTTP response to HTTPS client. ` +
      `If this private registry supports only HTTP or HTTPS with an unknown CA certificate, please add \`--insecure-registry ${hreg.hostPort}\` to the daemon's arguments. ` +
      `In the case of HTTPS, if you have access to the registry's CA certificate, no need for the flag; simply place the CA certificate at ${certsDir}/${hreg.hostPort}/ca.crt`;
    const push = await fails(d, ['push', name]);
    assert.equal(push.stderr.trim(), wording);
    const pull = await fails(d, ['pull', name]);
    assert.equal(pull.stderr.trim(), `Error response from daemon: ${wording}`);
    await ok(d, ['rmi', name]);

    // Marked by CIDR on the command line: push works.
    const byCidr = await daemon({ args: ['--insecure-registry', `${ext.address}/32`] });
    await ok(byCidr, ['tag', imgs.tag, name]);
    assert.match(await ok(byCidr, ['push', name]), /^v1: digest: sha256:[0-9a-f]{64} size: \d+$/m);
    await byCidr.cleanup();
    // Marked by host:port in the configuration file: pull works.
    const byName = await daemon({ daemonJson: { 'insecure-registries': [hreg.hostPort] } });
    await ok(byName, ['rmi', imgs.tag]);
    const pulled = await ok(byName, ['pull', name]);
    assert.match(pulled, /Pull complete/);
    const [pulledId, repoDigest] = (await ok(byName, ['image', 'inspect', '--format', '{{.Id}} {{index .RepoDigests 0}}', name])).trim().split(' ');
    assert.equal(pulledId, SNAPSHOTTER ? repoDigest!.split('@')[1] : imgs.id);
    await byName.cleanup();

    // --http-proxy: the daemon's plain-HTTP registry requests go through the proxy (absolute URIs).
    const proxy = await startProxy(hreg.url);
    try {
      const proxied = await daemon({ args: ['--insecure-registry', hreg.hostPort, '--http-proxy', proxy.url] });
      await ok(proxied, ['rmi', imgs.tag]);
      assert.match(await ok(proxied, ['pull', name]), /Pull complete/);
      assert.ok(proxy.stats.requests.includes(`GET http://${hreg.hostPort}/v2/`), proxy.stats.requests.join('\n'));
      assert.ok(proxy.stats.requests.some((r) => r.startsWith(`GET http://${hreg.hostPort}/v2/plain/busybox/blobs/`)), proxy.stats.requests.join('\n'));
      await proxied.cleanup();
    } finally {
      await proxy.stop();
    }
  });
});

describe('docker search against a registry search endpoint', () => {
  let d: DaemonHandle;
  let server: import('node:http').Server;
  let port = 0;
  const queries: string[] = [];
  before(async () => {
    const { createServer } = await import('node:http');
    server = createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://x');
      if (url.pathname !== '/v1/search') {
        res.writeHead(404).end();
        return;
      }
      queries.push(`${url.searchParams.get('q')} ${url.searchParams.get('n')}`);
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({
        num_results: 3,
        query: url.searchParams.get('q'),
        results: [
          { name: 'tools/busy', description: 'a busy box', star_count: 12, is_official: false, is_automated: false },
          { name: 'busybox', description: 'official', star_count: 3000, is_official: true, is_automated: false },
          { name: 'x/busy-auto', description: '', star_count: 1, is_official: false, is_automated: true },
        ],
      }));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as import('node:net').AddressInfo).port;
    d = await startDaemon();
  });
  after(async () => {
    await d?.cleanup();
    server?.close();
  });

  test('results, --limit, --filter; 127.0.0.1 is reached over plain HTTP (insecure by rule)', async () => {
    const r = await docker(d, ['search', '--format', '{{.Name}}|{{.StarCount}}|{{.IsOfficial}}', '--limit', '10', `127.0.0.1:${port}/busy`]);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(r.stdout.trim().split('\n'), ['tools/busy|12|', 'busybox|3000|[OK]', 'x/busy-auto|1|']);
    assert.ok(queries.includes('busy 10'), queries.join(','));
    const f = await docker(d, ['search', '--filter', 'stars=10', '--filter', 'is-official=true', '--format', '{{.Name}}', `127.0.0.1:${port}/busy`]);
    assert.equal(f.stdout.trim(), 'busybox');
    const bad = await docker(d, ['search', '--filter', 'nope=1', `127.0.0.1:${port}/busy`]);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /invalid filter 'nope'/);
  });
});

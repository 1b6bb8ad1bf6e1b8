// The Debian package (issue (16 of 21), 1): hack/package.sh builds engine_<version>_<arch>.deb; its
// control fields, conffile and files are what an operator expects; unpacked with dpkg-deb -x into a
// temporary root, the daemon starts from those paths (the package's own Node, only built code) and
// runs a container for the docker CLI, and the packaged client answers. (`dpkg -i` on the machine
// and a removal that keeps the data are shown by hack/package-check.sh, not in the suite.)
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { dockerOk, testImages, type TestImages } from './harness/clients.ts';
import { REPO, startDaemon, type DaemonHandle } from './harness/daemon.ts';

const canRun = process.getuid?.() === 0 && spawnSync('dpkg-deb', ['--version']).status === 0;

describe('the Debian package', { skip: !canRun && 'needs root and dpkg-deb' }, () => {
  let dir: string;
  let deb: string;
  let root: string;
  let imgs: TestImages;
  let d: DaemonHandle | undefined;
  const version = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')).version as string;
  const arch = execFileSync('dpkg', ['--print-architecture']).toString().trim();
  const field = (name: string) => execFileSync('dpkg-deb', ['-f', deb, name]).toString().trim();

  before(async () => {
    imgs = await testImages();
    dir = mkdtempSync(join(tmpdir(), 'engine-pkg-'));
    const r = spawnSync('bash', [join(REPO, 'hack/package.sh'), join(dir, 'out')], { env: { ...process.env, PACKAGE_COMPRESS: 'gzip' }, encoding: 'utf8', timeout: 300_000 });
    assert.equal(r.status, 0, r.stderr);
    deb = r.stdout.trim().split('\n').at(-1)!;
    root = join(dir, 'root');
    execFileSync('dpkg-deb', ['-x', deb, root]);
  }, { timeout: 360_000 });
  after(async () => {
    await d?.cleanup().catch(() => {});
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('engine_<version>_<arch>.deb: its control fields, conffile and files', () => {
    assert.equal(deb, join(dir, 'out', `engine_${version}_${arch}.deb`));
    assert.equal(field('Package'), 'engine');
    assert.equal(field('Version'), version);
    assert.equal(field('Architecture'), arch);
    assert.deepEqual(field('Depends').split(/,\s*/).sort(), ['containerd', 'iptables', 'runc']);
    assert.match(field('Recommends'), /\betcd-server\b/);
    const control = mkdtempSync(join(dir, 'control-'));
    execFileSync('dpkg-deb', ['-e', deb, control]);
    assert.equal(readFileSync(join(control, 'conffiles'), 'utf8').trim(), '/etc/engine/daemon.json');
    for (const s of ['postinst', 'prerm', 'postrm']) assert.ok(existsSync(join(control, s)), s);
    assert.match(readFileSync(join(control, 'postrm'), 'utf8'), /purge\)[\s\S]*rm -rf \/var\/lib\/engine/, 'only a purge removes the data');
    const files = execFileSync('dpkg-deb', ['-c', deb]).toString();
    for (const f of [
      './usr/bin/engined', './usr/bin/engine', './lib/systemd/system/engine.service', './lib/systemd/system/engine.socket',
      './etc/engine/daemon.json', './usr/share/man/man8/engined.8.gz', './usr/share/man/man5/daemon.json.5.gz', './usr/share/man/man1/engine.1.gz',
      './usr/share/doc/engine/daemon-json.md', './usr/share/doc/engine/copyright', './usr/lib/engine/node_modules/node/bin/node',
      './usr/lib/engine/build/engined.bundle.mjs', './usr/lib/engine/node_modules/etcd3/package.json',
    ]) assert.ok(files.includes(f), `${f} in the package`);
    assert.match(files, /koffi-linux-x64\/linux_x64\/koffi\.node/, "koffi's native addon for this machine");
    // Every file is root's (dpkg-deb --root-owner-group), whoever built it.
    assert.ok(files.split('\n').filter(Boolean).every((l) => l.split(/\s+/)[1] === 'root/root'), 'owned by root');
    assert.deepEqual(JSON.parse(readFileSync(join(root, 'etc/engine/daemon.json'), 'utf8')), {});
    assert.match(readFileSync(join(root, 'lib/systemd/system/engine.service'), 'utf8'), /^Type=notify$/m);
  });

  test('unpacked: engined --version from its own Node and built code only; it serves the docker CLI and runs a container; the client answers', { timeout: 180_000 }, async () => {
    const lib = join(root, 'usr/lib/engine');
    // No TypeScript of its own and nothing to build with: a run never compiles.
    assert.deepEqual(readdirSync(lib).sort(), ['.package', 'bin', 'build', 'contrib', 'hack', 'node_modules', 'package.json']);
    // What hack/package.sh stamps: the checkout's commit, or 'unknown' without git.
    const git = spawnSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: REPO, encoding: 'utf8' });
    const commit = git.status === 0 ? git.stdout.trim() : 'unknown';
    assert.equal(execFileSync(join(root, 'usr/bin/engined'), ['--version']).toString().trim(), `Engine version ${version}, build ${commit}`);
    const cache = join(dir, 'compile-cache');
    d = await startDaemon({ engined: join(root, 'usr/bin/engined'), env: { ENGINE_COMPILE_CACHE_DIR: cache } });
    const dk = dockerOk(() => d!);
    assert.equal(await dk('version', '--format', '{{.Server.Version}} {{.Server.GitCommit}}'), `${version} ${commit}`);
    await dk('load', '-i', imgs.dockerArchive);
    assert.equal(await dk('run', '--rm', imgs.tag, 'echo', 'from the package'), 'from the package');
    const ps = readFileSync(`/proc/${d.pid}/cmdline`, 'utf8').split('\0');
    assert.equal(ps[0], join(lib, 'node_modules/.bin/node'), "the package's own Node");
    assert.ok(ps.includes(join(lib, 'build/engined.mjs')), ps.join(' '));
    assert.ok(!existsSync(join(lib, '.build.lock')) && !existsSync(join(lib, 'build/.compile-cache')), 'nothing written under /usr');
    // The packaged client: its help, and the completion script it reads from beside its bundle.
    const help = spawnSync(join(root, 'usr/bin/engine'), ['--help'], { encoding: 'utf8' });
    assert.equal(help.status, 0, help.stderr);
    assert.match(help.stdout, /^Usage: engine/);
    const bash = spawnSync(join(root, 'usr/bin/engine'), ['completion', 'bash'], { encoding: 'utf8' });
    assert.equal(bash.status, 0, bash.stderr);
    assert.match(bash.stdout, /complete /);
  });
});

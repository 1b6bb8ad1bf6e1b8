// Rootless mode (issue (14 of 21)): hack/engined-rootless.sh starts `engined --rootless` inside
// rootlesskit (a user namespace from the user's subuid range, slirp4netns, the builtin port
// driver) as an ordinary user the test creates and removes. Per-user roots; containers run, log,
// exec, publish ports on the host's loopback through the port driver; build and commit; no
// cgroups on cgroup v1 (limits discarded with the reference's warnings).
// This machine's /dev/net/tun is root's alone (0600): the test gives the user a tun device node of
// its own, bound over /dev/net/tun in a private mount namespace, leaving the host's untouched.
import assert from 'node:assert/strict';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { join, resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { docker, testImages, type TestImages } from './harness/clients.ts';
import type { DaemonHandle } from './harness/daemon.ts';
import { startRegistry, type TestRegistry } from './registry/registry.ts';

const REPO = resolve(import.meta.dirname, '..', '..');
const SCRIPT = join(REPO, 'hack', 'engined-rootless.sh');
const ENGINED = join(REPO, 'bin', 'engined');
const USER = `engrl${process.pid % 100000}`;
const SUBID = ['/etc/subuid', '/etc/subgid'];

function readOr(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}

/** The first id after every range in an /etc/sub[ug]id file (100000 at least). */
function freeStart(text: string): number {
  let next = 100000;
  for (const line of text.split('\n')) {
    const [, start, count] = line.split(':');
    if (start && count) next = Math.max(next, Number(start) + Number(count));
  }
  return next;
}

function waitForSocket(path: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  return new Promise((resolveWait, reject) => {
    const attempt = () => {
      const s = createConnection(path);
      s.once('connect', () => {
        s.destroy();
        resolveWait();
      });
      s.once('error', () => {
        s.destroy();
        if (Date.now() > deadline) reject(new Error(`no daemon on ${path} after ${timeoutMs} ms`));
        else setTimeout(attempt, 200);
      });
    };
    attempt();
  });
}

/** Whether an ordinary user can reach the repository (every directory above it lets others pass). */
function reachableByOthers(path: string): boolean {
  for (let dir = path; dir !== '/'; dir = resolve(dir, '..')) if ((statSync(dir).mode & 0o001) === 0) return false;
  return true;
}

// The daemon runs from this checkout as the test's user: a checkout under a private directory
// (a home of 0700) cannot be run so, and the test says why instead of failing.
const unreachable = reachableByOthers(REPO) ? false : `${REPO} is not reachable by an ordinary user (a directory above it lacks o+x)`;

describe('rootless mode', { skip: unreachable }, () => {
  let dir: string;
  let runtime: string;
  let uid = 0;
  let launcher: ChildProcess | undefined;
  let logs = '';
  let imgs: TestImages;
  let reg: TestRegistry | undefined;
  const subids = Object.fromEntries(SUBID.map((f) => [f, readOr(f)]));
  const d = {} as { dockerHost: string; socket: string };
  const dk = async (...args: string[]) => {
    const r = await docker(d as DaemonHandle, args);
    if (r.code !== 0) throw new Error(`docker ${args.join(' ')}: exit ${r.code}: ${r.stderr}`);
    return r.stdout.trim();
  };

  before(async () => {
    imgs = await testImages();
    dir = mkdtempSync('/tmp/engine-rl-');
    chmodSync(dir, 0o711);
    execFileSync('useradd', ['-m', '-s', '/bin/sh', USER]);
    uid = Number(execFileSync('id', ['-u', USER], { encoding: 'utf8' }).trim());
    // Its range (useradd may have added one already).
    for (const f of SUBID) {
      const text = readOr(f) ?? '';
      if (!text.split('\n').some((l) => l.startsWith(`${USER}:`))) writeFileSync(f, `${text}${text && !text.endsWith('\n') ? '\n' : ''}${USER}:${freeStart(text)}:65536\n`);
    }
    runtime = join(dir, 'run');
    mkdirSync(runtime, { mode: 0o700 });
    chownSync(runtime, uid, uid);
    const tun = join(dir, 'tun');
    execFileSync('mknod', [tun, 'c', '10', '200']);
    chownSync(tun, uid, uid);
    chmodSync(tun, 0o600);
    d.socket = join(runtime, 'engine.sock');
    d.dockerHost = `unix://${d.socket}`;
    // A registry on the host's loopback, which the daemon reaches as 10.0.2.2 (host loopback allowed).
    reg = await startRegistry({});
    const regPort = reg.hostPort.split(':')[1];
    const inner = `cd /tmp && exec env XDG_RUNTIME_DIR=${runtime} HOME=/home/${USER} ENGINED_ROOTLESS_ROOTLESSKIT_DISABLE_HOST_LOOPBACK=false ${SCRIPT} --insecure-registry 10.0.2.2:${regPort}`;
    launcher = spawn('unshare', ['-m', '--propagation', 'private', 'sh', '-c', `mount --bind ${tun} /dev/net/tun && exec su ${USER} -s /bin/sh -c '${inner}'`], { stdio: ['ignore', 'pipe', 'pipe'] });
    launcher.stdout!.on('data', (c: Buffer) => (logs += c.toString()));
    launcher.stderr!.on('data', (c: Buffer) => (logs += c.toString()));
    await waitForSocket(d.socket, 90_000).catch((err: Error) => {
      throw new Error(`${err.message}\n${logs}`);
    });
    await dk('load', '-i', imgs.dockerArchive);
  });

  after(async () => {
    // The daemon by its pidfile, then whatever of the user's is left (all of it the test's own).
    const pid = Number(readOr(join(runtime ?? '/nonexistent', 'engine.pid'))?.trim() || 0);
    if (pid) {
      try {
        process.kill(pid, 'SIGTERM');
      } catch {
        // gone
      }
    }
    if (launcher && launcher.exitCode === null) await new Promise((r) => launcher!.once('exit', r)).then(() => undefined, () => undefined);
    let left: number[] = [];
    try {
      left = execFileSync('pgrep', ['-u', USER], { encoding: 'utf8' }).split('\n').filter(Boolean).map(Number);
    } catch {
      // none
    }
    for (const p of left) {
      try {
        process.kill(p, 'SIGKILL');
      } catch {
        // gone
      }
    }
    try {
      execFileSync('userdel', ['-r', USER], { stdio: 'ignore' });
    } catch {
      // its mail spool may be missing
    }
    for (const [f, text] of Object.entries(subids)) {
      if (text === undefined) rmSync(f, { force: true });
      else writeFileSync(f, text);
    }
    await reg?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('engined --rootless outside rootlesskit refuses and names the script', () => {
    let stderr = '';
    try {
      execFileSync(ENGINED, ['--rootless', '-p', join(dir, 'x.pid')], { env: { ...process.env, XDG_RUNTIME_DIR: dir, ROOTLESSKIT_STATE_DIR: '' }, stdio: ['ignore', 'ignore', 'pipe'], timeout: 60_000 });
    } catch (err) {
      stderr = String((err as { stderr?: Buffer }).stderr ?? '');
    }
    assert.match(stderr, /engined-rootless\.sh/);
  });

  test('per-user roots; docker info: name=rootless, no cgroup driver on cgroup v1', async () => {
    assert.ok(existsSync(join(runtime, 'engine.pid')));
    const info = JSON.parse(await dk('info', '--format', '{{json .}}')) as { SecurityOptions: string[]; DockerRootDir: string; CgroupDriver: string; CgroupVersion: string };
    assert.ok(info.SecurityOptions.includes('name=rootless'), JSON.stringify(info.SecurityOptions));
    assert.equal(info.DockerRootDir, `/home/${USER}/.local/share/engine`);
    if (info.CgroupVersion === '1') assert.equal(info.CgroupDriver, 'none');
  });

  test('a container runs as the user (its range above root), logs, exec; a limit is discarded with the reference\'s warning', async () => {
    const map = (await dk('run', '--rm', imgs.tag, 'cat', '/proc/self/uid_map')).split('\n').map((l) => l.trim().split(/\s+/).join(' '));
    assert.equal(map[0], `0 ${uid} 1`);
    await dk('run', '-d', '--name', 'r1', imgs.tag, 'sh', '-c', 'echo from-r1; sleep 300');
    for (let i = 0; i < 50 && !(await dk('logs', 'r1')).includes('from-r1'); i++) await new Promise((r) => setTimeout(r, 100));
    assert.equal(await dk('logs', 'r1'), 'from-r1');
    assert.equal(await dk('exec', 'r1', 'id', '-u'), '0');
    await dk('rm', '-f', 'r1');
    const limited = await docker(d as DaemonHandle, ['run', '--rm', '-m', '32m', imgs.tag, 'true']);
    assert.equal(limited.code, 0, limited.stderr);
    assert.match(limited.stderr, /Your kernel does not support memory limit capabilities or the cgroup is not mounted\. Limitation discarded\./);
  });

  test('-p publishes on the host\'s loopback through rootlesskit\'s port driver, and is gone with the container', async () => {
    const port = 20000 + (process.pid % 20000);
    await dk('run', '-d', '--name', 'web', '-p', `127.0.0.1:${port}:80`, imgs.tag, 'sh', '-c', 'while true; do echo pong | nc -l -p 80; done');
    let got = '';
    for (let i = 0; i < 50 && !got.includes('pong'); i++) {
      got = await new Promise<string>((r) => {
        const s = createConnection({ host: '127.0.0.1', port });
        let data = '';
        s.on('data', (c) => (data += c.toString()));
        s.on('end', () => r(data));
        s.on('error', () => r(''));
        s.setTimeout(2000, () => s.destroy());
      });
      if (!got.includes('pong')) await new Promise((r) => setTimeout(r, 200));
    }
    assert.match(got, /pong/);
    await dk('rm', '-f', 'web');
    const refused = await new Promise<boolean>((r) => {
      const s = createConnection({ host: '127.0.0.1', port });
      s.on('connect', () => {
        s.destroy();
        r(false);
      });
      s.on('error', () => r(true));
    });
    assert.ok(refused, 'the host port is closed once the container is removed');
  });

  test('the script names what is missing: a user without a subuid range, no newuidmap, root', () => {
    const run = (user: string, env: string) => {
      try {
        execFileSync('su', [user, '-s', '/bin/sh', '-c', `env ${env} ${SCRIPT}`], { stdio: ['ignore', 'pipe', 'pipe'], timeout: 30_000 });
        return '';
      } catch (err) {
        return String((err as { stderr?: Buffer }).stderr ?? '');
      }
    };
    const rt = join(dir, 'nobody-run');
    mkdirSync(rt, { mode: 0o700 });
    chownSync(rt, 65534, 65534);
    assert.match(run('nobody', `HOME=/tmp XDG_RUNTIME_DIR=${rt}`), /no subuid range for nobody in \/etc\/subuid/);
    // A PATH with rootlesskit and the tools the script uses, but no newuidmap.
    const bin = join(dir, 'bin');
    mkdirSync(bin);
    for (const t of ['rootlesskit', 'id', 'grep', 'dirname']) execFileSync('ln', ['-s', execFileSync('sh', ['-c', `command -v ${t}`], { encoding: 'utf8' }).trim(), join(bin, t)]);
    assert.match(run(USER, `PATH=${bin} HOME=/home/${USER} XDG_RUNTIME_DIR=${runtime}`), /newuidmap needs to be installed \(package uidmap\)/);
    assert.match(run('root', `HOME=/root XDG_RUNTIME_DIR=${rt}`), /run me as an ordinary user/);
  });

  test('push and pull through a registry on the host', async () => {
    const ref = `10.0.2.2:${reg!.hostPort.split(':')[1]}/rl/busybox:1`;
    await dk('tag', imgs.tag, ref);
    await dk('push', ref);
    await dk('rmi', ref);
    await dk('pull', ref);
    assert.equal(await dk('run', '--rm', ref, 'echo', 'pulled'), 'pulled');
  });

  test('build and commit', async () => {
    const ctx = join(dir, 'ctx');
    mkdirSync(ctx);
    writeFileSync(join(ctx, 'Dockerfile'), `FROM ${imgs.tag}\nRUN echo built > /b\n`);
    await dk('build', '-q', '-t', 'rl:built', ctx);
    assert.equal(await dk('run', '--rm', 'rl:built', 'cat', '/b'), 'built');
    await dk('run', '--name', 'c1', imgs.tag, 'sh', '-c', 'echo committed > /c');
    await dk('commit', 'c1', 'rl:committed');
    assert.equal(await dk('run', '--rm', 'rl:committed', 'cat', '/c'), 'committed');
  });
});

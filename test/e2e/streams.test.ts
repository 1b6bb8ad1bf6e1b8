// Stream semantics of attach and exec (issue 22, item 4), end to end: a request body never
// becomes stdin, a client's half-close is stdin EOF (output keeps coming until the process
// exits), detach keys end a session and leave the process running, a tty writes CRLF.
// Driven by the docker CLI (under a pseudo-terminal via script(1) where it needs one), dockerode,
// and a raw client on the daemon's unix socket.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { connect, type Socket } from 'node:net';
import type Docker from 'dockerode';
import { startDaemon, type DaemonHandle } from './harness/daemon.ts';
import { docker, dockerode, dockerOk, testImages } from './harness/clients.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(what: string, cond: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

/** Split a multiplexed stream into its stdout and stderr; throws on a malformed frame. */
function demux(buf: Buffer): { stdout: string; stderr: string } {
  const out: Record<number, Buffer[]> = { 1: [], 2: [] };
  let i = 0;
  while (i < buf.length) {
    assert.ok(i + 8 <= buf.length, `truncated frame header at ${i}`);
    const kind = buf[i];
    const len = buf.readUInt32BE(i + 4);
    assert.ok(kind === 1 || kind === 2, `unexpected stream id ${kind}`);
    out[kind].push(buf.subarray(i + 8, i + 8 + len));
    i += 8 + len;
  }
  return { stdout: Buffer.concat(out[1]).toString(), stderr: Buffer.concat(out[2]).toString() };
}

interface RawSession {
  sock: Socket;
  /** The response's status line and headers. */
  head: Promise<string>;
  /** Everything after the header block, so far. */
  body(): Buffer;
  /** Settles when the daemon ends its side of the connection. */
  ended: Promise<void>;
}

/**
 * A hand-written upgrade request on the daemon's socket, with a JSON body as dockerode sends one.
 * `firstBodyBytes` sends only that much of the body with the headers, the rest a moment later
 * (the daemon must read the remainder from the socket, not only from what came with the headers).
 */
function rawUpgrade(d: DaemonHandle, path: string, body: unknown, firstBodyBytes?: number): RawSession {
  const json = Buffer.from(JSON.stringify(body));
  const sock = connect(d.socket);
  let acc = Buffer.alloc(0);
  let headerEnd = -1;
  let resolveHead!: (h: string) => void;
  const head = new Promise<string>((r) => (resolveHead = r));
  sock.on('data', (c: Buffer) => {
    acc = Buffer.concat([acc, c]);
    if (headerEnd < 0) {
      const at = acc.indexOf('\r\n\r\n');
      if (at >= 0) {
        headerEnd = at + 4;
        resolveHead(acc.subarray(0, at).toString());
      }
    }
  });
  const ended = new Promise<void>((r) => {
    sock.on('end', () => r());
    sock.on('close', () => r());
  });
  sock.on('error', () => {});
  const request = Buffer.concat([
    Buffer.from(
      `POST ${path} HTTP/1.1\r\nHost: engine\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${json.length}\r\n\r\n`,
    ),
    json,
  ]);
  if (firstBodyBytes === undefined) sock.write(request);
  else {
    const cut = request.length - json.length + firstBodyBytes;
    sock.write(request.subarray(0, cut));
    setTimeout(() => sock.write(request.subarray(cut)), 200);
  }
  return { sock, head, body: () => (headerEnd < 0 ? Buffer.alloc(0) : acc.subarray(headerEnd)), ended };
}

interface PtyRun {
  child: ReturnType<typeof spawn>;
  out(): string;
  closed: Promise<number | null>;
  write(bytes: string): void;
}

/** A docker command under a pseudo-terminal (script(1)); bytes are typed with `write`. */
function dockerPty(d: DaemonHandle, args: string[]): PtyRun {
  const cmd = ['/usr/local/bin/docker', ...args].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ');
  const child = spawn('script', ['-qfec', cmd, '/dev/null'], {
    env: { ...process.env, DOCKER_HOST: d.dockerHost, TERM: 'xterm' },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (c) => (out += c));
  child.stderr!.on('data', (c) => (out += c));
  child.stdin!.on('error', () => {});
  const closed = new Promise<number | null>((r) => child.on('close', r));
  const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
  closed.finally(() => clearTimeout(timer));
  return { child, out: () => out, closed, write: (b) => child.stdin!.write(b) };
}

describe('stream semantics: request bodies, half-close, detach keys, tty line endings', () => {
  let d: DaemonHandle;
  let dd: Docker;
  let img: string;
  const dk = dockerOk(() => d);

  before(async () => {
    d = await startDaemon();
    dd = dockerode(d);
    const imgs = await testImages();
    img = imgs.tag;
    await dk('load', '-i', imgs.dockerArchive);
    await dk('run', '-d', '--name', 'sleeper', '--network', 'none', img, 'sleep', '600');
    await dk('run', '-dit', '--name', 'shell', '--network', 'none', img, 'sh');
  });
  after(async () => {
    await d?.cleanup();
  });

  test('a JSON body sent with an upgraded attach never reaches stdin', async () => {
    for (const split of [undefined, 5]) {
      const c = await dd.createContainer({
        Image: img,
        Cmd: ['cat'],
        OpenStdin: true,
        StdinOnce: true,
        AttachStdin: true,
        AttachStdout: true,
        AttachStderr: true,
        HostConfig: { NetworkMode: 'none' },
      });
      const s = rawUpgrade(d, `/v1.47/containers/${c.id}/attach?stream=1&stdin=1&stdout=1&stderr=1`, { stream: true, stdin: true, stdout: true, stderr: true, hijack: true }, split);
      assert.match(await s.head, /^HTTP\/1\.1 101 /);
      await sleep(400); // the rest of a split body has gone out
      await c.start();
      s.sock.write('from-stdin\n');
      s.sock.end();
      await s.ended;
      assert.deepEqual(demux(s.body()), { stdout: 'from-stdin\n', stderr: '' }, `split=${split}`);
      assert.equal((await c.wait()).StatusCode, 0);
      await c.remove();
    }
  });

  test('dockerode attach with stdin: its options body is not stdin, its end() is stdin EOF', async () => {
    const c = await dd.createContainer({
      Image: img,
      Cmd: ['sh', '-c', 'cat; sleep 0.5; echo done'],
      OpenStdin: true,
      StdinOnce: true,
      AttachStdin: true,
      AttachStdout: true,
      AttachStderr: true,
      HostConfig: { NetworkMode: 'none' },
    });
    const stream = (await c.attach({ stream: true, stdin: true, stdout: true, stderr: true, hijack: true })) as unknown as Socket;
    const chunks: Buffer[] = [];
    stream.on('data', (b: Buffer) => chunks.push(b));
    const ended = new Promise((r) => stream.on('end', r));
    await c.start();
    stream.write('node-in\n');
    stream.end();
    await ended;
    assert.deepEqual(demux(Buffer.concat(chunks)), { stdout: 'node-in\ndone\n', stderr: '' });
    assert.equal((await c.wait()).StatusCode, 0);
    await c.remove();
  });

  test('dockerode attach without hijack: the options body is consumed, output arrives', async () => {
    const c = await dd.createContainer({ Image: img, Cmd: ['sh', '-c', 'sleep 0.5; echo plain-out; echo plain-err >&2'], HostConfig: { NetworkMode: 'none' } });
    const stream = (await c.attach({ stream: true, stdout: true, stderr: true })) as NodeJS.ReadableStream;
    const chunks: Buffer[] = [];
    stream.on('data', (b: Buffer) => chunks.push(b));
    const ended = new Promise((r) => stream.on('end', r));
    await c.start();
    await ended;
    assert.deepEqual(demux(Buffer.concat(chunks)), { stdout: 'plain-out\n', stderr: 'plain-err\n' });
    // The end of the output is not yet the recorded exit: wait for that before removing.
    assert.equal((await c.wait()).StatusCode, 0);
    await c.remove();
  });

  test('half-close is stdin EOF: piped exec -i and run -i get all output', async () => {
    const hi = await docker(d, ['exec', '-i', 'sleeper', 'cat'], { input: 'hi\n' });
    assert.deepEqual([hi.code, hi.stdout, hi.stderr], [0, 'hi\n', '']);
    // Output written well after stdin ended still arrives, and the exit code is the process's.
    const late = await docker(d, ['exec', '-i', 'sleeper', 'sh', '-c', 'cat; sleep 1; echo after; exit 3'], { input: 'x\n' });
    assert.deepEqual([late.code, late.stdout], [3, 'x\nafter\n']);
    const run = await docker(d, ['run', '--rm', '-i', '--network', 'none', img, 'sh', '-c', 'cat; echo done'], { input: 'a\nb\n' });
    assert.deepEqual([run.code, run.stdout, run.stderr], [0, 'a\nb\ndone\n', '']);
    // A large input goes through whole.
    const big = 'y'.repeat(300_000) + '\n';
    const wc = await docker(d, ['exec', '-i', 'sleeper', 'wc', '-c'], { input: big });
    assert.equal(wc.stdout.trim(), String(big.length));
  });

  test('exec without stdin: the CLI half-closes at once and output still arrives', async () => {
    const r = await docker(d, ['exec', 'sleeper', 'sh', '-c', 'sleep 1; echo slow']);
    assert.deepEqual([r.code, r.stdout], [0, 'slow\n']);
  });

  test('detach keys end an exec -it session and leave the process running (default and --detach-keys)', async () => {
    for (const [flags, keys, marker] of [
      [[], '\x10\x11', 'sleep 601'],
      [['--detach-keys', 'ctrl-x,x'], '\x18x', 'sleep 602'],
    ] as const) {
      const p = dockerPty(d, ['exec', '-it', ...flags, 'sleeper', 'sh', '-c', `echo ready; exec ${marker}`]);
      await until('exec output', () => p.out().includes('ready'));
      p.write(keys);
      const code = await Promise.race([p.closed, sleep(10_000).then(() => 'timeout')]);
      assert.notEqual(code, 'timeout', `exec ${flags.join(' ')} did not detach: ${p.out()}`);
      assert.match(await dk('top', 'sleeper'), new RegExp(marker));
    }
  });

  test('detach keys end a docker attach session (default ctrl-p,ctrl-q)', async () => {
    const p = dockerPty(d, ['attach', 'shell']);
    await sleep(1000);
    p.write('echo att-$((20+1))\r');
    await until('attach output', () => p.out().includes('att-21'));
    p.write('\x10\x11');
    const code = await Promise.race([p.closed, sleep(10_000).then(() => 'timeout')]);
    assert.notEqual(code, 'timeout', p.out());
    assert.match(p.out(), /read escape sequence/);
    assert.equal(await dk('inspect', '--format', '{{.State.Running}}', 'shell'), 'true');
  });

  test('the detachKeys query parameter ends a raw attach; the container keeps running', async () => {
    const id = await dk('inspect', '--format', '{{.Id}}', 'shell');
    const s = rawUpgrade(d, `/containers/${id}/attach?stream=1&stdin=1&stdout=1&stderr=1&detachKeys=ctrl-a,b`, { stream: true });
    assert.match(await s.head, /^HTTP\/1\.1 101 /);
    s.sock.write('echo raw-$((3+4))\n');
    await until('raw attach output', () => s.body().includes('raw-7'));
    // A lone first key (then something else) is passed through; the full sequence detaches.
    s.sock.write('\x01');
    await sleep(100);
    s.sock.write('\x01b');
    const r = await Promise.race([s.ended.then(() => 'ended'), sleep(10_000).then(() => 'timeout')]);
    assert.equal(r, 'ended');
    s.sock.destroy();
    assert.equal(await dk('inspect', '--format', '{{.State.Running}}', 'shell'), 'true');
    // A malformed sequence is refused before the upgrade.
    const bad = rawUpgrade(d, `/containers/${id}/attach?stream=1&stdin=1&detachKeys=ctrl-1`, {});
    assert.match(await bad.head, /^HTTP\/1\.1 400 /);
    bad.sock.destroy();
  });

  test('an exec created with DetachKeys detaches on them; the exec keeps running', async () => {
    const c = dd.getContainer('sleeper');
    const ex = await c.exec({ Cmd: ['sh'], AttachStdin: true, AttachStdout: true, AttachStderr: true, Tty: true, DetachKeys: 'ctrl-e,e' });
    const s = rawUpgrade(d, `/exec/${ex.id}/start`, { Detach: false, Tty: true });
    assert.match(await s.head, /^HTTP\/1\.1 101 /);
    s.sock.write('echo ex-$((1+1))\n');
    await until('exec output', () => s.body().includes('ex-2'));
    s.sock.write('\x05e');
    const r = await Promise.race([s.ended.then(() => 'ended'), sleep(10_000).then(() => 'timeout')]);
    assert.equal(r, 'ended');
    s.sock.destroy();
    const info = await ex.inspect();
    assert.equal(info.Running, true);
  });

  test('a tty writes CRLF line endings: exec -t, run -t, dockerode exec with Tty', async () => {
    const e = await docker(d, ['exec', '-t', 'sleeper', 'printf', 'a\\nb\\n']);
    assert.deepEqual([e.code, e.stdout], [0, 'a\r\nb\r\n']);
    const r = await docker(d, ['run', '--rm', '-t', '--network', 'none', img, 'printf', 'c\\nd\\n']);
    assert.deepEqual([r.code, r.stdout], [0, 'c\r\nd\r\n']);
    const ex = await dd.getContainer('sleeper').exec({ Cmd: ['printf', 'e\\nf\\n'], AttachStdout: true, AttachStderr: true, Tty: true });
    const stream = (await ex.start({ hijack: true, stdin: false, Tty: true })) as unknown as Socket;
    const chunks: Buffer[] = [];
    stream.on('data', (b: Buffer) => chunks.push(b));
    await new Promise((res) => stream.on('end', res));
    assert.equal(Buffer.concat(chunks).toString(), 'e\r\nf\r\n');
    // Without a tty the bytes are the process's own.
    const plain = await docker(d, ['exec', 'sleeper', 'printf', 'g\\nh\\n']);
    assert.equal(plain.stdout, 'g\nh\n');
  });
});

// Stream semantics of attach and exec (issue 22, item 4), end to end: a request body never
// becomes stdin, a client's half-close is stdin EOF (output keeps coming until the process
// exits), detach keys end a session, leave the process running and publish `detach` /
// `exec_detach`, a tty writes CRLF, and the websocket attach (`GET /containers/{id}/attach/ws`).
// Driven by the docker CLI (under a pseudo-terminal via script(1) where it needs one), dockerode,
// docker-py (websocket-client) and raw clients on the daemon's unix socket.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import type Docker from 'dockerode';
import { startDaemon, type DaemonHandle } from './harness/daemon.ts';
import { docker, dockerode, dockerOk, pythonDocker, testImages } from './harness/clients.ts';
import { readResponse, wsClient, type RawResponse } from './harness/ws-client.ts';

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

interface RawSession extends RawResponse {
  sock: Socket;
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
  const res = readResponse(sock);
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
  return { sock, ...res, ended };
}

/** Events of `action` about `container` recorded since `since` (a `docker events --since` value). */
async function eventsSince(dk: (...a: string[]) => Promise<string>, since: string, action: string, container: string): Promise<string[]> {
  const until = (Date.now() / 1000 + 1).toFixed(3);
  const out = await dk('events', '--since', since, '--until', until, '--filter', `event=${action}`, '--filter', `container=${container}`, '--format', '{{.Action}} {{.Actor.Attributes.name}} {{.Actor.Attributes.execID}}');
  return out.split('\n').filter(Boolean);
}

const nowSince = () => (Date.now() / 1000 - 0.5).toFixed(3);

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
    const since = nowSince();
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
    // The CLI spots the keys itself and only closes its connection: the daemon never sees them,
    // so (as with the reference) no exec_detach is published. Raw clients below do see one.
    assert.deepEqual(await eventsSince(dk, since, 'exec_detach', 'sleeper'), []);
  });

  test('detach keys end a docker attach session (default ctrl-p,ctrl-q)', async () => {
    const since = nowSince();
    const p = dockerPty(d, ['attach', 'shell']);
    await sleep(1000);
    p.write('echo att-$((20+1))\r');
    await until('attach output', () => p.out().includes('att-21'));
    p.write('\x10\x11');
    const code = await Promise.race([p.closed, sleep(10_000).then(() => 'timeout')]);
    assert.notEqual(code, 'timeout', p.out());
    assert.match(p.out(), /read escape sequence/);
    assert.equal(await dk('inspect', '--format', '{{.State.Running}}', 'shell'), 'true');
    // As for exec: the CLI keeps the keys to itself, so there is no detach event.
    assert.deepEqual(await eventsSince(dk, since, 'detach', 'shell'), []);
  });

  test('the detachKeys query parameter ends a raw attach; the container keeps running; a detach event is published', async () => {
    const since = nowSince();
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
    // An attach's detach carries no execID (the template prints a missing key as <no value>).
    assert.deepEqual(await eventsSince(dk, since, 'detach', 'shell'), ['detach shell <no value>']);
    // A malformed sequence is refused before the upgrade.
    const bad = rawUpgrade(d, `/containers/${id}/attach?stream=1&stdin=1&detachKeys=ctrl-1`, {});
    assert.match(await bad.head, /^HTTP\/1\.1 400 /);
    bad.sock.destroy();
  });

  test('an exec created with DetachKeys detaches on them; the exec keeps running; exec_detach is published', async () => {
    const since = nowSince();
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
    assert.deepEqual(await eventsSince(dk, since, 'exec_detach', 'sleeper'), [`exec_detach sleeper ${ex.id}`]);
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
  test('websocket attach: a line sent to a running cat comes back in binary frames; close leaves it running', async () => {
    await dk('run', '-di', '--name', 'wscat', '--network', 'none', img, 'cat');
    const ws = wsClient(`ws+unix://${d.socket}:/v1.47/containers/wscat/attach/ws?stream=1&stdin=1&stdout=1&stderr=1`);
    assert.match(await ws.head, /^HTTP\/1\.1 101 /);
    ws.ws.send('over-ws\n');
    await until('echo over the websocket', () => ws.messages().map((m) => m.data.toString()).join('') === 'over-ws\n');
    assert.ok(ws.messages().every((m) => m.binary), 'output goes out in binary frames');
    ws.ws.send(Buffer.from('binary-in\n'));
    await until('second echo', () => ws.messages().map((m) => m.data.toString()).join('').endsWith('binary-in\n'));
    ws.ws.ping('ping');
    await until('pong', () => ws.pongs().some((p) => p.toString() === 'ping'));
    ws.ws.close(1000);
    assert.equal((await ws.ended).code, 1000, 'close answered');
    assert.equal(await dk('inspect', '--format', '{{.State.Running}}', 'wscat'), 'true');
    // A plain GET (no upgrade) is refused.
    const raw = connect(d.socket);
    let answer = '';
    raw.on('data', (c) => (answer += c));
    raw.write('GET /containers/wscat/attach/ws?stream=1 HTTP/1.1\r\nHost: engine\r\nConnection: close\r\n\r\n');
    await new Promise((r) => raw.on('close', r));
    assert.match(answer, /^HTTP\/1\.1 400 /);
  });

  test('docker-py attach_socket(ws=True) (through a TCP relay: over a unix socket docker-py builds an http+docker:// URL websocket-client refuses)', async () => {
    // docker-py turns only http:// and https:// base URLs into ws:// ones, so point it at TCP.
    const relay: Server = createServer((c) => {
      const u = connect(d.socket);
      c.pipe(u).pipe(c);
      c.on('error', () => u.destroy());
      u.on('error', () => c.destroy());
    });
    await new Promise<void>((r) => relay.listen(0, '127.0.0.1', r));
    const port = (relay.address() as AddressInfo).port;
    try {
      const out = await pythonDocker(
        d,
        `
        tcp = docker.APIClient(base_url='tcp://127.0.0.1:${port}', version='auto', timeout=60)
        ws = tcp.attach_socket('wscat', params={'stdin': 1, 'stream': 1, 'stdout': 1}, ws=True)
        ws.send('from-py\\n')
        got = b''
        while b'from-py\\n' not in got:
            m = ws.recv()
            got += m if isinstance(m, bytes) else m.encode()
        ws.close()
        # The brief form: stdin only; the line reaches cat (its output is in the log).
        ws = tcp.attach_socket('wscat', params={'stdin': 1, 'stream': 1}, ws=True)
        ws.send('py-stdin-only\\n')
        ws.close()
        print(json.dumps(got.decode()))
        `,
      );
      assert.equal(JSON.parse(out.trim()), 'from-py\n');
      await until('stdin-only line in the log', async () => (await docker(d, ['logs', 'wscat'])).stdout.includes('py-stdin-only'));
    } finally {
      relay.close();
    }
    // Over the unix socket itself docker-py cannot open a websocket (its URL scheme stays http+docker).
    await assert.rejects(pythonDocker(d, `api.attach_socket('wscat', params={'stdin': 1, 'stream': 1}, ws=True)`), /http\+docker|scheme|Invalid URL|url/i);
  });
});

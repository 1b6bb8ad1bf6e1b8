// Behaviours of the reference daemon that clients depend on ((5 of 15)), each through a real
// client: a container its restart policy starts again is `restarting` from its exit (and not
// removable without force); network inspect shows IPAM.Options as the client sent it.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { docker, dockerOk, dockerode, dockerTty, pythonDocker, type TestImages } from './harness/clients.ts';
import type { DaemonHandle } from './harness/daemon.ts';
import { removeAllAndCleanup, startWithImages } from './harness/setup.ts';

describe('what clients depend on', () => {
  let d: DaemonHandle;
  let imgs: TestImages;
  const dk = dockerOk(() => d);
  before(async () => {
    ({ d, imgs } = await startWithImages());
  });
  after(() => removeAllAndCleanup(d));

  test('a container its policy restarts is restarting right after wait returns; rm without force is refused in the reference words', async () => {
    const api = dockerode(d);
    const id = await dk('run', '-d', '--name', 'again', '--restart', 'always', imgs.tag, 'sh', '-c', 'exit 3');
    const c = api.getContainer(id);
    const waited = (await c.wait()) as { StatusCode: number };
    const state = (await c.inspect()).State;
    assert.equal(waited.StatusCode, 3);
    assert.equal(state.Status, 'restarting', 'not exited: the policy starts it again');
    assert.equal(state.Restarting, true);
    // The back-off doubles while runs stay short: once it is long, the CLI's rm finds it restarting.
    let info = await c.inspect();
    for (let i = 0; i < 200 && !(info.State.Restarting && info.RestartCount >= 4); i++) {
      await new Promise((r) => setTimeout(r, 50));
      info = await c.inspect();
    }
    assert.equal(info.State.Restarting, true, `restarting with a long back-off (restart count ${info.RestartCount})`);
    const rm = await docker(d, ['rm', 'again']);
    assert.notEqual(rm.code, 0);
    assert.match(rm.stderr, new RegExp(`You cannot remove a restarting container ${id}\\. Stop the container before attempting removal or force remove`));
    await dk('rm', '-f', 'again');
    assert.equal((await docker(d, ['inspect', 'again'])).code, 1, 'force removes it');
  });

  // What dockerd 20.10 answers (asked side by side): Options as sent, and null when not sent.
  test('IPAM.Options as sent: docker-py (no Options) and a body without IPAM read null; the CLI ({}) reads {}', async () => {
    const out = await pythonDocker(d, `
      from docker.types import IPAMConfig
      n = client.networks.create('ipam-null', ipam=IPAMConfig())
      n.reload()
      print(json.dumps(n.attrs['IPAM']['Options']))
    `);
    assert.equal(out.trim().split('\n').pop(), 'null');
    await dk('network', 'create', 'ipam-cli');
    assert.equal(await dk('network', 'inspect', '-f', '{{json .IPAM.Options}}', 'ipam-cli'), '{}');
    const api = dockerode(d);
    const net = await api.createNetwork({ Name: 'ipam-none' });
    assert.equal((await net.inspect()).IPAM?.Options, null);
    const empty = await api.createNetwork({ Name: 'ipam-empty', IPAM: { Driver: 'default', Options: {}, Config: [] } });
    assert.deepEqual((await empty.inspect()).IPAM?.Options, {});
  });

  test('docker diff: an added path is A (Kind 1), a changed one C (0), a deleted one D (2); the daemon\'s own mount points are not reported', async () => {
    await dk('run', '--name', 'changed', imgs.tag, 'sh', '-c', 'touch /test && rm /bin/true');
    assert.deepEqual((await dk('diff', 'changed')).split('\n'), ['C /bin', 'D /bin/true', 'A /test']);
    const api = dockerode(d);
    await dk('run', '--name', 'touched', imgs.tag, 'touch', '/test');
    assert.deepEqual(await api.getContainer('touched').changes(), [{ Path: '/test', Kind: 1 }]);
  });

  test('an exec created with Tty runs on a terminal whatever its start asks: CRLF, /dev/pts/N, one stream, resize reaches stty size', async () => {
    await dk('run', '-d', '--name', 'term', imgs.tag, 'sleep', '300');
    // The CLI: -t at create and at start, raw output.
    const cli = await docker(d, ['exec', '-t', 'term', 'sh', '-c', 'echo one; echo err >&2; tty']);
    assert.equal(cli.code, 0);
    assert.match(cli.stdout, /^one\r\nerr\r\n\/dev\/pts\/\d+\r\n$/);
    // docker-py: created with tty=True, started with Tty false: framed output, still a terminal.
    const py = await pythonDocker(d, `
      e = api.exec_create('term', ['sh', '-c', 'echo two; tty'], tty=True)
      out = api.exec_start(e['Id'])
      print(json.dumps(out.decode()))
    `);
    assert.match(JSON.parse(py.trim().split('\n').pop()!), /^two\r\n\/dev\/pts\/\d+\r\n$/);
    // dockerode: POST /exec/{id}/resize changes what the terminal says its size is.
    const ex = await dockerode(d).getContainer('term').exec({ Cmd: ['sh', '-c', 'sleep 1; stty size'], Tty: true, AttachStdout: true, AttachStderr: true });
    const stream = await ex.start({ hijack: true, stdin: false, Tty: true });
    let text = '';
    stream.on('data', (c: Buffer) => (text += c.toString()));
    const ended = new Promise((r) => stream.on('end', r));
    // Sent at once, as clients do: the reference waits for the exec's process, then resizes it.
    await ex.resize({ h: 40, w: 100 });
    await ended;
    assert.equal(text, '40 100\r\n');
  });

  test('detach keys end the session and leave the process running: exec --detach-keys (one key), ctrl-p ctrl-q by default, the detachKeys query of attach', async () => {
    await dk('run', '-dit', '--name', 'keys', imgs.tag, 'sh');
    const running = async (pattern: RegExp) => assert.match(await dk('exec', 'keys', 'ps'), pattern);
    // docker exec --detach-keys goes in the exec's create body (DetachKeys): a single key.
    const one = await dockerTty(d, ['exec', '-it', '--detach-keys', 'ctrl-p', 'keys', 'sh', '-c', 'echo in-exec; exec sleep 301'], '\x10\n');
    assert.match(one.out, /in-exec/);
    await running(/sleep 301/);
    // The default sequence, on an exec created without DetachKeys.
    const two = await dockerTty(d, ['exec', '-it', 'keys', 'sh', '-c', 'echo second; exec sleep 302'], '\x10\x11\n');
    assert.match(two.out, /second/);
    await running(/sleep 302/);
    // dockerode: attach with the detachKeys query; the stream ends, the container runs on.
    const c = dockerode(d).getContainer('keys');
    const stream = (await c.attach({ stream: true, stdin: true, stdout: true, stderr: true, hijack: true, detachKeys: 'ctrl-x' })) as NodeJS.ReadWriteStream;
    const ended = new Promise((r) => stream.on('end', r));
    stream.write(Buffer.from([0x18]));
    await ended;
    assert.equal((await c.inspect()).State.Running, true);
  });
});

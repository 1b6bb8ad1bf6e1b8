// What real clients tripped over (issue 77), each case as dockerd 20.10 answers it: a MAC address
// given at connect shown before the start (dockerode), links given at connect resolved by name when
// asked, their target made after the link (CLI and docker-py, a running and a created container),
// DetachKeys of an exec's create body ending its hijacked session (docker-py, as it sends them:
// `detachKeys`), and compose 1.29's one-off run without the CLI (create, start, attach, wait).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { docker, dockerode, dockerOk, pythonDocker } from './harness/clients.ts';
import type { DaemonHandle } from './harness/daemon.ts';
import { removeAllAndCleanup, startWithImages } from './harness/setup.ts';

describe('what clients trip over', () => {
  let d: DaemonHandle;
  const dk = dockerOk(() => d);
  let img = '';

  before(async () => {
    const s = await startWithImages();
    d = s.d;
    img = s.imgs.tag;
  });
  after(() => removeAllAndCleanup(d));

  test('dockerode: a MacAddress given at connect is shown by inspect before the start, and is the address after it', async () => {
    await dk('network', 'create', 'macnet');
    await dk('network', 'create', 'macnet2');
    try {
      await dk('create', '--name', 'mac1', '--network', 'macnet2', img, 'sleep', '60');
      await dockerode(d).getNetwork('macnet').connect({ Container: 'mac1', EndpointConfig: { MacAddress: '02:11:22:33:44:55' } });
      const fmt = '{{(index .NetworkSettings.Networks "macnet").MacAddress}}';
      assert.equal(await dk('inspect', '-f', fmt, 'mac1'), '02:11:22:33:44:55');
      await dk('start', 'mac1');
      assert.equal(await dk('inspect', '-f', fmt, 'mac1'), '02:11:22:33:44:55');
      assert.match(await dk('exec', 'mac1', 'ip', 'link'), /link\/ether 02:11:22:33:44:55/);
    } finally {
      await docker(d, ['rm', '-f', 'mac1']);
      await docker(d, ['network', 'rm', 'macnet', 'macnet2']);
    }
  });

  /** Asks `name` from inside `ctr` until it answers `ip` (the target's start is recorded a moment after the CLI returns). */
  async function resolves(ctr: string, name: string, ip: string): Promise<void> {
    let seen = '';
    for (let i = 0; i < 10 && !seen.includes(`Address: ${ip}`); i++) {
      if (i) await new Promise((r) => setTimeout(r, 200));
      seen = (await docker(d, ['exec', ctr, 'nslookup', name])).stdout;
    }
    assert.match(seen, new RegExp(`Address:\\s+${ip.replace(/\./g, '\\.')}`), seen);
  }

  const ipOn = (ctr: string, net: string) => dk('inspect', '-f', `{{(index .NetworkSettings.Networks "${net}").IPAddress}}`, ctr);

  test('docker CLI: --link at connect names a container made later; a running and a created container resolve it once it starts', async () => {
    await dk('network', 'create', 'linkat');
    try {
      // Running: disconnected from its own network and connected again, with the link.
      await dk('run', '-d', '--name', 'runner', '--network', 'linkat', img, 'sleep', '60');
      await dk('network', 'disconnect', 'linkat', 'runner');
      await dk('network', 'connect', '--link', 'later:lal', 'linkat', 'runner');
      assert.equal(await dk('inspect', '-f', '{{json (index .NetworkSettings.Networks "linkat").Links}}', 'runner'), '["later:lal"]');
      await dk('run', '-d', '--name', 'later', '--network', 'linkat', img, 'sleep', '60');
      await resolves('runner', 'lal', await ipOn('later', 'linkat'));
      // Its own name too: its names are asked on the network it is back on.
      await resolves('runner', 'later', await ipOn('later', 'linkat'));
      // Created: the link given before its start, its target started after it.
      await dk('create', '--name', 'made', '--network', 'linkat', img, 'sleep', '60');
      await dk('network', 'disconnect', 'linkat', 'made');
      await dk('network', 'connect', '--link', 'later2:lal2', 'linkat', 'made');
      await dk('start', 'made');
      await dk('run', '-d', '--name', 'later2', '--network', 'linkat', img, 'sleep', '60');
      await resolves('made', 'lal2', await ipOn('later2', 'linkat'));
    } finally {
      await docker(d, ['rm', '-f', 'runner', 'later', 'made', 'later2']);
      await docker(d, ['network', 'rm', 'linkat']);
    }
  });

  test('docker-py: links at connect (running and created), the target started afterwards, resolved by the alias', async () => {
    await dk('network', 'create', 'pylink');
    try {
      const out = await pythonDocker(d, `
        a = api.create_container('${img}', ['sleep', '60'], name='pyrun', host_config=api.create_host_config(network_mode='pylink'))
        api.start(a)
        api.disconnect_container_from_network(a, 'pylink')
        api.connect_container_to_network(a, 'pylink', links=[('pytarget', 'pyal')])
        b = api.create_container('${img}', ['sleep', '60'], name='pymade', host_config=api.create_host_config(network_mode='pylink'))
        api.disconnect_container_from_network(b, 'pylink')
        api.connect_container_to_network(b, 'pylink', links={'pytarget': 'pyal2'})
        api.start(b)
        t = api.create_container('${img}', ['sleep', '60'], name='pytarget', host_config=api.create_host_config(network_mode='pylink'))
        api.start(t)
        print(api.inspect_container(t)['NetworkSettings']['Networks']['pylink']['IPAddress'])
      `);
      const ip = out.trim();
      await resolves('pyrun', 'pyal', ip);
      await resolves('pymade', 'pyal2', ip);
    } finally {
      await docker(d, ['rm', '-f', 'pyrun', 'pymade', 'pytarget']);
      await docker(d, ['network', 'rm', 'pylink']);
    }
  });

  test('docker-py: DetachKeys of the exec create body end the hijacked tty session, the process left running; a bad sequence is refused', async () => {
    await dk('run', '-d', '--name', 'detacher', img, 'sleep', '60');
    try {
      const out = await pythonDocker(d, `
        import time
        for keys, press in (('ctrl-p', b'\\x10'), ('ctrl-x,y', b'\\x18y'), ('a,ctrl-@', b'a\\x00')):
            ex = api.exec_create('detacher', ['sh', '-c', 'cat; echo done'], stdin=True, tty=True, detach_keys=keys)
            sock = api.exec_start(ex, tty=True, socket=True)._sock
            sock.settimeout(10)
            sock.sendall(b'hi\\n')
            got = b''
            while got.count(b'hi') < 2:
                got += sock.recv(100)
            sock.sendall(press)
            rest = b''
            while True:
                chunk = sock.recv(100)
                if not chunk:
                    break
                rest += chunk
            print(keys, 'detached', rest == b'', api.exec_inspect(ex)['Running'])
        try:
            api.exec_create('detacher', ['true'], detach_keys='bogus-key')
            print('bogus accepted')
        except docker.errors.APIError as e:
            print('bogus', e.response.status_code, e.explanation)
      `);
      assert.deepEqual(out.trim().split('\n'), [
        'ctrl-p detached True True',
        'ctrl-x,y detached True True',
        'a,ctrl-@ detached True True',
        'bogus 400 Invalid escape keys (bogus-key) provided',
      ]);
    } finally {
      await docker(d, ['rm', '-f', 'detacher']);
    }
  });

  test('docker-compose 1.29: run --rm -T without the CLI (init, tmpfs, ulimits) returns and prints the output, also of a command that writes at once', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'engine-compose-run-'));
    try {
      writeFileSync(join(dir, 'docker-compose.yml'), [
        'version: "3.7"',
        'services:',
        '  api:',
        `    image: ${img}`,
        '    command: ["sh", "-c", "echo 1; sleep 300"]',
        '    init: true',
        '    tmpfs: [/scratch]',
        '    ulimits:',
        '      nofile: {soft: 321, hard: 654}',
        '',
      ].join('\n'));
      // COMPOSE_INTERACTIVE_NO_CLI: compose's own attach (dockerpty): create, start, the three
      // attach sockets opened after the start, and a second start when it finds the container
      // already stopped; then wait.
      const run = (cmd: string) =>
        new Promise<{ code: number | null; out: string }>((resolve) => {
          execFile('docker-compose', ['-p', 'app2', 'run', '--rm', '-T', 'api', 'sh', '-c', cmd], {
            cwd: dir, encoding: 'utf8', timeout: 60_000,
            env: { ...process.env, DOCKER_HOST: d.dockerHost, COMPOSE_INTERACTIVE_NO_CLI: '1' },
          }, (err, stdout) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, out: stdout }));
        });
      // Output written after the attach: every time.
      for (let i = 0; i < 2; i++) assert.deepEqual(await run('sleep 0.5; echo oneoff'), { code: 0, out: 'oneoff\n' });
      // Written at once (the regression: the attach, made after the process ended but before its
      // stop was recorded, waited for a next run while inspect showed the container running, so
      // compose never started it again). Inspect now waits for the stop being recorded and an
      // attach made after the run's output closed waits for the next run, as the reference's: compose
      // finds the container stopped, starts it again, and the second run's output reaches it.
      // dockerd 20.10 printed it 8 runs in 10 here (an attach before its Reset gets nothing); this
      // daemon 10 in 10 when idle, 3 in 5 in a suite run (the window between the write and the
      // output's end, in which compose's late attach gets nothing, widens under load: the race is
      // compose's, attaching after the start). What must hold every time: each run returns with
      // the command's status, prints the output or nothing, never a part; and the second start's
      // output reaches the attach at least once (a rate asserted here would make the test flaky).
      const outs: string[] = [];
      for (let i = 0; i < 5; i++) {
        const r = await run('echo oneoff');
        assert.equal(r.code, 0, r.out);
        assert.match(r.out, /^(oneoff\n)?$/);
        outs.push(r.out);
      }
      assert.ok(outs.includes('oneoff\n'), JSON.stringify(outs));
    } finally {
      await docker(d, ['rm', '-f', ...(await docker(d, ['ps', '-aq', '--filter', 'label=com.docker.compose.project=app2'])).stdout.trim().split('\n').filter(Boolean)]);
      await docker(d, ['network', 'rm', 'app2_default']);
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

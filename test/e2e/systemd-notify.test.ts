// systemd's readiness protocol (issue (16 of 21), 2): the daemon given a NOTIFY_SOCKET sends READY=1
// once its API serves, RELOADING=1 then READY=1 around a SIGHUP reload, STOPPING=1 at shutdown, with
// STATUS= lines; the shipped units (contrib/systemd) pass `systemd-analyze verify`.
import assert from 'node:assert/strict';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { startDaemon, type DaemonHandle } from './harness/daemon.ts';

const REPO = resolve(import.meta.dirname, '..', '..');

// A unix datagram receiver (Node has none): each datagram one line of the file, newlines as '|'.
const RECEIVER = `
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
out = open(sys.argv[2], 'a', buffering=1)
print('bound', flush=True)
while True:
    d = s.recv(65536).decode()
    out.write(d.replace('\\n', '|') + '\\n')
`;

describe('systemd notify', () => {
  let dir: string;
  let receiver: ChildProcess;
  let d: DaemonHandle | undefined;
  const lines = () => readFileSync(join(dir, 'got'), 'utf8').split('\n').filter(Boolean);
  const waitFor = async (what: RegExp, from = 0) => {
    for (let i = 0; i < 100; i++) {
      const found = lines().slice(from).findIndex((l) => what.test(l));
      if (found >= 0) return from + found;
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.fail(`no datagram ${what} in ${JSON.stringify(lines())}`);
  };

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'engine-notify-'));
    writeFileSync(join(dir, 'got'), '');
    writeFileSync(join(dir, 'recv.py'), RECEIVER);
    receiver = spawn('python3', [join(dir, 'recv.py'), join(dir, 'notify.sock'), join(dir, 'got')], { stdio: ['ignore', 'pipe', 'inherit'] });
    await new Promise((r) => receiver.stdout!.once('data', r));
  });
  after(async () => {
    await d?.cleanup();
    receiver.kill();
    rmSync(dir, { recursive: true, force: true });
  });

  test('READY=1 when the API serves; RELOADING=1 then READY=1 around SIGHUP; STOPPING=1 at the end', async () => {
    d = await startDaemon({ env: { NOTIFY_SOCKET: join(dir, 'notify.sock') } });
    const ready = await waitFor(/^READY=1\|STATUS=serving the Engine API on /);
    process.kill(d.pid, 'SIGHUP');
    const reloading = await waitFor(/^RELOADING=1\|STATUS=reloading the configuration$/, ready + 1);
    await waitFor(/^READY=1\|STATUS=(configuration reloaded|reload refused)/, reloading + 1);
    await d.stop();
    await waitFor(/^STOPPING=1\|STATUS=shutting down$/);
  });

  test('the shipped units pass systemd-analyze verify', () => {
    const units = join(dir, 'units');
    execFileSync('mkdir', ['-p', units]);
    // The installed path of the daemon is the package's; here, the checkout's launcher.
    writeFileSync(join(units, 'engine.service'), readFileSync(join(REPO, 'contrib', 'systemd', 'engine.service'), 'utf8').replace('/usr/bin/engined', join(REPO, 'bin', 'engined')));
    writeFileSync(join(units, 'engine.socket'), readFileSync(join(REPO, 'contrib', 'systemd', 'engine.socket'), 'utf8'));
    const out = execFileSync('systemd-analyze', ['verify', '--man=no', join(units, 'engine.service'), join(units, 'engine.socket')], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    assert.equal(out.trim(), '');
  });
});

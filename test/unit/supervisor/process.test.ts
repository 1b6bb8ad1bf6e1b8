// The supervisor process manager: config, adoption of a containerd left by a previous daemon,
// restart after a crash (adopted and own child), and stop.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isAlive, startSupervisor, supervisorConfig } from '../../../drivers/supervisor/process.ts';
import type { SupervisorProcess } from '../../../drivers/supervisor/process.ts';
import { createSupervisorClient } from '../../../drivers/supervisor/client.ts';
import { subscribeEvents } from '../../../drivers/supervisor/events.ts';
import { haveBinaries, killShims, testLogger, until } from './helpers.ts';

const skip = haveBinaries();
const processModule = fileURLToPath(new URL('../../../drivers/supervisor/process.ts', import.meta.url));

test('generated config disables CRI unless asked and points everything at our dirs', () => {
  const c = supervisorConfig({ root: '/d/containerd', state: '/r/containerd/state', address: '/r/containerd/containerd.sock' });
  assert.match(c, /^version = 2$/m);
  assert.match(c, /root = "\/d\/containerd"/);
  assert.match(c, /state = "\/r\/containerd\/state"/);
  assert.match(c, /address = "\/r\/containerd\/containerd.sock"/);
  assert.match(c, /"io\.containerd\.grpc\.v1\.cri"/);
  assert.match(c, /"io\.containerd\.grpc\.v1\.images"/);
  const cri = supervisorConfig({ root: '/a', state: '/b', address: '/c', cri: true });
  assert.doesNotMatch(cri, /grpc\.v1\.cri/);
  // The CRI plugin needs the image, snapshot and lease services.
  assert.doesNotMatch(cri, /grpc\.v1\.images|snapshotter\.v1\.overlayfs|leases/);
});

describe('supervisor process', { skip: skip ?? false, timeout: 60_000 }, () => {
  const log = testLogger();
  let dir = '';
  const started = new Set<number>();
  let sup: SupervisorProcess | undefined;

  after(async () => {
    await sup?.stop().catch(() => {});
    for (const pid of started) {
      if (await isAlive(pid)) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // gone
        }
      }
    }
    if (dir) {
      await killShims(join(dir, 'run', 'containerd', 'containerd.sock'));
      await rm(dir, { recursive: true, force: true });
    }
  });

  test('adopts a containerd left running, restarts it after crashes, stops it', async () => {
    dir = await mkdtemp(join(tmpdir(), 'engsupp-'));
    const opts = {
      root: join(dir, 'data', 'containerd'),
      state: join(dir, 'run', 'containerd', 'state'),
      configDir: join(dir, 'run', 'containerd'),
    };
    // A "previous daemon": starts containerd and exits without stopping it.
    const script = join(dir, 'prev-daemon.ts');
    await writeFile(
      script,
      [
        `import pino from ${JSON.stringify(import.meta.resolve('pino'))};`,
        `import { startSupervisor } from ${JSON.stringify(processModule)};`,
        `const s = await startSupervisor({ ...${JSON.stringify(opts)}, log: pino({ level: 'silent' }) });`,
        `console.log(JSON.stringify({ pid: s.pid, address: s.address }));`,
        `process.exit(0);`,
      ].join('\n'),
    );
    const prev = await new Promise<{ pid: number; address: string }>((resolve, reject) => {
      execFile(process.execPath, [script], { cwd: fileURLToPath(new URL('../../..', import.meta.url)), timeout: 30_000 }, (err, stdout, stderr) => {
        if (err) return reject(new Error(`${err.message}\n${stderr}`));
        resolve(JSON.parse(stdout.trim().split('\n').pop()!));
      });
    });
    started.add(prev.pid);
    assert.ok(await isAlive(prev.pid), 'containerd outlives the daemon that started it');
    assert.equal(Number((await readFile(join(opts.configDir, 'containerd.pid'), 'utf8')).trim()), prev.pid);

    sup = await startSupervisor({ ...opts, log });
    assert.equal(sup.pid, prev.pid, 'adopted instead of starting a second one');
    assert.equal(sup.address, prev.address);

    // A client made before the crashes must keep working after them.
    const client = createSupervisorClient({ address: sup.address, namespace: 'enginetest', log });
    await client.version();
    let readyCount = 0;
    const events = subscribeEvents({ address: sup.address, namespace: 'enginetest', log, onExit: () => {}, onOom: () => {}, onReady: () => readyCount++ });
    await events.ready;
    assert.equal(readyCount, 1);

    // Crash of the adopted process: noticed by polling, replaced by our own child.
    process.kill(prev.pid, 'SIGKILL');
    const second = await until(() => (sup!.pid !== prev.pid && sup!.pid) || 0, 15_000, 50);
    started.add(second);
    try {
      await until(() => client.version().then(() => true, () => false), 15_000, 50);

      // Crash of our own child: noticed by its exit event.
      process.kill(second, 'SIGKILL');
      const third = await until(() => (sup!.pid !== second && sup!.pid) || 0, 15_000, 50);
      started.add(third);
      await until(() => client.version().then(() => true, () => false), 15_000, 50);
      assert.equal(Number((await readFile(join(opts.configDir, 'containerd.pid'), 'utf8')).trim()), third);
      // The event stream broke with each crash and was re-subscribed (and confirmed live) after.
      await until(() => readyCount >= 2, 15_000, 50);
    } finally {
      client.close();
      events.close();
    }

    const last = sup.pid;
    await sup.stop();
    sup = undefined;
    assert.equal(await isAlive(last), false);
    assert.equal(existsSync(join(opts.configDir, 'containerd.pid')), false);
  });
});

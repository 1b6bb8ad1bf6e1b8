// The floors under the API's figures, straight against a private containerd through our supervisor
// and stdio drivers, with no store, no reconciler and no HTTP: the same create→start→wait→output→
// delete cycle of `echo hi` as the API's run cycle, and the rate at which the log benchmark's
// writer can push its output through the shim's FIFO when the reader drops it (no log file).
// hack/bench.ts prints both beside the API's figures.
//   node hack/bench-direct.ts [N]        prints the median of N cycles (default 30) and the log ceiling
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startSupervisor } from '../drivers/supervisor/process.ts';
import { createSupervisorClient } from '../drivers/supervisor/client.ts';
import { createRuntimes } from '../drivers/supervisor/runtimes.ts';
import { createStdio } from '../drivers/stdio/stdio.ts';
import { killShims, makeRootfs, ociSpec, testLogger } from '../test/unit/supervisor/helpers.ts';

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** Median milliseconds of `n` direct cycles after 3 warm-ups. */
export async function directCycleMedian(n = 30): Promise<number> {
  const log = testLogger();
  const dir = await mkdtemp(join(tmpdir(), 'engbench-'));
  const execRoot = join(dir, 'run');
  const sup = await startSupervisor({
    root: join(dir, 'data', 'containerd'),
    state: join(execRoot, 'containerd', 'state'),
    configDir: join(execRoot, 'containerd'),
    log,
  });
  const client = createSupervisorClient({ address: sup.address, namespace: 'enginebench', log });
  const runtimes = createRuntimes({ defaultRuntime: 'stdrt', runtimes: {}, execRoot });
  const stdio = createStdio(log);
  try {
    const rootfs = await makeRootfs(dir);
    const times: number[] = [];
    for (let i = 0; i < n + 3; i++) {
      const id = `bench-${process.pid}-${i}`;
      const fifoDir = join(execRoot, 'fifo', id);
      const t0 = performance.now();
      await client.createContainer({ id, spec: ociSpec(rootfs, ['echo', 'hi']), runtime: runtimes.resolve(''), labels: {} });
      const io = await stdio.open({ dir: fifoDir, procId: 'init', stdin: false, tty: false });
      const hub = stdio.hub(io);
      let out = '';
      hub.subscribe((_s, c) => {
        out += c.toString();
      });
      await client.createTask({ containerId: id, stdout: io.paths.stdout, stderr: io.paths.stderr, terminal: false });
      const waiting = client.waitTask(id);
      await client.startTask(id);
      await waiting;
      await hub.ended;
      await client.deleteTask(id);
      await client.deleteContainer(id);
      io.close();
      await stdio.remove(fifoDir, 'init');
      if (out !== 'hi\n') throw new Error(`unexpected output ${JSON.stringify(out)}`);
      if (i >= 3) times.push(performance.now() - t0);
    }
    return median(times);
  } finally {
    client.close();
    const address = sup.address;
    await sup.stop();
    await killShims(address);
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * MB/s (median of `runs`) of `head -c BYTES /dev/zero | tr '\0' x` (hack/bench.ts's log writer)
 * through the shim's FIFO into a reader that drops it: what no daemon's log path can beat here.
 */
export async function directLogCeiling(bytes: number, runs = 3): Promise<number> {
  const log = testLogger();
  const dir = await mkdtemp(join(tmpdir(), 'engbench-'));
  const execRoot = join(dir, 'run');
  const sup = await startSupervisor({ root: join(dir, 'data', 'containerd'), state: join(execRoot, 'containerd', 'state'), configDir: join(execRoot, 'containerd'), log });
  const client = createSupervisorClient({ address: sup.address, namespace: 'enginebench', log });
  const runtimes = createRuntimes({ defaultRuntime: 'stdrt', runtimes: {}, execRoot });
  const stdio = createStdio(log);
  try {
    const rootfs = await makeRootfs(dir);
    const rates: number[] = [];
    for (let i = 0; i < runs; i++) {
      const id = `logceil-${process.pid}-${i}`;
      await client.createContainer({ id, spec: ociSpec(rootfs, ['sh', '-c', `head -c ${bytes} /dev/zero | tr '\\0' x`]), runtime: runtimes.resolve(''), labels: {} });
      const io = await stdio.open({ dir: join(execRoot, 'fifo', id), procId: 'init', stdin: false, tty: false });
      const hub = stdio.hub(io);
      let n = 0;
      hub.subscribe((_s, c) => {
        n += c.length;
      });
      await client.createTask({ containerId: id, stdout: io.paths.stdout, stderr: io.paths.stderr, terminal: false });
      const waiting = client.waitTask(id);
      const t0 = performance.now();
      await client.startTask(id);
      await waiting;
      await hub.ended;
      const secs = (performance.now() - t0) / 1000;
      await client.deleteTask(id);
      await client.deleteContainer(id);
      io.close();
      if (n < bytes) throw new Error(`log ceiling: read ${n} of ${bytes} bytes`);
      rates.push(n / (1024 * 1024) / secs);
    }
    return median(rates);
  } finally {
    client.close();
    const address = sup.address;
    await sup.stop();
    await killShims(address);
    await rm(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const n = Number(process.argv[2] ?? 30);
  const ms = await directCycleMedian(n);
  console.log(`direct containerd cycle (echo hi): median ${ms.toFixed(1)} ms over ${n}`);
  console.log(`log write ceiling (50 MB, reader drops it): ${(await directLogCeiling(50 * 1024 * 1024)).toFixed(0)} MB/s`);
}

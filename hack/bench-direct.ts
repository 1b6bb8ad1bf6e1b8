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

interface Direct {
  client: ReturnType<typeof createSupervisorClient>;
  runtimes: ReturnType<typeof createRuntimes>;
  stdio: ReturnType<typeof createStdio>;
  execRoot: string;
  rootfs: string;
}

/** A private containerd (own roots), our client and stdio drivers and a busybox root filesystem for `fn`; all gone after. */
async function withDirect<T>(fn: (d: Direct) => Promise<T>): Promise<T> {
  const log = testLogger();
  const dir = await mkdtemp(join(tmpdir(), 'engbench-'));
  const execRoot = join(dir, 'run');
  const sup = await startSupervisor({ root: join(dir, 'data', 'containerd'), state: join(execRoot, 'containerd', 'state'), configDir: join(execRoot, 'containerd'), log });
  const client = createSupervisorClient({ address: sup.address, namespace: 'enginebench', log });
  try {
    const rootfs = await makeRootfs(dir);
    return await fn({ client, runtimes: createRuntimes({ defaultRuntime: 'stdrt', runtimes: {}, execRoot }), stdio: createStdio(log), execRoot, rootfs });
  } finally {
    client.close();
    const address = sup.address;
    await sup.stop();
    await killShims(address);
    await rm(dir, { recursive: true, force: true });
  }
}

/** One run of `args` straight on containerd, each chunk of its output to `onOutput`; resolves once it exited and its output ended. */
async function runDirect(d: Direct, id: string, args: string[], onOutput: (chunk: Buffer) => void, started?: () => void): Promise<void> {
  const fifoDir = join(d.execRoot, 'fifo', id);
  await d.client.createContainer({ id, spec: ociSpec(d.rootfs, args), runtime: d.runtimes.resolve(''), labels: {} });
  const io = await d.stdio.open({ dir: fifoDir, procId: 'init', stdin: false, tty: false });
  const hub = d.stdio.hub(io);
  hub.subscribe((_s, c) => onOutput(c));
  await d.client.createTask({ containerId: id, stdout: io.paths.stdout, stderr: io.paths.stderr, terminal: false });
  const waiting = d.client.waitTask(id);
  started?.();
  await d.client.startTask(id);
  await waiting;
  await hub.ended;
  await d.client.deleteTask(id);
  await d.client.deleteContainer(id);
  io.close();
  await d.stdio.remove(fifoDir, 'init');
}

/** Median milliseconds of `n` direct cycles after 3 warm-ups. */
export function directCycleMedian(n = 30): Promise<number> {
  return withDirect(async (d) => {
    const times: number[] = [];
    for (let i = 0; i < n + 3; i++) {
      let out = '';
      const t0 = performance.now();
      await runDirect(d, `bench-${process.pid}-${i}`, ['echo', 'hi'], (c) => (out += c.toString()));
      if (out !== 'hi\n') throw new Error(`unexpected output ${JSON.stringify(out)}`);
      if (i >= 3) times.push(performance.now() - t0);
    }
    return median(times);
  });
}

/**
 * MB/s (median of `runs`) of `head -c BYTES /dev/zero | tr '\0' x` (hack/bench.ts's log writer)
 * through the shim's FIFO into a reader that drops it: what no daemon's log path can beat here.
 */
export function directLogCeiling(bytes: number, runs = 3): Promise<number> {
  return withDirect(async (d) => {
    const rates: number[] = [];
    for (let i = 0; i < runs; i++) {
      let n = 0;
      let t0 = 0;
      await runDirect(d, `logceil-${process.pid}-${i}`, ['sh', '-c', `head -c ${bytes} /dev/zero | tr '\\0' x`], (c) => (n += c.length), () => (t0 = performance.now()));
      const secs = (performance.now() - t0) / 1000;
      if (n < bytes) throw new Error(`log ceiling: read ${n} of ${bytes} bytes`);
      rates.push(n / (1024 * 1024) / secs);
    }
    return median(rates);
  });
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const n = Number(process.argv[2] ?? 30);
  const ms = await directCycleMedian(n);
  console.log(`direct containerd cycle (echo hi): median ${ms.toFixed(1)} ms over ${n}`);
  console.log(`log write ceiling (50 MB, reader drops it): ${(await directLogCeiling(50 * 1024 * 1024)).toFixed(0)} MB/s`);
}

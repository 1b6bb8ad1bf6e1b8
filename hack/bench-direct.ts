// The floor under the API's run cycle: the same create→start→wait→output→delete cycle of
// `echo hi` done straight against a private containerd through our supervisor and stdio drivers,
// with no store, no reconciler and no HTTP. hack/bench.ts prints it beside the API cycle.
//   node hack/bench-direct.ts [N]        prints the median of N cycles (default 30)
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

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const n = Number(process.argv[2] ?? 30);
  const ms = await directCycleMedian(n);
  console.log(`direct containerd cycle (echo hi): median ${ms.toFixed(1)} ms over ${n}`);
}

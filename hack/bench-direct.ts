// The floors under the API's figures, straight against a private containerd through our supervisor
// and stdio drivers, with no store, no reconciler and no HTTP: the same create→start→wait→output→
// delete cycle of `echo hi` as the API's run cycle, and the rate at which the log benchmark's
// writer can push its output through the shim's FIFO when the reader drops it (no log file).
// The cycle runs two containers by turns: a minimal OCI spec (namespaces, /proc, /dev), and the
// spec the daemon gives `docker run --network none IMAGE echo hi` (made by its own request
// normalisation and spec builder: seccomp profile, capabilities, device cgroup rules, /sys and
// /sys/fs/cgroup, a network and a cgroup namespace), so what the runtime does for the daemon's
// spec is not counted as the daemon's own share. hack/bench.ts prints both beside the API's figures.
//   node hack/bench-direct.ts [N]        prints the medians of N cycles (default 30) and the log ceiling
import { mkdir, mkdtemp, readdir, rm, rmdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startSupervisor } from '../drivers/supervisor/process.ts';
import { createSupervisorClient } from '../drivers/supervisor/client.ts';
import { createRuntimes } from '../drivers/supervisor/runtimes.ts';
import { createStdio } from '../drivers/stdio/stdio.ts';
import { killShims, makeRootfs, ociSpec, testLogger } from '../test/unit/supervisor/helpers.ts';
import { parseCreateBody } from '../admission/containers/create-schema.ts';
import { normalizeCreate } from '../admission/containers/create-request.ts';
import { createSpecBuilder } from '../drivers/oci/spec.ts';

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

export interface Direct {
  client: ReturnType<typeof createSupervisorClient>;
  /** The private supervisor: its socket and (current) process id. */
  supervisor: { address: string; readonly pid: number };
  runtimes: ReturnType<typeof createRuntimes>;
  stdio: ReturnType<typeof createStdio>;
  execRoot: string;
  rootfs: string;
}

/** A private containerd (own roots), our client and stdio drivers and a busybox root filesystem for `fn`; all gone after. */
export async function withDirect<T>(fn: (d: Direct) => Promise<T>): Promise<T> {
  const log = testLogger();
  const dir = await mkdtemp(join(tmpdir(), 'engbench-'));
  const execRoot = join(dir, 'run');
  const sup = await startSupervisor({ root: join(dir, 'data', 'containerd'), state: join(execRoot, 'containerd', 'state'), configDir: join(execRoot, 'containerd'), log });
  const client = createSupervisorClient({ address: sup.address, namespace: 'enginebench', log });
  try {
    const rootfs = await makeRootfs(dir);
    return await fn({ client, supervisor: sup, runtimes: createRuntimes({ defaultRuntime: 'stdrt', runtimes: {}, execRoot }), stdio: createStdio(log), execRoot, rootfs });
  } finally {
    client.close();
    const address = sup.address;
    await sup.stop();
    await killShims(address);
    await rm(dir, { recursive: true, force: true });
    // The daemon's spec put each run under /enginebench in every cgroup hierarchy; the runtime
    // removed the runs' own groups, the parent goes here.
    for (const h of await readdir('/sys/fs/cgroup').catch(() => [])) await rmdir(join('/sys/fs/cgroup', h, 'enginebench')).catch(() => {});
  }
}

export type SpecOf = (d: Direct, id: string, args: string[]) => Promise<object>;

/** The minimal spec: pid, ipc, uts and mount namespaces, /proc, /dev and /dev/pts. */
export const minimalSpec: SpecOf = async (d, _id, args) => ociSpec(d.rootfs, args);

/**
 * The spec the daemon gives `docker run --network none IMAGE ARGS` for this root filesystem: the
 * create body normalised by the API's own code, built by the daemon's spec builder with its
 * defaults, with the container's hostname, hosts and resolv.conf written as for a create.
 */
const daemonSpec: SpecOf = async (d, id, args) => {
  const body = parseCreateBody({ Image: 'bench', Cmd: args, HostConfig: { NetworkMode: 'none' } });
  const defaults = {
    runtime: 'stdrt', hasRuntime: () => true, shmSize: 64 * 1024 * 1024, logConfig: { Type: 'json-file', Config: {} },
    validateLogConfig: () => {}, validateBind: () => {},
  };
  const n = normalizeCreate(body, { config: { Env: ['PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'] }, rootfs: { type: 'layers', diff_ids: [] } }, defaults);
  n.config.Hostname = id.slice(0, 12);
  const builder = createSpecBuilder({ log: testLogger() });
  const dir = join(d.execRoot, 'containers', id);
  await mkdir(dir, { recursive: true });
  const files = await builder.writeEtcFiles(dir, n.config, n.hostConfig);
  return builder.build({ id, config: n.config, hostConfig: n.hostConfig, path: n.path, args: n.args, rootfs: d.rootfs, imageEnv: [], files, cgroupsPath: `/enginebench/${id}` });
};

/** One run of `args` straight on containerd, each chunk of its output to `onOutput`; resolves once it exited and its output ended. */
export async function runDirect(d: Direct, id: string, args: string[], onOutput: (chunk: Buffer) => void, started?: () => void, specOf: SpecOf = minimalSpec): Promise<void> {
  const fifoDir = join(d.execRoot, 'fifo', id);
  await d.client.createContainer({ id, spec: await specOf(d, id, args), runtime: d.runtimes.resolve(''), labels: {} });
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

/** Median milliseconds of `n` direct cycles of each spec (by turns) after 3 warm-ups of each. */
export function directCycleMedian(n = 30): Promise<{ minimal: number; daemonSpec: number }> {
  return withDirect(async (d) => {
    const times = { minimal: [] as number[], daemonSpec: [] as number[] };
    for (let i = 0; i < n + 3; i++) {
      for (const [which, specOf] of [['minimal', minimalSpec], ['daemonSpec', daemonSpec]] as const) {
        let out = '';
        const t0 = performance.now();
        await runDirect(d, `bench-${process.pid}-${which}-${i}`, ['echo', 'hi'], (c) => (out += c.toString()), undefined, specOf);
        if (out !== 'hi\n') throw new Error(`unexpected output ${JSON.stringify(out)}`);
        if (i >= 3) times[which].push(performance.now() - t0);
      }
    }
    return { minimal: median(times.minimal), daemonSpec: median(times.daemonSpec) };
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
  console.log(`direct containerd cycle (echo hi): median ${ms.minimal.toFixed(1)} ms over ${n} with a minimal spec, ${ms.daemonSpec.toFixed(1)} ms with the daemon's`);
  console.log(`log write ceiling (50 MB, reader drops it): ${(await directLogCeiling(50 * 1024 * 1024)).toFixed(0)} MB/s`);
}

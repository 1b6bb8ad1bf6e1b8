// Grouped shims (issue (17 of 21), 1), measured straight on a private containerd with no daemon:
// containerd's runc v2 shim serves every container whose spec carries the same
// `io.containerd.runc.v2.group` annotation (as CRI groups a pod's), so N containers need N/size
// shims instead of N. Two figures, each with one shim per container and grouped:
//   - the host memory of N idle running containers (`sleep`): the supervisor plus every shim
//     (resident, from /proc/<pid>/status; the containers' own processes are the same either way);
//   - the `echo hi` run cycle (create → start → wait → output → delete), the grouped one joining a
//     shim an idle container of its group keeps up (what a group's later members pay).
//   node hack/bench-shims.ts [N] [GROUP_SIZE]    (defaults 100 containers, groups of 100; 20 cycles)
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { listShims } from '../drivers/supervisor/shims.ts';
import { rssKiB } from '../test/e2e/harness/processes.ts';
import { minimalSpec, runDirect, withDirect, type Direct, type SpecOf } from './bench-direct.ts';

const GROUP = 'io.containerd.runc.v2.group';
const NS = 'enginebench';
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** Proportional set size: pages shared between the shims (their binary) counted once in all. */
function pssKiB(pid: number): number {
  try {
    return Number(/^Pss:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'))?.[1] ?? 0);
  } catch {
    return 0;
  }
}

/** The minimal spec with the group annotation (none when `group` is empty). */
const grouped = (group: string): SpecOf => async (d, id, args) => {
  const spec = (await minimalSpec(d, id, args)) as { annotations?: Record<string, string> };
  return group ? { ...spec, annotations: { ...spec.annotations, [GROUP]: group } } : spec;
};

/** Starts `args` in container `id` and leaves it running; its FIFOs are read and dropped. */
async function startIdle(d: Direct, id: string, specOf: SpecOf): Promise<() => Promise<void>> {
  const fifoDir = `${d.execRoot}/fifo/${id}`;
  await d.client.createContainer({ id, spec: await specOf(d, id, ['sleep', '3600']), runtime: d.runtimes.resolve(''), labels: {} });
  const io = await d.stdio.open({ dir: fifoDir, procId: 'init', stdin: false, tty: false });
  d.stdio.hub(io).subscribe(() => {});
  await d.client.createTask({ containerId: id, stdout: io.paths.stdout, stderr: io.paths.stderr, terminal: false });
  await d.client.startTask(id);
  return async () => {
    const waiting = d.client.waitTask(id);
    await d.client.killTask(id, 9, { all: true });
    await waiting;
    await d.client.deleteTask(id);
    await d.client.deleteContainer(id);
    io.close();
    await d.stdio.remove(fifoDir, 'init');
  };
}

/** Supervisor and shim memory (MiB) with `n` idle containers in groups of `size` (0: a shim each). */
export function idleMemory(n: number, size: number): Promise<{ supervisorMiB: number; shimsMiB: number; shimsPssMiB: number; shims: number }> {
  return withDirect(async (d) => {
    const stops: Array<() => Promise<void>> = [];
    try {
      for (let i = 0; i < n; i++) stops.push(await startIdle(d, `idle-${process.pid}-${size}-${i}`, grouped(size ? `g${Math.floor(i / size)}` : '')));
      await new Promise((r) => setTimeout(r, 1000));
      const shims = await listShims(d.supervisor.address, NS);
      return {
        supervisorMiB: rssKiB(d.supervisor.pid) / 1024,
        shimsMiB: shims.reduce((a, s) => a + rssKiB(s.pid), 0) / 1024,
        shimsPssMiB: shims.reduce((a, s) => a + pssKiB(s.pid), 0) / 1024,
        shims: shims.length,
      };
    } finally {
      for (const stop of stops) await stop().catch(() => {});
    }
  });
}

/** Median ms of `n` `echo hi` cycles with a shim each, and joining a group an idle container keeps up (by turns). */
export function groupedCycle(n: number): Promise<{ own: number; grouped: number }> {
  return withDirect(async (d) => {
    const stop = await startIdle(d, `anchor-${process.pid}`, grouped('cycle'));
    const times = { own: [] as number[], grouped: [] as number[] };
    try {
      for (let i = 0; i < n + 3; i++) {
        for (const [which, specOf] of [['own', grouped('')], ['grouped', grouped('cycle')]] as const) {
          let out = '';
          const t0 = performance.now();
          await runDirect(d, `cyc-${process.pid}-${which}-${i}`, ['echo', 'hi'], (c) => (out += c.toString()), undefined, specOf);
          if (out !== 'hi\n') throw new Error(`unexpected output ${JSON.stringify(out)}`);
          if (i >= 3) times[which].push(performance.now() - t0);
        }
      }
    } finally {
      await stop();
    }
    return { own: median(times.own), grouped: median(times.grouped) };
  });
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const n = Number(process.argv[2] ?? 100);
  const size = Number(process.argv[3] ?? 100);
  for (const s of [0, size]) {
    const m = await idleMemory(n, s);
    const total = m.supervisorMiB + m.shimsMiB;
    console.log(`${n} idle containers, ${s ? `groups of ${s}` : 'a shim each'}: ${m.shims} shims ${m.shimsMiB.toFixed(1)} MiB resident (${m.shimsPssMiB.toFixed(1)} MiB proportional) + supervisor ${m.supervisorMiB.toFixed(1)} MiB = ${total.toFixed(1)} MiB (${((total * 1024) / n).toFixed(0)} KiB per container)`);
  }
  const c = await groupedCycle(20);
  console.log(`echo hi cycle: ${c.own.toFixed(1)} ms with a shim of its own, ${c.grouped.toFixed(1)} ms joining a group's shim (median of 20)`);
}

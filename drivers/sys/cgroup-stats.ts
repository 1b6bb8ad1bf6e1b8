// Container resource figures from cgroups (v1 hierarchy per controller, or the v2 unified tree),
// shaped like the Engine API's stats object so clients can compute CPU and memory percentages.
import { readFile } from 'node:fs/promises';
import { cpus, totalmem } from 'node:os';
import { execa, type ExecaError } from 'execa';
import { invalidArgument } from '../../lib/errors.ts';
import { EXECA_DEFAULTS } from './exec.ts';

async function read(p: string): Promise<string | undefined> {
  try {
    return await readFile(p, 'utf8');
  } catch {
    return undefined;
  }
}

const num = (s: string | undefined) => (s === undefined ? 0 : Number(s.trim().split('\n')[0]) || 0);

function kv(text: string | undefined): Record<string, number> {
  const out: Record<string, number> = {};
  for (const line of (text ?? '').split('\n')) {
    const [k, v] = line.trim().split(/\s+/);
    if (k && v !== undefined) out[k] = Number(v);
  }
  return out;
}

const HZ = 100;

/** Host CPU time in nanoseconds (the `system_cpu_usage` the CLI divides by). */
async function systemCpuNs(): Promise<number> {
  const stat = await read('/proc/stat');
  const line = stat?.split('\n').find((l) => l.startsWith('cpu '));
  if (!line) return 0;
  const ticks = line.trim().split(/\s+/).slice(1, 8).reduce((a, b) => a + Number(b), 0);
  return (ticks * 1e9) / HZ;
}

async function networks(pid: number): Promise<Record<string, Record<string, number>> | undefined> {
  if (!pid) return undefined;
  const dev = await read(`/proc/${pid}/net/dev`);
  if (!dev) return undefined;
  const out: Record<string, Record<string, number>> = {};
  for (const line of dev.split('\n').slice(2)) {
    const m = /^\s*([^:]+):\s*(.*)$/.exec(line);
    if (!m || m[1] === 'lo') continue;
    const f = m[2].trim().split(/\s+/).map(Number);
    out[m[1]] = {
      rx_bytes: f[0], rx_packets: f[1], rx_errors: f[2], rx_dropped: f[3],
      tx_bytes: f[8], tx_packets: f[9], tx_errors: f[10], tx_dropped: f[11],
    };
  }
  return out;
}

export interface CgroupStatsOptions {
  /** cgroupsPath given to the runtime, e.g. "/engine/<id>". */
  cgroupPath: string;
  pid: number;
}

export async function sampleStats(o: CgroupStatsOptions): Promise<Record<string, unknown>> {
  const v2 = (await read('/sys/fs/cgroup/cgroup.controllers')) !== undefined;
  const base = (ctl: string) => (v2 ? `/sys/fs/cgroup${o.cgroupPath}` : `/sys/fs/cgroup/${ctl}${o.cgroupPath}`);
  const ncpu = cpus().length;
  const [system, nets] = await Promise.all([systemCpuNs(), networks(o.pid)]);
  let cpu: Record<string, unknown>;
  let memory: Record<string, unknown>;
  let pids: Record<string, unknown>;
  let blkio: Record<string, unknown> = { io_service_bytes_recursive: null, io_serviced_recursive: null, io_queue_recursive: null, io_service_time_recursive: null, io_wait_time_recursive: null, io_merged_recursive: null, io_time_recursive: null, sectors_recursive: null };
  if (!v2) {
    const ca = base('cpuacct');
    const [usage, percpu, castat, thr] = await Promise.all([
      read(`${ca}/cpuacct.usage`),
      read(`${ca}/cpuacct.usage_percpu`),
      read(`${ca}/cpuacct.stat`),
      read(`${base('cpu')}/cpu.stat`),
    ]);
    const st = kv(castat);
    const t = kv(thr);
    cpu = {
      cpu_usage: {
        total_usage: num(usage),
        percpu_usage: (percpu ?? '').trim().split(/\s+/).filter(Boolean).map(Number),
        usage_in_kernelmode: ((st.system ?? 0) * 1e9) / HZ,
        usage_in_usermode: ((st.user ?? 0) * 1e9) / HZ,
      },
      system_cpu_usage: system,
      online_cpus: ncpu,
      throttling_data: { periods: t.nr_periods ?? 0, throttled_periods: t.nr_throttled ?? 0, throttled_time: t.throttled_time ?? 0 },
    };
    const mem = base('memory');
    const [mu, mm, ml, ms, mf] = await Promise.all([
      read(`${mem}/memory.usage_in_bytes`),
      read(`${mem}/memory.max_usage_in_bytes`),
      read(`${mem}/memory.limit_in_bytes`),
      read(`${mem}/memory.stat`),
      read(`${mem}/memory.failcnt`),
    ]);
    memory = { usage: num(mu), max_usage: num(mm), stats: kv(ms), failcnt: num(mf), limit: Math.min(num(ml) || Infinity, totalmem()) };
    const pd = base('pids');
    const [pc, pm] = await Promise.all([read(`${pd}/pids.current`), read(`${pd}/pids.max`)]);
    pids = { current: num(pc), ...(pm && pm.trim() !== 'max' ? { limit: num(pm) } : {}) };
    const bio = await read(`${base('blkio')}/blkio.throttle.io_service_bytes_recursive`);
    if (bio) {
      const entries = bio.split('\n').map((l) => l.trim().split(/\s+/)).filter((p) => p.length === 3).map(([dev, op, value]) => {
        const [major, minor] = dev.split(':').map(Number);
        return { major, minor, op, value: Number(value) };
      });
      blkio = { ...blkio, io_service_bytes_recursive: entries };
    }
  } else {
    const dir = base('');
    const [cs, mc, mx, mstat, pc, pm] = await Promise.all([
      read(`${dir}/cpu.stat`),
      read(`${dir}/memory.current`),
      read(`${dir}/memory.max`),
      read(`${dir}/memory.stat`),
      read(`${dir}/pids.current`),
      read(`${dir}/pids.max`),
    ]);
    const c = kv(cs);
    cpu = {
      cpu_usage: { total_usage: (c.usage_usec ?? 0) * 1000, usage_in_kernelmode: (c.system_usec ?? 0) * 1000, usage_in_usermode: (c.user_usec ?? 0) * 1000 },
      system_cpu_usage: system,
      online_cpus: ncpu,
      throttling_data: { periods: c.nr_periods ?? 0, throttled_periods: c.nr_throttled ?? 0, throttled_time: (c.throttled_usec ?? 0) * 1000 },
    };
    const max = mx?.trim();
    memory = { usage: num(mc), stats: kv(mstat), limit: max && max !== 'max' ? Number(max) : totalmem() };
    pids = { current: num(pc), ...(pm && pm.trim() !== 'max' ? { limit: num(pm) } : {}) };
  }
  return {
    read: new Date().toISOString(),
    pids_stats: pids,
    blkio_stats: blkio,
    num_procs: 0,
    storage_stats: {},
    cpu_stats: cpu,
    memory_stats: memory,
    ...(nets ? { networks: nets } : {}),
  };
}

/** `docker top`: run ps on the host and keep the rows of the container's processes. */
export async function topProcesses(pids: number[], psArgs: string): Promise<{ Titles: string[]; Processes: string[][] }> {
  const args = psArgs.trim() ? psArgs.trim().split(/\s+/) : ['-ef'];
  let out: string;
  try {
    // The API gives no AbortSignal for top; the deadline bounds it.
    ({ stdout: out } = await execa('ps', args, { ...EXECA_DEFAULTS, maxBuffer: 16 << 20, timeout: 10_000 }));
  } catch (err) {
    const e = err as ExecaError;
    // A failed start keeps its own message ("spawn ps ENOENT"), as execFile gave it.
    throw invalidArgument(`ps: ${(typeof e.stderr === 'string' ? e.stderr.trim() : '') || (e.cause instanceof Error ? e.cause.message : e.shortMessage ?? e.message)}`);
  }
  const lines = out.split('\n').filter((l) => l.trim());
  const titles = lines[0].trim().split(/\s+/);
  const pidCol = titles.indexOf('PID');
  if (pidCol < 0) throw invalidArgument(`Couldn't find PID field in ps output`);
  const want = new Set(pids.map(String));
  const procs: string[][] = [];
  for (const line of lines.slice(1)) {
    const fields = line.trim().split(/\s+/);
    if (!want.has(fields[pidCol])) continue;
    const row = fields.slice(0, titles.length - 1);
    row.push(fields.slice(titles.length - 1).join(' '));
    procs.push(row);
  }
  return { Titles: titles, Processes: procs };
}

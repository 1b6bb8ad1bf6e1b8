// The resource values of a container create that the reference daemon refuses before anything
// runs (its verifyPlatformContainerResources on Linux), with its messages: the runtime would
// otherwise fail to write them to the cgroup at start, and the start would answer 500 for a
// client's mistake.
import { invalidArgument } from '../../lib/errors.ts';

/** The host's CPUs and memory nodes a cpuset may name ("0-1", "0"), as sysfs lists them. */
export interface HostCpus {
  cpus: string;
  mems: string;
}

const MIN_MEMORY = 6 * 1024 * 1024;

type Obj = Record<string, unknown>;
const num = (h: Obj, k: string): number => (typeof h[k] === 'number' ? (h[k] as number) : 0);

/** "0-3,5" as a set of numbers; null when it is not such a list (Go's parsers.ParseUintList). */
export function parseUintList(text: string): Set<number> | null {
  const out = new Set<number>();
  if (text === '') return out;
  for (const part of text.split(',')) {
    const m = /^(\d+)(?:-(\d+))?$/.exec(part);
    if (!m) return null;
    const lo = Number(m[1]);
    const hi = m[2] === undefined ? lo : Number(m[2]);
    if (hi < lo || hi - lo > 1 << 16) return null;
    for (let i = lo; i <= hi; i++) out.add(i);
  }
  return out;
}

/** A cpuset as the reference checks it: a list of ranges, each of what the host has when that is known. */
export function checkCpuset(value: unknown, available: string | undefined, what: 'cpus' | 'mems'): void {
  if (typeof value !== 'string' || value === '') return;
  const asked = parseUintList(value);
  if (!asked) throw invalidArgument(`Invalid value ${value} for cpuset ${what}`);
  const have = available === undefined ? null : parseUintList(available.trim());
  if (have && [...asked].some((n) => !have.has(n))) {
    const noun = what === 'cpus' ? 'CPUs' : 'memory nodes';
    throw invalidArgument(`Requested ${noun} are not available - requested ${value}, available: ${available!.trim()}`);
  }
}

/** The reference's refusals of a create's HostConfig resources, in its order. */
export function checkResources(h: Obj, host: Partial<HostCpus> = {}): void {
  const memory = num(h, 'Memory');
  const swap = num(h, 'MemorySwap');
  if (memory !== 0 && memory < MIN_MEMORY) throw invalidArgument('Minimum memory limit allowed is 6MB');
  if (memory > 0 && swap > 0 && swap < memory) throw invalidArgument('Minimum memoryswap limit should be larger than memory limit, see usage');
  if (memory === 0 && swap > 0) throw invalidArgument('You should always set the Memory limit when using Memoryswap limit, see usage');
  // -1 is unlimited; below that no cgroup takes it.
  if (swap < -1) throw invalidArgument(`Invalid value ${swap} for memory swap limit: use -1 for unlimited swap, or a limit of at least the memory limit`);
  const swappiness = h.MemorySwappiness;
  if (typeof swappiness === 'number' && swappiness !== -1 && (swappiness < 0 || swappiness > 100)) {
    throw invalidArgument(`Invalid value: ${swappiness}, valid memory swappiness range is 0-100`);
  }
  const reservation = num(h, 'MemoryReservation');
  if (reservation > 0 && reservation < MIN_MEMORY) throw invalidArgument('Minimum memory reservation allowed is 6MB');
  if (memory > 0 && reservation > 0 && memory < reservation) throw invalidArgument('Minimum memory limit can not be less than memory reservation limit, see usage');
  const nano = num(h, 'NanoCpus');
  if (nano > 0 && num(h, 'CpuPeriod') > 0) throw invalidArgument('Conflicting options: Nano CPUs and CPU Period cannot both be set');
  if (nano > 0 && num(h, 'CpuQuota') > 0) throw invalidArgument('Conflicting options: Nano CPUs and CPU Quota cannot both be set');
  const ncpu = host.cpus ? (parseUintList(host.cpus.trim())?.size ?? 0) : 0;
  if (nano < 0 || (ncpu > 0 && nano > ncpu * 1e9)) {
    throw invalidArgument(`Range of CPUs is from 0.01 to ${ncpu}.00, as there are only ${ncpu} CPUs available`);
  }
  const period = num(h, 'CpuPeriod');
  if (period !== 0 && (period < 1000 || period > 1_000_000)) {
    throw invalidArgument('CPU cfs period can not be less than 1ms (i.e. 1000) or larger than 1s (i.e. 1000000)');
  }
  const quota = num(h, 'CpuQuota');
  if (quota > 0 && quota < 1000) throw invalidArgument('CPU cfs quota can not be less than 1ms (i.e. 1000)');
  checkCpuset(h.CpusetCpus, host.cpus, 'cpus');
  checkCpuset(h.CpusetMems, host.mems, 'mems');
  const weight = num(h, 'BlkioWeight');
  if (weight > 0 && (weight < 10 || weight > 1000)) throw invalidArgument('Range of blkio weight is from 10 to 1000');
  const oom = num(h, 'OomScoreAdj');
  if (oom < -1000 || oom > 1000) throw invalidArgument(`Invalid value ${oom}, range for oom score adj is [-1000, 1000]`);
}

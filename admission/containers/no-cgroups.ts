// Rootless mode on cgroup v1: containers have no cgroups of their own, so no limit can be applied.
// As the reference (whose sysinfo then reports no cgroup controller), each limit asked for is
// discarded with its warning, and NanoCpus, which it cannot discard silently, is refused.
import { invalidArgument } from '../../lib/errors.ts';

type Obj = Record<string, unknown>;

// [field, the reference's warning, the value it is set back to]
const DISCARDED: Array<[string, string, unknown]> = [
  ['Memory', 'Your kernel does not support memory limit capabilities or the cgroup is not mounted. Limitation discarded.', 0],
  ['MemoryReservation', 'Your kernel does not support memory soft limit capabilities or the cgroup is not mounted. Limitation discarded.', 0],
  ['MemorySwappiness', 'Your kernel does not support memory swappiness capabilities or the cgroup is not mounted. Memory swappiness discarded.', null],
  ['OomKillDisable', 'Your kernel does not support OomKillDisable. OomKillDisable discarded.', false],
  ['PidsLimit', 'Your kernel does not support PIDs limit capabilities or the cgroup is not mounted. PIDs limit discarded.', null],
  ['CpuShares', 'Your kernel does not support CPU shares or the cgroup is not mounted. Shares discarded.', 0],
  ['CpuPeriod', 'Your kernel does not support CPU CFS scheduler. CPU period discarded.', 0],
  ['CpuQuota', 'Your kernel does not support CPU CFS scheduler. CPU quota discarded.', 0],
  ['CpusetCpus', 'Your kernel does not support cpuset or the cgroup is not mounted. Cpuset discarded.', ''],
  ['CpusetMems', 'Your kernel does not support cpuset or the cgroup is not mounted. Cpuset discarded.', ''],
  ['BlkioWeight', 'Your kernel does not support Block I/O weight or the cgroup is not mounted. Weight discarded.', 0],
];

/** Whether a HostConfig value asks for a limit: a positive number (a swappiness from 0), true, a non-empty string. */
function asked(field: string, v: unknown): boolean {
  if (typeof v === 'number') return field === 'MemorySwappiness' ? v >= 0 : v > 0;
  return v === true || (typeof v === 'string' && v !== '');
}

/** Drops every limit of `h` (in place); the warnings, each once. */
export function discardLimits(h: Obj): string[] {
  if (typeof h.NanoCpus === 'number' && h.NanoCpus > 0) {
    throw invalidArgument('NanoCPUs can not be set, as your kernel does not support CPU CFS scheduler or the cgroup is not mounted');
  }
  const warnings: string[] = [];
  for (const [field, warning, none] of DISCARDED) {
    if (!asked(field, h[field])) continue;
    h[field] = none;
    if (!warnings.includes(warning)) warnings.push(warning);
  }
  if (h.Memory === 0 && typeof h.MemorySwap === 'number' && h.MemorySwap !== 0) h.MemorySwap = 0;
  return warnings;
}

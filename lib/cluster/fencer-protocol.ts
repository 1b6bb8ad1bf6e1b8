// What the daemon tells its fencer (cmd/fencer.ts) and how a process is named across the two.
// Dependency-free: the fencer is a process of its own and loads nothing else of the daemon.
//
// One JSON object per line over the fencer's unix socket, sent whenever it changes:
//   {"deadline": "<ns on CLOCK_MONOTONIC>", "pids": [[pid, "<start time>"], ...]}
// `deadline` is when the node's lease could have expired at etcd, less the fence margin; `pids`
// are the init processes of the node's cluster-placed containers, each with its start time (so a
// PID the kernel reuses is never mistaken for it). Should the daemon's connection close, the
// fencer kills those processes at that deadline.
import { readFileSync } from 'node:fs';

export interface FenceOrder {
  deadline: string;
  pids: Array<[number, string]>;
}

/** A process's start time (field 22 of /proc/<pid>/stat, ticks since boot); '' when it is gone. */
export function procStartTime(pid: number): string {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? '';
  } catch {
    return '';
  }
}

/** Now on CLOCK_MONOTONIC (the same clock in every process of the machine), in ns. */
export function monotonicNs(): bigint {
  return process.hrtime.bigint();
}

/** The fencer's socket beside the daemon's other run-time files. */
export function fencerSocket(execRoot: string): string {
  return `${execRoot}/cluster-fencer.sock`;
}

// Grouped shims (docs/performance.md, "Grouped shims"): containerd's runc v2 shim serves every
// container whose spec carries the same `io.containerd.runc.v2.group` annotation, so a group's later
// members start no shim of their own. The default: DEFAULT_GROUPS groups (ENGINE_SHIM_GROUPS=K
// sets K; 0 gives every container a shim of its own, as the reference). A shim killed ends every
// container of its group, so the groups bound what one shim's death takes. A container's group
// follows from its id alone (its first 8 hex digits modulo K), so it is the same after a daemon
// restart with no record kept; the group id names the runtime, since two shim binaries would
// compute one socket address for one id, and only the runc v2 shim groups. A supervisor the daemon
// did not start (--supervisor) gets a shim per container: the reaping of lost shims needs the
// supervisor's state dir to keep a shim that serves its group.

export const SHIM_GROUP_ANNOTATION = 'io.containerd.runc.v2.group';
const RUNC_V2 = 'io.containerd.runc.v2';

/** Groups when nothing says otherwise: 100 idle containers cost 8 shims (docs/performance.md). */
export const DEFAULT_GROUPS = 8;

/** The groups count from the environment (0: a shim per container). */
export function shimGroupsFromEnv(env: NodeJS.ProcessEnv = process.env): number {
  const v = env.ENGINE_SHIM_GROUPS;
  if (v === undefined || v.trim() === '') return DEFAULT_GROUPS;
  const k = Number(v);
  return Number.isInteger(k) && k > 0 ? k : 0;
}

/** The group container `id` joins under runtime `runtime`, or undefined (a shim of its own). */
export function shimGroupOf(groups: number, id: string, runtime: string): string | undefined {
  if (groups <= 0 || runtime !== RUNC_V2 || !/^[0-9a-f]{8}/.test(id)) return undefined;
  return `engine-runc-v2-${parseInt(id.slice(0, 8), 16) % groups}`;
}

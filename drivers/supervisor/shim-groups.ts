// Grouped shims (docs/performance.md, "Grouped shims"): containerd's runc v2 shim serves every
// container whose spec carries the same `io.containerd.runc.v2.group` annotation, so a group's later
// members start no shim of their own. Opt-in while its failure model is being shown
// (ENGINE_SHIM_GROUPS=K: K groups per runtime; unset or 0: a shim per container, as today). A
// container's group follows from its id alone (its first 8 hex digits modulo K), so it is the same
// after a daemon restart with no record kept; the group id names the runtime, since two shim
// binaries would compute one socket address for one id, and only the runc v2 shim groups.

export const SHIM_GROUP_ANNOTATION = 'io.containerd.runc.v2.group';
const RUNC_V2 = 'io.containerd.runc.v2';

/** The groups count from the environment (0: off). */
export function shimGroupsFromEnv(env: NodeJS.ProcessEnv = process.env): number {
  const k = Number(env.ENGINE_SHIM_GROUPS ?? 0);
  return Number.isInteger(k) && k > 0 ? k : 0;
}

/** The group container `id` joins under runtime `runtime`, or undefined (a shim of its own). */
export function shimGroupOf(groups: number, id: string, runtime: string): string | undefined {
  if (groups <= 0 || runtime !== RUNC_V2 || !/^[0-9a-f]{8}/.test(id)) return undefined;
  return `engine-runc-v2-${parseInt(id.slice(0, 8), 16) % groups}`;
}

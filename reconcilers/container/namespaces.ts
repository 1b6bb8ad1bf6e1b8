// `--network|--pid|--ipc container:<id>`: a new container joins a running one's namespace. For
// IPC also its /dev/shm, which only a donor created `--ipc shareable` offers (a host-side tmpfs,
// see drivers/sys/shm.ts), with the reference daemon's refusal otherwise. Pure on the OCI spec.
import { conflict } from '../../lib/errors.ts';
import type { ContainerResource as CR } from '../../store/kinds/container.ts';


export interface JoinContext {
  containers: readonly CR[];
  /** The container's live run, if any. */
  runOf(id: string): { pid: number; exit?: unknown } | undefined;
  /** Where an IPC-shareable container's /dev/shm lives on the host; undefined when none can. */
  shmDirOf?: (id: string) => string;
}

const WHAT = { network: 'network', pid: 'PID', ipc: 'IPC' } as const;
const NS_FILE = { network: 'net', pid: 'pid', ipc: 'ipc' } as const;

export function joinNamespaceOf(oci: Record<string, unknown>, type: 'network' | 'pid' | 'ipc', ref: string, ctx: JoinContext): void {
  const others = ctx.containers;
  const other = others.find((c) => c.name === ref || c.spec.name === `/${ref}` || c.spec.name === ref) ?? others.filter((c) => c.name.startsWith(ref)).at(0);
  const run = other ? ctx.runOf(other.name) : undefined;
  if (!other || !run || run.exit) throw conflict(`cannot join ${WHAT[type]} of a non running container: ${ref}`);
  const linux = (oci.linux ?? {}) as { namespaces?: Array<{ type: string; path?: string }> };
  const ns = (linux.namespaces ?? []).filter((n) => n.type !== type);
  ns.push({ type, path: `/proc/${run.pid}/ns/${NS_FILE[type]}` });
  // --userns-remap: a namespace is shared together with the user namespace that owns it (the reference's rule).
  const user = ns.find((n) => n.type === 'user');
  if (user) user.path = `/proc/${run.pid}/ns/user`;
  linux.namespaces = ns;
  oci.linux = linux;
  if (type !== 'ipc') return;
  if (String(other.spec.hostConfig.IpcMode ?? '') !== 'shareable' || !ctx.shmDirOf) {
    throw conflict(`cannot join IPC of container ${other.name}: non-shareable IPC (hint: use IpcMode:shareable for the donor container)`);
  }
  bindShm(oci, ctx.shmDirOf(other.name));
}

/** /dev/shm as a bind of a host-side tmpfs, in place of the spec's own tmpfs. */
export function bindShm(oci: object, source: string): void {
  const o = oci as Record<string, unknown>;
  const mounts = ((o.mounts ?? []) as Array<{ destination: string }>).filter((m) => m.destination !== '/dev/shm');
  mounts.push({ destination: '/dev/shm', type: 'bind', source, options: ['rbind', 'rprivate'] } as { destination: string });
  o.mounts = mounts;
}

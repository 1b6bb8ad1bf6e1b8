// The files the daemon creates in a container's root only to bind-mount over them (/etc/hostname,
// /etc/hosts, /etc/resolv.conf). The reference daemon keeps them in an init layer below the
// container's own, so they never show in its diff or a commit; here they sit in the read-write
// layer itself and are left out of both. What a process writes to them goes to the mounted file,
// never to the layer.
import type { ChangeEntry } from './types.ts';

/** Relative to the root, without a leading slash. */
export const MOUNT_POINTS: ReadonlySet<string> = new Set(['etc/hostname', 'etc/hosts', 'etc/resolv.conf']);

/**
 * A container's changes as the reference reports them: without the mount points, and without `/etc`
 * when it changed only to hold them.
 */
export function withoutMountPointChanges(changes: readonly ChangeEntry[]): ChangeEntry[] {
  const kept = changes.filter((c) => !MOUNT_POINTS.has(c.Path.replace(/^\/+/, '')));
  const underEtc = kept.some((c) => c.Path.startsWith('/etc/'));
  return kept.filter((c) => underEtc || !(c.Path === '/etc' && c.Kind === 0));
}

// User-namespace id maps (--userns-remap): the ranges of container ids and the host ids they are,
// as /etc/subuid and /etc/subgid give them and the OCI spec's uidMappings/gidMappings take them.
// Layers are unpacked with container ids turned into host ids and diffed back the other way.

export interface IdRange {
  /** First id inside the container. */
  containerID: number;
  /** The host id it is. */
  hostID: number;
  size: number;
}

export interface IdMap {
  uids: IdRange[];
  gids: IdRange[];
}

/** The id outside the container, of not a mapped id: undefined (the kernel would refuse it). */
export function toHost(ranges: readonly IdRange[], id: number): number | undefined {
  for (const r of ranges) if (id >= r.containerID && id < r.containerID + r.size) return r.hostID + (id - r.containerID);
  return undefined;
}

/** The id inside the container of a host id; undefined when the container does not see it. */
export function toContainer(ranges: readonly IdRange[], id: number): number | undefined {
  for (const r of ranges) if (id >= r.hostID && id < r.hostID + r.size) return r.containerID + (id - r.hostID);
  return undefined;
}

/** The host uid and gid of the container's root: who owns what the container's root owns. */
export function rootPair(map: IdMap): { uid: number; gid: number } {
  const uid = toHost(map.uids, 0);
  const gid = toHost(map.gids, 0);
  if (uid === undefined || gid === undefined) throw new Error('user namespace map has no range for root');
  return { uid, gid };
}

/**
 * Ownership of a layer's entry as it goes onto the host: each id mapped, an id the map lacks
 * refused (the reference's unpacker fails the same way: the container could not own the file).
 */
export function hostOwner(map: IdMap, uid: number, gid: number): { uid: number; gid: number } {
  const u = toHost(map.uids, uid);
  const g = toHost(map.gids, gid);
  if (u === undefined || g === undefined) throw new Error(`container ID ${u === undefined ? uid : gid} cannot be mapped to a host ID`);
  return { uid: u, gid: g };
}

/** The kernel's overflow id: what a process in the namespace sees for an id the map lacks. */
export const OVERFLOW_ID = 65534;

/** Ownership of a host file as the container sees it (a diff, `docker cp` out). */
export function containerOwner(map: IdMap, uid: number, gid: number): { uid: number; gid: number } {
  return { uid: toContainer(map.uids, uid) ?? OVERFLOW_ID, gid: toContainer(map.gids, gid) ?? OVERFLOW_ID };
}

/** The spec's uidMappings/gidMappings. */
export function ociMappings(ranges: readonly IdRange[]): Array<{ containerID: number; hostID: number; size: number }> {
  return ranges.map((r) => ({ containerID: r.containerID, hostID: r.hostID, size: r.size }));
}

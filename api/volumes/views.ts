// Volumes as clients read them (`volume ls`, `volume inspect`), who uses them, and the list
// filters of the reference daemon (dangling, driver, label, name).
import { Containers, type ContainerResource as CR } from '../../store/kinds/container.ts';

import { type VolumeResource, liveVolumes } from '../../store/kinds/volume.ts';
import { invalidFilter, matchKVList, parseFilters } from '../filters.ts';
import type { ApiStore } from '../containers/store.ts';
export type { VolumeResource } from '../../store/kinds/volume.ts';


/** Names of the volumes a container mounts. */
export function volumesOf(c: CR): string[] {
  return (c.spec.mountPoints ?? []).filter((m) => m.type === 'volume').map((m) => m.name);
}

/** Ids of the containers (any state) whose mounts name the volume: it is in use while one exists. */
export function usersOf(store: Pick<ApiStore, 'list'>, name: string): string[] {
  return store
    .list(Containers)
    .filter((c) => volumesOf(c).includes(name))
    .map((c) => c.name);
}

/** Every volume name some container uses, for the dangling filter and prune. */
export function volumesInUse(store: Pick<ApiStore, 'list'>): Set<string> {
  const out = new Set<string>();
  for (const c of store.list(Containers)) for (const n of volumesOf(c)) out.add(n);
  return out;
}

/** RFC 3339 in seconds, as the reference prints CreatedAt. */
function createdAt(iso: string): string {
  return iso.replace(/\.\d+Z$/, 'Z');
}

export function volumeView(v: VolumeResource, usage?: { Size: number; RefCount: number }): Record<string, unknown> {
  const out: Record<string, unknown> = {
    CreatedAt: createdAt(v.spec.created),
    Driver: v.spec.driver,
    Labels: v.spec.labels,
    Mountpoint: v.status.mountpoint,
    Name: v.spec.name,
    Options: v.spec.options,
    Scope: 'local',
  };
  if (usage) out.UsageData = usage;
  return out;
}

const LIST_KEYS = new Set(['dangling', 'driver', 'label', 'name']);

/** The `name` filter is a regular expression, as the reference's filter.Match. */
function nameMatches(pattern: string, name: string): boolean {
  try {
    return new RegExp(pattern).test(name);
  } catch {
    return name.includes(pattern);
  }
}

/** GET /volumes with its filters. */
export function listVolumes(store: Pick<ApiStore, 'list'>, rawFilters: string): VolumeResource[] {
  // The reference's volume list names what it was reading when the text is not filters.
  const f = parseFilters(rawFilters, LIST_KEYS, 'error reading volume filters: ');
  let dangling: boolean | undefined;
  for (const v of f.get('dangling') ?? []) {
    if (v === 'true' || v === '1') dangling = true;
    else if (v === 'false' || v === '0') dangling = false;
    else throw invalidFilter(`dangling=${v}`);
  }
  const used = dangling === undefined ? undefined : volumesInUse(store);
  return liveVolumes(store).filter((v) => {
    if (used && used.has(v.spec.name) === dangling) return false;
    const names = f.get('name');
    if (names && !names.some((n) => nameMatches(n, v.spec.name))) return false;
    const drivers = f.get('driver');
    if (drivers && !drivers.some((d) => v.spec.driver === d)) return false;
    if (!matchKVList(f.get('label'), v.spec.labels)) return false;
    return true;
  });
}

// A container's volume mounts, decided at create as the reference daemon does: named volumes in
// Binds (`-v name:/path`) and Mounts (type volume) are created on first use, `-v /path`, a
// Mounts volume without a source and every image VOLUME path not otherwise mounted get an
// anonymous volume the container owns, and VolumesFrom copies another container's mounts.
// Nothing is written here: the caller stores the new volumes with the container in one
// transaction.
import { posix } from 'node:path';
import { conflict, invalidArgument } from '../../lib/errors.ts';
import { newId, rfc3339Nano } from '../../lib/ids.ts';
import { cleanPath, parseBind, PROPAGATION_MODES } from '../../lib/mount-spec.ts';
import type { ContainerConfig, HostConfig, MountPoint, ContainerResource as CR } from '../../store/kinds/container.ts';
import { ANONYMOUS_LABEL, type VolumeSpec, Volumes } from '../../store/kinds/volume.ts';
import type { AdmissionStore } from '../store.ts';


export interface ResolvedMounts {
  mountPoints: MountPoint[];
  /** Volumes to create with the container (named ones used for the first time, anonymous ones). */
  newVolumes: VolumeSpec[];
}

export interface ResolveInput {
  containerId: string;
  config: ContainerConfig;
  hostConfig: HostConfig;
  /** VolumesFrom lookup: the container a reference names (throws NotFound). */
  findContainer: (ref: string) => CR;
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => !!v && typeof v === 'object' && !Array.isArray(v);

export function volumeSpec(name: string, o: { anonymous: boolean; owner?: string; labels?: Record<string, string>; options?: Record<string, string> }): VolumeSpec {
  return {
    name,
    driver: 'local',
    options: o.options ?? {},
    labels: o.anonymous ? { ...(o.labels ?? {}), [ANONYMOUS_LABEL]: '' } : (o.labels ?? {}),
    created: rfc3339Nano(),
    anonymous: o.anonymous,
    ...(o.owner ? { owner: o.owner } : {}),
    desired: 'present',
  };
}

/** Host paths and tmpfs targets the container mounts itself (not volumes). */
function ownNonVolumeTargets(h: HostConfig): string[] {
  const out: string[] = [];
  for (const raw of h.Binds ?? []) {
    const b = parseBind(raw);
    if (!b.volume) out.push(b.destination);
  }
  for (const m of Array.isArray(h.Mounts) ? (h.Mounts as unknown[]) : []) {
    if (isObj(m) && m.Type !== 'volume' && typeof m.Target === 'string') out.push(cleanPath(m.Target));
  }
  if (isObj(h.Tmpfs)) for (const t of Object.keys(h.Tmpfs)) out.push(cleanPath(t));
  return out;
}

export function resolveContainerMounts(store: Pick<AdmissionStore, 'get'>, input: ResolveInput): ResolvedMounts {
  const h = input.hostConfig;
  const mountPoints: MountPoint[] = [];
  const newVolumes = new Map<string, VolumeSpec>();
  const targets = new Set<string>(ownNonVolumeTargets(h));
  const claim = (dest: string) => {
    if (targets.has(dest)) throw invalidArgument(`Duplicate mount point: ${dest}`);
    targets.add(dest);
  };

  /** A named volume used for the first time is created with the container. */
  const useNamed = (name: string, o: { labels?: Record<string, string>; options?: Record<string, string> } = {}) => {
    const v = store.get(Volumes, name);
    if (v?.spec.desired === 'removed') throw conflict(`volume ${name} is being removed`);
    if (!v && !newVolumes.has(name)) newVolumes.set(name, volumeSpec(name, { anonymous: false, ...o }));
  };
  const anonymous = (): string => {
    const name = newId();
    newVolumes.set(name, volumeSpec(name, { anonymous: true, owner: input.containerId }));
    return name;
  };

  for (const raw of h.Binds ?? []) {
    const b = parseBind(raw);
    if (!b.volume) continue;
    claim(b.destination);
    const name = b.source === '' ? anonymous() : b.source;
    if (b.source !== '') useNamed(name);
    mountPoints.push({
      type: 'volume', name, source: '', destination: b.destination, readOnly: b.readOnly,
      mode: b.mode || (b.source ? 'z' : ''), propagation: '', noCopy: b.nocopy,
    });
  }

  for (const m of Array.isArray(h.Mounts) ? (h.Mounts as unknown[]) : []) {
    if (!isObj(m) || m.Type !== 'volume') continue;
    const bad = (msg: string) => invalidArgument(`invalid mount config for type "volume": ${msg}`);
    const target = typeof m.Target === 'string' ? m.Target : '';
    if (!target) throw bad('field Target must not be empty');
    if (!target.startsWith('/')) throw bad(`invalid mount path: '${target}' mount path must be absolute`);
    const dest = cleanPath(target);
    if (dest === '/') throw invalidArgument(`invalid specification: destination can't be '/'`);
    const vo = isObj(m.VolumeOptions) ? m.VolumeOptions : {};
    const dc = isObj(vo.DriverConfig) ? vo.DriverConfig : {};
    const driver = typeof dc.Name === 'string' ? dc.Name : '';
    if (driver && driver !== 'local') throw invalidArgument(`error looking up volume plugin ${driver}: plugin "${driver}" not found`);
    const source = typeof m.Source === 'string' ? m.Source : '';
    if (source && !/^[a-zA-Z0-9][a-zA-Z0-9_.-]+$/.test(source)) {
      throw bad(`invalid volume name "${source}": names should be at least two alphanumeric characters`);
    }
    const subpath = typeof vo.Subpath === 'string' && vo.Subpath ? posix.normalize(vo.Subpath) : undefined;
    if (subpath && (subpath.startsWith('/') || subpath === '..' || subpath.startsWith('../'))) throw bad('subpath must be a relative path within the volume');
    claim(dest);
    const name = source || anonymous();
    if (source) useNamed(name, { labels: strMap(vo.Labels), options: strMap(dc.Options) });
    mountPoints.push({
      type: 'volume', name, source: '', destination: dest, readOnly: m.ReadOnly === true,
      mode: source ? 'z' : '', propagation: '', noCopy: vo.NoCopy === true, ...(subpath ? { subpath } : {}),
    });
  }

  for (const ref of Array.isArray(h.VolumesFrom) ? (h.VolumesFrom as unknown[]) : []) {
    if (typeof ref !== 'string' || !ref) continue;
    const [id, mode, ...rest] = ref.split(':');
    if (rest.length || (mode !== undefined && mode !== 'ro' && mode !== 'rw')) throw invalidArgument(`malformed volumes-from specification: ${ref}`);
    let from: CR;
    try {
      from = input.findContainer(id!);
    } catch {
      // 400, not 404: a 404 on create makes the docker CLI try to pull the image.
      throw invalidArgument(`No such container: ${id}`);
    }
    for (const mp of inheritedMounts(from)) {
      if (targets.has(mp.destination)) continue; // the container's own mounts win
      targets.add(mp.destination);
      // `:rw` never widens a mount the other container has read-only.
      mountPoints.push(mode ? { ...mp, readOnly: mp.readOnly || mode === 'ro' } : mp);
    }
  }

  const imageVolumes = Object.keys(isObj(input.config.Volumes) ? input.config.Volumes : {});
  for (const path of imageVolumes) {
    if (!path.startsWith('/')) continue;
    const dest = cleanPath(path);
    if (targets.has(dest) || dest === '/') continue;
    targets.add(dest);
    mountPoints.push({ type: 'volume', name: anonymous(), source: '', destination: dest, readOnly: false, mode: '', propagation: '', noCopy: false });
  }
  // HostConfig.VolumeDriver names the driver of the volumes the container creates; only local exists.
  const driver = typeof h.VolumeDriver === 'string' ? h.VolumeDriver : '';
  if (driver && driver !== 'local' && newVolumes.size > 0) throw invalidArgument(`error looking up volume plugin ${driver}: plugin "${driver}" not found`);
  return { mountPoints, newVolumes: [...newVolumes.values()] };
}

/** What VolumesFrom takes from a container: its volume mounts and its host-path binds. */
function inheritedMounts(c: CR): MountPoint[] {
  const out: MountPoint[] = [...(c.spec.mountPoints ?? [])];
  for (const raw of c.spec.hostConfig.Binds ?? []) {
    const b = parseBind(raw);
    if (b.volume) continue;
    out.push({ type: 'bind', name: '', source: b.source, destination: b.destination, readOnly: b.readOnly, mode: b.mode, propagation: b.propagation, noCopy: false });
  }
  for (const m of Array.isArray(c.spec.hostConfig.Mounts) ? (c.spec.hostConfig.Mounts as unknown[]) : []) {
    if (!isObj(m) || m.Type !== 'bind' || typeof m.Source !== 'string' || typeof m.Target !== 'string') continue;
    const bo = isObj(m.BindOptions) ? m.BindOptions : {};
    const prop = typeof bo.Propagation === 'string' && PROPAGATION_MODES.has(bo.Propagation) ? bo.Propagation : 'rprivate';
    out.push({ type: 'bind', name: '', source: m.Source, destination: cleanPath(m.Target), readOnly: m.ReadOnly === true, mode: '', propagation: prop, noCopy: false });
  }
  return out;
}

function strMap(v: unknown): Record<string, string> {
  if (!isObj(v)) return {};
  const out: Record<string, string> = {};
  for (const [k, x] of Object.entries(v)) if (typeof x === 'string') out[k] = x;
  return out;
}

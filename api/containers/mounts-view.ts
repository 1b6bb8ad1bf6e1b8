// `Mounts` of container inspect and list, as the reference shows them: the container's own
// binds and `--mount` binds/tmpfs from HostConfig, then its volume mount points (named,
// anonymous, and what VolumesFrom copied) with the volume's data directory as Source.
import { posix } from 'node:path';
import { cleanPath, parseBind } from '../../lib/mount-spec.ts';
import type { ContainerSpec } from '../../store/kinds/container.ts';

export interface MountView {
  Type: string;
  Name?: string;
  Source: string;
  Destination: string;
  Driver?: string;
  Mode: string;
  RW: boolean;
  Propagation: string;
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => !!v && typeof v === 'object' && !Array.isArray(v);

/** `volumeSource`: a volume's data directory by name ('' when unknown). */
export function mountsView(spec: ContainerSpec, volumeSource: (name: string) => string): MountView[] {
  const out: MountView[] = [];
  for (const raw of spec.hostConfig.Binds ?? []) {
    let b;
    try {
      b = parseBind(raw);
    } catch {
      continue;
    }
    if (b.volume) continue;
    out.push({ Type: 'bind', Source: b.source, Destination: b.destination, Mode: b.mode, RW: !b.readOnly, Propagation: b.propagation });
  }
  for (const m of Array.isArray(spec.hostConfig.Mounts) ? (spec.hostConfig.Mounts as unknown[]) : []) {
    if (!isObj(m) || typeof m.Target !== 'string') continue;
    const dest = cleanPath(m.Target);
    if (m.Type === 'bind') {
      const bo = isObj(m.BindOptions) ? m.BindOptions : {};
      const prop = typeof bo.Propagation === 'string' && bo.Propagation ? bo.Propagation : 'rprivate';
      out.push({ Type: 'bind', Source: String(m.Source ?? ''), Destination: dest, Mode: '', RW: m.ReadOnly !== true, Propagation: prop });
    } else if (m.Type === 'tmpfs') {
      out.push({ Type: 'tmpfs', Source: '', Destination: dest, Mode: '', RW: m.ReadOnly !== true, Propagation: '' });
    }
  }
  for (const mp of spec.mountPoints ?? []) {
    if (mp.type === 'bind') {
      out.push({ Type: 'bind', Source: mp.source, Destination: mp.destination, Mode: mp.mode, RW: !mp.readOnly, Propagation: mp.propagation || 'rprivate' });
    } else {
      const src = volumeSource(mp.name);
      out.push({
        Type: 'volume', Name: mp.name, Source: src && mp.subpath ? posix.join(src, mp.subpath) : src, Destination: mp.destination,
        Driver: 'local', Mode: mp.mode, RW: !mp.readOnly, Propagation: '',
      });
    }
  }
  return out;
}

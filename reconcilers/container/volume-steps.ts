// The volume part of a container's create and start steps: the image's content copied into new
// empty volumes at create (the reference's copy-up, skipped with nocopy), and the mount points
// resolved to host paths for the runtime spec at start.
import { resolveInRoot } from '../../drivers/sys/rootfs-files.ts';
import { failedPrecondition } from '../../lib/errors.ts';
import type { ContainerSpec } from '../../store/kinds/container.ts';
import type { LayersPort, VolumePort } from './deps.ts';

export interface VolumeMountSource {
  source: string;
  destination: string;
  readOnly: boolean;
  propagation: string;
}

function volumePort(volumes: VolumePort | undefined): VolumePort {
  if (!volumes) throw failedPrecondition('volumes are not available in this daemon');
  return volumes;
}

/** Create step: copy the image's files at each volume's destination into the volume when it is empty. */
export async function copyUpVolumes(id: string, spec: ContainerSpec, layers: LayersPort, volumes: VolumePort | undefined): Promise<void> {
  const wanted = (spec.mountPoints ?? []).filter((m) => m.type === 'volume' && !m.noCopy && !m.subpath);
  if (wanted.length === 0) return;
  const port = volumePort(volumes);
  const rootfs = await layers.mountRW(id);
  try {
    for (const m of wanted) {
      // Inside the rootfs: a symlink in the image must not lead the copy out of it.
      const src = await resolveInRoot(rootfs, m.destination).catch(() => undefined);
      if (src) await port.copyUp(m.name, src);
    }
  } finally {
    await layers.unmountRW(id).catch(() => {});
  }
}

/** Start step: each mount point as the host path to bind. */
export async function volumeMountSources(id: string, spec: ContainerSpec, volumes: VolumePort | undefined): Promise<VolumeMountSource[]> {
  const out: VolumeMountSource[] = [];
  for (const m of spec.mountPoints ?? []) {
    const source = m.type === 'volume' ? await volumePort(volumes).source(id, m.name, m.subpath) : m.source;
    out.push({ source, destination: m.destination, readOnly: m.readOnly, propagation: m.propagation });
  }
  return out;
}

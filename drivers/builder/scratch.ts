// The scratch rootfs layers a build makes for COPY/ADD and COPY --from: named apart from
// containers' read-write layers, so the ones an interrupted build left can be found and removed.
import type { Logger } from 'pino';
import type { LayerStore } from '../storage/types.ts';

/** Prefix of the scratch rootfs layers a build makes for COPY/ADD (never a container's). */
export const SCRATCH_PREFIX = 'build-';

/**
 * Scratch rootfs layers a build left when the daemon died in the middle of it: removed at
 * start-up (no build survives a restart).
 */
export async function removeLeftoverScratch(layers: Pick<LayerStore, 'listRW' | 'removeRW'>, log: Logger): Promise<void> {
  const left = layers.listRW().filter((id) => id.startsWith(SCRATCH_PREFIX));
  for (const id of left) await layers.removeRW(id);
  if (left.length) log.info({ layers: left }, 'scratch layers of interrupted builds removed');
}

// The image one build step makes: the parent's layers (plus the step's own layer, if it made
// one), the stage's run config as Config, the step's comment config as container_config, and
// one more history entry, shaped like the configs the reference's classic builder writes.
import type { BuildImage } from '../../lib/ports/build.ts';
import { rfc3339Nano } from '../../lib/ids.ts';
import type { ImageConfigBlob } from '../../lib/image-config.ts';
import type { LoadedImage } from '../../lib/ports/images.ts';
import { imageIdOf } from '../image/load-plan.ts';
import type { Platform } from '../../lib/platform.ts';
import type { Config } from './state.ts';

export interface StepImage {
  parent: BuildImage | null;
  layer: { diffId: string; chainId: string; size: number } | null;
  config: Config;
  containerConfig: Config;
  containerId: string;
  author: string;
  platform: Platform;
}

export function stepImage(s: StepImage): LoadedImage {
  const parent = parseConfig(s.parent?.rawConfig);
  const created = rfc3339Nano();
  const createdBy = Array.isArray(s.containerConfig.Cmd) ? (s.containerConfig.Cmd as string[]).join(' ') : '';
  const history = {
    created,
    ...(s.author ? { author: s.author } : {}),
    ...(createdBy ? { created_by: createdBy } : {}),
    ...(s.layer ? {} : { empty_layer: true }),
  };
  const diffIds = [...(s.parent?.diffIds ?? []), ...(s.layer ? [s.layer.diffId] : [])];
  const image: Record<string, unknown> = {
    architecture: parent.architecture || s.platform.architecture,
    ...(s.author ? { author: s.author } : {}),
    config: { ...s.config, Image: s.parent?.id ?? '' },
    container: s.containerId,
    container_config: { ...s.containerConfig, Image: s.parent?.id ?? '' },
    created,
    history: [...(parent.history ?? []), history],
    os: s.platform.os,
    ...(s.parent ? { parent: s.parent.id } : {}),
    rootfs: { type: 'layers', diff_ids: diffIds },
    ...(parent.variant ? { variant: parent.variant } : {}),
  };
  const rawConfig = JSON.stringify(image);
  return {
    id: imageIdOf(rawConfig),
    rawConfig,
    diffIds,
    chainId: s.layer ? s.layer.chainId : (s.parent?.chainId ?? null),
    size: (s.parent?.size ?? 0) + (s.layer?.size ?? 0),
    repoTags: [],
  };
}

export function parseConfig(raw: string | undefined): ImageConfigBlob {
  if (!raw) return { rootfs: { type: 'layers', diff_ids: [] } };
  try {
    return JSON.parse(raw) as ImageConfigBlob;
  } catch {
    return { rootfs: { type: 'layers', diff_ids: [] } };
  }
}

/** The container config an image was made from (for the cache); null when it has none. */
export function containerConfigOf(img: BuildImage): Config | null {
  const c = (parseConfig(img.rawConfig) as { container_config?: Config }).container_config;
  return c && typeof c === 'object' ? c : null;
}

/** The created time of an image, for picking the newest cache match. */
export function createdOf(img: BuildImage): string {
  return (parseConfig(img.rawConfig) as { created?: string }).created ?? '';
}

// `docker import`: one rootfs tarball becomes a one-layer image whose config is built from the
// `--change` instructions, shaped like the config the reference daemon writes for an import.
import type { Readable } from 'node:stream';
import type { Logger } from 'pino';
import { rfc3339Nano } from '../../lib/ids.ts';
import type { ImportOptions, LoadedImage } from '../../lib/ports/images.ts';
import type { LayerStore } from '../storage/types.ts';
import { applyChanges } from './changes.ts';
import { imageIdOf } from './load-plan.ts';
import { parsePlatform, type Platform } from '../../lib/platform.ts';
import { invalidArgument } from '../../lib/errors.ts';

export interface ImportDeps {
  layers: LayerStore;
  log: Logger;
  platform: Platform;
}

/** A container config with every field the reference daemon always serialises. */
export function emptyContainerConfig(): Record<string, unknown> {
  return {
    Hostname: '', Domainname: '', User: '',
    AttachStdin: false, AttachStdout: false, AttachStderr: false,
    Tty: false, OpenStdin: false, StdinOnce: false,
    Env: null, Cmd: null, Image: '', Volumes: null, WorkingDir: '', Entrypoint: null,
    OnBuild: null, Labels: null,
  };
}

export async function importRootfs(deps: ImportDeps, body: Readable, opts: ImportOptions, signal: AbortSignal): Promise<LoadedImage> {
  const platform = opts.platform ? parsePlatform(opts.platform, deps.platform) : deps.platform;
  if (platform.os !== deps.platform.os) {
    throw invalidArgument(`image operating system "${platform.os}" cannot be used on this platform`);
  }
  // Validate the changes before unpacking anything: a typo must not cost a full layer apply.
  const config = applyChanges(emptyContainerConfig(), opts.changes);
  const layer = await deps.layers.applyLayer(null, body, { signal });
  const created = rfc3339Nano();
  const comment = opts.message || 'Imported from -';
  const image: Record<string, unknown> = {
    comment,
    created,
    config,
    architecture: platform.architecture,
    ...(platform.variant ? { variant: platform.variant } : {}),
    os: platform.os,
    rootfs: { type: 'layers', diff_ids: [layer.diffId] },
    history: [{ created, comment }],
  };
  const rawConfig = JSON.stringify(image);
  deps.log.debug({ diffId: layer.diffId }, 'rootfs imported');
  return {
    id: imageIdOf(rawConfig),
    rawConfig,
    diffIds: [layer.diffId],
    chainId: layer.chainId,
    size: layer.size,
    repoTags: [],
  };
}

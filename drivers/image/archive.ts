// The ImageArchivePort the API layer streams image tarballs through: load (docker save and OCI
// layout tarballs), import (a rootfs tarball) and save.
import type { Readable } from 'node:stream';
import type { Logger } from 'pino';
import type { ImageArchivePort, ImportOptions, LoadedImage, SaveImage } from '../../lib/ports/images.ts';
import type { LayerStore } from '../storage/types.ts';
import { importRootfs } from './import-rootfs.ts';
import { loadArchive } from './load.ts';
import { hostPlatform, type Platform } from '../../lib/platform.ts';
import { saveImages } from './save.ts';

export interface ImageArchiveOptions {
  layers: LayerStore;
  /** Where archives are spooled while they are read or written (ENGINE_TMPDIR). */
  tmpDir: string;
  log: Logger;
  /** The daemon's platform: picks manifests in multi-platform indexes, default for import. */
  platform?: { os: string; architecture: string; variant?: string };
}

export function createImageArchive(opts: ImageArchiveOptions): ImageArchivePort {
  const platform: Platform = opts.platform ?? hostPlatform();
  const log = opts.log.child({ component: 'image-archive' });
  const deps = { layers: opts.layers, tmpDir: opts.tmpDir, log, platform };
  return {
    load(body: Readable, signal: AbortSignal, onProgress?: (msg: string) => void, picked?: Platform): Promise<LoadedImage[]> {
      return loadArchive(deps, body, signal, onProgress, picked);
    },
    importRootfs(body: Readable, importOpts: ImportOptions, signal: AbortSignal): Promise<LoadedImage> {
      return importRootfs(deps, body, importOpts, signal);
    },
    save(images: SaveImage[], signal: AbortSignal): Readable {
      return saveImages(deps, images, signal);
    },
  };
}

// The ports the image drivers fill (drivers/image/: load, import, save, commit), declared below
// both api/ (which calls them) and drivers/ (which implement them): neither imports the other.
import type { Readable } from 'node:stream';
import type { Platform } from '../platform.ts';

export interface LoadedImage {
  id: string;
  rawConfig: string;
  diffIds: string[];
  chainId: string | null;
  size: number;
  /** Fully normalised references found in the archive ("docker.io/library/busybox:latest"). */
  repoTags: string[];
}

export interface ImportOptions {
  /** Dockerfile-style instructions: "CMD [\"sh\"]", "ENV A=b", "WORKDIR /x", ... */
  changes: string[];
  message: string;
  /** Platform "os/arch" (defaults to the host's). */
  platform?: string;
}

export interface SaveImage {
  id: string;
  rawConfig: string;
  diffIds: string[];
  chainId: string | null;
  repoTags: string[];
  /**
   * A multi-platform image saved whole: the images of its other platforms here. Its tags then name
   * one OCI index of all of them (the reference's containerd store), manifest.json this one only.
   */
  platforms?: SavePlatform[];
}

export type SavePlatform = Omit<SaveImage, 'repoTags' | 'platforms'>;

export interface ImageArchivePort {
  /**
   * Unpack a `docker save` tarball or an OCI image-layout tarball into the layer store; `platform`
   * (API 1.48) picks from its indexes (the host's when absent).
   */
  load(body: Readable, signal: AbortSignal, onProgress?: (msg: string) => void, platform?: Platform): Promise<LoadedImage[]>;
  /** Make a one-layer image from a rootfs tarball (optionally compressed). */
  importRootfs(body: Readable, opts: ImportOptions, signal: AbortSignal): Promise<LoadedImage>;
  /** A `docker save` tarball (docker-archive layout plus OCI index.json/oci-layout). */
  save(images: SaveImage[], signal: AbortSignal): Readable;
}

export interface CommitRequest {
  containerId: string;
  /** The container's image (null for a container of an empty image). */
  parent: { rawConfig: string; diffIds: string[]; chainId: string | null; size: number } | null;
  /** The Config of the request body; null means: start from the container's own config. */
  config: Record<string, unknown> | null;
  /** The container's config as it was created (becomes container_config, and fills gaps in `config`). */
  containerConfig: Record<string, unknown>;
  /** Dockerfile instructions (`docker commit --change`). */
  changes: string[];
  author: string;
  comment: string;
}

export interface ImageCommitPort {
  /** Turn the container's RW layer into a layer on top of `parent` and build the image config. */
  commit(req: CommitRequest, signal: AbortSignal): Promise<LoadedImage>;
}

// The classic builder's contracts, declared below both api/ (which serves POST /build and fills
// the backend from the store) and drivers/builder/ (which runs the Dockerfile): the builder asks the
// backend for images and containers, the way the reference's builder asks its daemon backend.
import type { Readable } from 'node:stream';
import type { LoadedImage } from './images.ts';

export interface BuildImage {
  id: string;
  rawConfig: string;
  diffIds: string[];
  chainId: string | null;
  size: number;
  /** The image this one was built on, when it was built here ('' otherwise). */
  parent?: string;
}

export interface BuildOptions {
  dockerfile: string;
  buildArgs: Record<string, string | null>;
  labels: Record<string, string>;
  noCache: boolean;
  /** Remove intermediate containers after a successful step. */
  remove: boolean;
  /** Remove them after a failed step too. */
  forceRemove: boolean;
  pull: boolean;
  target: string;
  platform: string;
  cacheFrom: string[];
  /** HostConfig fields of every RUN container (NetworkMode, ExtraHosts, ShmSize, resources). */
  hostConfig: Record<string, unknown>;
}

/** Output of a build: `stream` lines, the image ID as `aux`, a RUN's stderr in red, as the reference. */
export interface BuildOutput {
  stream(text: string): void;
  aux(value: unknown): void;
  /** Pull progress lines of a FROM that is not present. */
  progress(line: Record<string, unknown>): void;
}

export interface BuildBackend {
  /** A usable local image by reference, id or id prefix; undefined when there is none. */
  findImage(ref: string): BuildImage | undefined;
  /** Pull `ref` from its registry (progress to `out`); the pulled image. */
  pullImage(ref: string, platform: string, out: BuildOutput, signal: AbortSignal): Promise<BuildImage>;
  /** Images whose parent is `parentId` ('' for images with none): where the cache looks. */
  children(parentId: string): BuildImage[];
  /** Record a built image and wait until it is usable. */
  addImage(img: LoadedImage, parentId: string, signal: AbortSignal): Promise<void>;
  /** Create a container for a RUN step; its id. */
  createContainer(config: Record<string, unknown>, hostConfig: Record<string, unknown>, signal: AbortSignal): Promise<string>;
  /** Start it, hand its output to `onOutput` and resolve with its exit code once it has exited. */
  runContainer(id: string, onOutput: (stream: 'stdout' | 'stderr', chunk: Buffer) => void, signal: AbortSignal): Promise<number>;
  removeContainer(id: string): Promise<void>;
}

export interface BuilderPort {
  /** Run a build from a context tarball; resolves with the final image id. */
  build(context: Readable, opts: BuildOptions, backend: BuildBackend, out: BuildOutput, signal: AbortSignal): Promise<string>;
}

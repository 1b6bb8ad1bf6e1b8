// State shared by every pull and push of one daemon: the client, the daemon-wide concurrency
// limits, downloads in flight (so a layer shared by concurrent pulls is fetched once), and what
// is known about where blobs live (for cross-repository mounts) and which layers are foreign.
import type { Logger } from 'pino';
import type { LayerStore } from '../storage/types.ts';
import type { RegistryClient } from './client.ts';
import type { Limiter } from './limiter.ts';
import type { Descriptor } from './manifest.ts';
import type { HostMatcher } from './registry-config.ts';
import type { Platform } from './types.ts';

export interface DownloadEvents {
  waiting(): void;
  progress(current: number, total: number): void;
  retrying(seconds: number): void;
  verifying(): void;
}

export interface SharedDownload {
  /** Resolves to the spooled, verified blob file. */
  done: Promise<string>;
  /** Where the blob is spooled. */
  file: string;
  listeners: Set<DownloadEvents>;
  refs: number;
  finished: boolean;
  abort: AbortController;
}

export interface DistContext {
  log: Logger;
  client: RegistryClient;
  layers: LayerStore;
  platform: Platform;
  downloads: Limiter;
  uploads: Limiter;
  maxDownloadAttempts: number;
  retryDelayMs: number;
  /** A blob body silent this long fails its attempt. */
  stallTimeoutMs: number;
  tmpDir: string;
  certsDir: string;
  nondistributable: HostMatcher;
  shared: Map<string, SharedDownload>;
  /** blob digest → `registry/path` repositories known to hold it. */
  blobRepos: Map<string, Set<string>>;
  /** diff id → the foreign descriptor it was pulled from. */
  foreign: Map<string, Descriptor>;
  /** diff id → the gzip blob a push produced for a layer stored uncompressed. */
  compressed: Map<string, { digest: string; size: number }>;
}

export function rememberBlob(ctx: DistContext, digest: string, registry: string, path: string): void {
  let s = ctx.blobRepos.get(digest);
  if (!s) {
    s = new Set();
    ctx.blobRepos.set(digest, s);
  }
  s.add(`${registry}/${path}`);
}

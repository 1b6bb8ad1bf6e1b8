// The distribution contract: pulling images from and pushing them to registries (protocol v2).
// The API layer declares a structural twin of `Distribution` (api/distribution/port.ts); cmd wires
// createDistribution() into it.
import type { Logger } from 'pino';
import type { PulledManifests } from '../../lib/image-target.ts';
import type { LayerStore } from '../storage/types.ts';
import type { JsonMessage, RegistryAuth } from '../../lib/ports/registry.ts';

/** The AuthConfig clients send (lib/ports/registry.ts). */
export type AuthConfig = RegistryAuth;
export type { JsonMessage };

export interface Platform {
  os: string;
  architecture: string;
  variant?: string;
}

export interface DistributionOptions {
  log: Logger;
  /** host:port or CIDR; 127.0.0.0/8 (and ::1) is always insecure. */
  insecureRegistries: string[];
  /** Mirrors of docker.io, tried first for pulls from it (`https://mirror.example.com`). */
  registryMirrors: string[];
  /** `<certsDir>/<host:port>/ca.crt`, `*.cert` + `*.key` client pairs. */
  certsDir: string;
  maxConcurrentDownloads: number;
  maxDownloadAttempts: number;
  maxConcurrentUploads: number;
  /** host:port or CIDR (of the resolved address) to which foreign layers are pushed. */
  allowNondistributable: string[];
  proxies?: { http?: string; https?: string; noProxy?: string };
  layers: LayerStore;
  /** The daemon's own platform: the default for manifest-list selection. */
  platform: Platform;
  /** Where blobs are spooled while downloading (default os.tmpdir()). */
  tmpDir?: string;
  /** First retry delay; the n-th retry waits n times this (default 5000 ms, as the reference daemon). */
  retryDelayMs?: number;
  /** Deadline of each registry request before its body starts (default 60 s). */
  requestTimeoutMs?: number;
  /** A blob download that receives nothing for this long fails its attempt (retried as any other; default 60 s). */
  stallTimeoutMs?: number;
}

export interface PullOptions {
  auth?: AuthConfig;
  /** `os[/arch[/variant]]`; empty = the daemon's platform. */
  platform?: string;
  signal: AbortSignal;
  onProgress(msg: JsonMessage): void;
  /**
   * Keep the image's layers leased after the pull, so that no image removal takes them before the
   * caller has recorded the image; the caller then calls result.release(). Without it the lease
   * ends with the pull.
   */
  holdLayers?: boolean;
}

export interface PullResult {
  /** sha256 of rawConfig. */
  id: string;
  rawConfig: string;
  diffIds: string[];
  chainId: string | null;
  /** Sum of the layers' unpacked sizes. */
  size: number;
  /** `domain/path@sha256:...` (normalised) of the manifest pulled. */
  repoDigest: string;
  /** The manifest (and index) it came by. */
  manifests?: PulledManifests;
  /** Ends the layer lease kept by holdLayers (idempotent; a no-op without it). */
  release(): void;
}

export interface PushImage {
  rawConfig: string;
  diffIds: string[];
  chainId: string | null;
}

export interface PushOptions {
  auth?: AuthConfig;
  signal: AbortSignal;
  onProgress(msg: JsonMessage): void;
}

export interface PushResult {
  digest: string;
  size: number;
}

export interface AuthResult {
  Status: 'Login Succeeded';
  IdentityToken?: string;
}

export interface DistributionInspect {
  Descriptor: { mediaType: string; digest: string; size: number; urls?: string[] };
  Platforms: Array<{ architecture: string; os: string; variant?: string; 'os.version'?: string; 'os.features'?: string[] }>;
}

export interface Distribution {
  pull(ref: string, opts: PullOptions): Promise<PullResult>;
  push(ref: string, image: PushImage, opts: PushOptions): Promise<PushResult>;
  checkAuth(serverAddress: string, auth: AuthConfig, signal?: AbortSignal): Promise<AuthResult>;
  inspectDistribution(ref: string, auth: AuthConfig | undefined, signal?: AbortSignal): Promise<DistributionInspect>;
  /** Tags of a repository (for pulls of every tag). */
  listTags(repo: string, auth: AuthConfig | undefined, signal?: AbortSignal): Promise<string[]>;
}

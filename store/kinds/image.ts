// The image kind: name = 'sha256:<64 hex>' (the config digest). Load, import, pull, build and
// commit write an image's spec; the image reconciler verifies its layers and writes status.
import * as z from 'zod';
import { defineKind } from '../kind.ts';
import type { Resource } from '../types.ts';
import type { ManifestRef, PulledManifests } from '../../lib/image-target.ts';

export type { ImageConfigBlob } from '../../lib/image-config.ts';

export interface ImageSpec {
  /** sha256:<hex> of rawConfig. */
  id: string;
  /** The exact config JSON text (its digest is the id). */
  rawConfig: string;
  /** Uncompressed layer digests, bottom first (== config.rootfs.diff_ids). */
  diffIds: string[];
  /** Chain id of the top layer, or null for an image with no layers. */
  chainId: string | null;
  /** Sum of the layers' unpacked sizes in bytes. */
  size: number;
  /** `name@sha256:...` references of manifests this image was pulled by or pushed to. */
  repoDigests: string[];
  /** Parent image id (locally built/committed images), "" otherwise. */
  parent: string;
  /** RFC 3339 time the image arrived in this daemon (load, import, pull). */
  loadedAt: string;
  /**
   * Bumped when the same content is added again after a failed verification: a new generation
   * for the reconciler to verify (a level, as a restart's run generation is). Absent: never retried.
   */
  retryGeneration?: number;
  /** The manifest (and index) the last pull of it came by; absent for an image made here. */
  pulled?: PulledManifests;
  desired: 'present' | 'removed';
}

export interface ImageStatus {
  observedGeneration: number;
  phase: 'pending' | 'ready' | 'failed' | 'removing';
  error: string;
  /**
   * With the supervisor's snapshotter: the digest clients know the image by (lib/image-target.ts),
   * written with `ready`; the API shows it as the image's Id. Absent: the Id is the config digest.
   */
  target?: string;
  /** With target: it as a descriptor (mediaType, size), when known. */
  descriptor?: ManifestRef;
  /** With descriptor: the size of the image's content blobs (manifest, config, layers). */
  contentSize?: number;
}

export const digest = z.string().regex(/^sha256:[0-9a-f]{64}$/);

const manifestRef = z.object({ mediaType: z.string(), digest, size: z.number().int().nonnegative() });
const pulledSchema = z.object({
  manifest: manifestRef,
  contentSize: z.number().int().nonnegative(),
  index: manifestRef.extend({
    manifests: z.array(manifestRef.extend({
      platform: z.object({ os: z.string(), architecture: z.string(), variant: z.string().optional() }).optional(),
      annotations: z.record(z.string(), z.string()).optional(),
    })),
  }).optional(),
}) satisfies z.ZodType<PulledManifests>;

const imageSpecSchema = z.object({
  id: digest,
  rawConfig: z.string(),
  diffIds: z.array(digest),
  chainId: digest.nullable(),
  size: z.number().nonnegative(),
  repoDigests: z.array(z.string()),
  parent: z.string(),
  loadedAt: z.string(),
  retryGeneration: z.number().int().nonnegative().optional(),
  pulled: pulledSchema.optional(),
  desired: z.enum(['present', 'removed']),
}) satisfies z.ZodType<ImageSpec>;

const imageStatusSchema = z.object({
  observedGeneration: z.number().int().nonnegative(),
  phase: z.enum(['pending', 'ready', 'failed', 'removing']),
  error: z.string(),
  target: digest.optional(),
  descriptor: manifestRef.optional(),
  contentSize: z.number().int().nonnegative().optional(),
}) satisfies z.ZodType<ImageStatus>;

export type ImageResource = Resource<ImageSpec, ImageStatus>;

export const Images = defineKind<ImageSpec, ImageStatus>({ name: 'image', version: 1, schema: { spec: imageSpecSchema, status: imageStatusSchema } });

// Schemas of kinds 'image' (ImageSpec/ImageStatus) and 'reference' (a tag pointing at an image).
import * as z from 'zod';
import type { KindSchema } from '../schema.ts';
import type { ImageSpec, ImageStatus, ReferenceSpec } from '../types.ts';
import { KIND } from '../types.ts';

const digest = z.string().regex(/^sha256:[0-9a-f]{64}$/);

export const imageSpecSchema = z.object({
  id: digest,
  rawConfig: z.string(),
  diffIds: z.array(digest),
  chainId: digest.nullable(),
  size: z.number().nonnegative(),
  repoDigests: z.array(z.string()),
  parent: z.string(),
  loadedAt: z.string(),
  retryGeneration: z.number().int().nonnegative().optional(),
  desired: z.enum(['present', 'removed']),
}) satisfies z.ZodType<ImageSpec>;

export const imageStatusSchema = z.object({
  observedGeneration: z.number().int().nonnegative(),
  phase: z.enum(['pending', 'ready', 'failed', 'removing']),
  error: z.string(),
}) satisfies z.ZodType<ImageStatus>;

export const imageSchema: KindSchema = { kind: KIND.image, version: 1, spec: imageSpecSchema, status: imageStatusSchema };

export const referenceSchema: KindSchema = {
  kind: KIND.reference,
  version: 1,
  spec: z.object({ imageId: digest }) satisfies z.ZodType<ReferenceSpec>,
  status: z.object({}),
};

// Schemas of kind 'volume' (VolumeSpec/VolumeStatus) and kind 'migration' (a one-time rewrite of
// the store has run; name: which one).
import * as z from 'zod';
import type { KindSchema } from '../schema.ts';
import type { VolumeSpec, VolumeStatus } from '../volume-types.ts';
import { KIND } from '../types.ts';
import { VOLUME_KIND } from '../volume-types.ts';

const stringMap = z.record(z.string(), z.string());

export const volumeSpecSchema = z.object({
  name: z.string().min(1),
  driver: z.literal('local'),
  options: stringMap,
  labels: stringMap,
  created: z.string(),
  anonymous: z.boolean(),
  owner: z.string().optional(),
  desired: z.enum(['present', 'removed']),
}) satisfies z.ZodType<VolumeSpec>;

export const volumeStatusSchema = z.object({
  observedGeneration: z.number().int().nonnegative(),
  phase: z.enum(['pending', 'ready', 'failed', 'removing']),
  error: z.string(),
  mountpoint: z.string(),
}) satisfies z.ZodType<VolumeStatus>;

export const volumeSchema: KindSchema = { kind: VOLUME_KIND, version: 1, spec: volumeSpecSchema, status: volumeStatusSchema };

export const migrationSchema: KindSchema = { kind: KIND.migration, version: 1, spec: z.object({ at: z.string() }), status: z.object({}) };

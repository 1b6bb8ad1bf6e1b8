// Schema of kind 'pull' (store/pull-types.ts).
import * as z from 'zod';
import type { KindSchema } from '../schema.ts';
import { PULL_KIND, type PullSpec, type PullStatus } from '../pull-types.ts';

export const pullSchema: KindSchema = {
  kind: PULL_KIND,
  version: 1,
  spec: z.object({
    reference: z.string().min(1),
    platform: z.string(),
    request: z.number().int().nonnegative(),
    desired: z.enum(['present', 'removed']),
  }) satisfies z.ZodType<PullSpec>,
  status: z.object({
    observedGeneration: z.number().int().nonnegative(),
    phase: z.enum(['pending', 'pulling', 'done', 'failed']),
    imageId: z.string(),
    changed: z.boolean(),
    error: z.string(),
    errorCode: z.string(),
    startedAt: z.string(),
    finishedAt: z.string(),
  }) satisfies z.ZodType<PullStatus>,
};

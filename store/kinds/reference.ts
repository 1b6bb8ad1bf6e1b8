// The reference kind (tags): name = the fully normalised reference ("docker.io/library/busybox:latest");
// points at an image id. Digest references ("repo@sha256:...") are kept in ImageSpec.repoDigests.
import * as z from 'zod';
import { defineKind } from '../kind.ts';
import type { Resource } from '../types.ts';
import { digest } from './image.ts';

export interface ReferenceSpec {
  imageId: string;
}
export type ReferenceStatus = Record<string, never>;

export type ReferenceResource = Resource<ReferenceSpec, ReferenceStatus>;

export const References = defineKind<ReferenceSpec, ReferenceStatus>({
  name: 'reference',
  version: 1,
  schema: { spec: z.object({ imageId: digest }) satisfies z.ZodType<ReferenceSpec>, status: z.object({}) as z.ZodType<ReferenceStatus> },
});

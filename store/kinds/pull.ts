// The pull kind: name = pullName(reference, platform). "This image
// should be present, from this reference" as desired state: POST /images/create writes it (a
// repeated pull bumps `request`, so the pull runs again: a tag may have moved), the pull
// reconciler converges it (downloads, writes the image and its tag, reports progress) and writes
// status. A pull cut off by a daemon crash is still wanted at the next start and runs again there.

import * as z from 'zod';
import { defineKind } from '../kind.ts';
import type { Resource } from '../types.ts';
import type { Store } from '../store.ts';

export interface PullSpec {
  /** Fully normalised reference with a tag or a digest ("docker.io/library/busybox:latest"). */
  reference: string;
  /** `os[/arch[/variant]]` asked for; '' = the daemon's platform. */
  platform: string;
  /** Bumped by each request for this pull: a pull asked for again is done again. */
  request: number;
  /** removed: cancel what runs and delete the record (the client that asked went away). */
  desired: 'present' | 'removed';
}

export interface PullStatus {
  observedGeneration: number;
  /** pending: not started; pulling: under way (or to be resumed); done; failed (`error`). */
  phase: 'pending' | 'pulling' | 'done' | 'failed';
  /** The image the reference resolved to (done). */
  imageId: string;
  /** The pull changed what the reference names (a new image, a moved tag): "Downloaded newer image". */
  changed: boolean;
  error: string;
  /** Error class of `error` (lib/errors ErrorCode), '' when none: lets the API answer as a direct pull would. */
  errorCode: string;
  /** RFC 3339 time the last run started and ended ('' while not). */
  startedAt: string;
  finishedAt: string;
}

export function pullName(reference: string, platform: string): string {
  return platform ? `${reference}|${platform}` : reference;
}

export const NEW_PULL_STATUS: PullStatus = {
  observedGeneration: 0,
  phase: 'pending',
  imageId: '',
  changed: false,
  error: '',
  errorCode: '',
  startedAt: '',
  finishedAt: '',
};

export type PullResource = Resource<PullSpec, PullStatus>;

export const Pulls = defineKind<PullSpec, PullStatus>({
  name: 'pull',
  version: 1,
  schema: {
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
  },
});

/**
 * Asks for a pull (`docker pull`'s wish): makes the record, or bumps its `request` so it runs again.
 * Answers the generation whose outcome answers this request.
 */
export function askPull(store: Pick<Store, 'get' | 'create' | 'updateSpec'>, reference: string, platform: string): number {
  const name = pullName(reference, platform);
  if (!store.get(Pulls, name)) return store.create(Pulls, name, { reference, platform, request: 1, desired: 'present' }, NEW_PULL_STATUS).generation;
  return store.updateSpec(Pulls, name, (s) => ({ ...s, request: s.request + 1, desired: 'present' })).generation;
}

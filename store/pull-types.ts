// Resource shapes for pulls: kind 'pull', name = pullName(reference, platform). "This image
// should be present, from this reference" as desired state: POST /images/create writes it (a
// repeated pull bumps `request`, so the pull runs again: a tag may have moved), the pull
// reconciler converges it (downloads, writes the image and its tag, reports progress) and writes
// status. A pull cut off by a daemon crash is still wanted at the next start and runs again there.

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

export const PULL_KIND = 'pull';

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

// Resource shapes for volumes: kind 'volume', name = the volume's name (a user's name, or 64 hex
// for an anonymous one). The API writes the spec; the volume reconciler creates the data
// directory (status ready) and, once the spec says removed, takes the data away and deletes the
// record: the record outlives its data, never the other way round.

export interface VolumeSpec {
  name: string;
  /** Only the built-in `local` driver exists. */
  driver: 'local';
  /** DriverOpts as the client gave them (`type`, `o`, `device`: what to mount on the data directory). */
  options: Record<string, string>;
  labels: Record<string, string>;
  /** RFC 3339 time of creation. */
  created: string;
  /** Made for a container's mount without a name (`-v /path`, image VOLUME). */
  anonymous: boolean;
  /** The container that owns it (anonymous volumes): `rm -v` of the owner removes it. */
  owner?: string;
  desired: 'present' | 'removed';
}

export interface VolumeStatus {
  observedGeneration: number;
  phase: 'pending' | 'ready' | 'failed' | 'removing';
  error: string;
  /** Host directory containers mount: `<data-root>/volumes/<name>/_data`. */
  mountpoint: string;
}

export const VOLUME_KIND = 'volume';

/** Label the reference daemon puts on anonymous volumes. */
export const ANONYMOUS_LABEL = 'com.docker.volume.anonymous';

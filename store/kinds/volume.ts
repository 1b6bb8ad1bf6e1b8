// The volume kind: name = the volume's name (a user's name, or 64 hex
// for an anonymous one). The API writes the spec; the volume reconciler creates the data
// directory (status ready) and, once the spec says removed, takes the data away and deletes the
// record: the record outlives its data, never the other way round.

import * as z from 'zod';
import { ownerKeys, ownerRefSchema, type OwnerRef } from '../owner.ts';
import { notFound } from '../../lib/errors.ts';
import { defineKind } from '../kind.ts';
import type { Store } from '../store.ts';
import type { Resource } from '../types.ts';

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
  /** The object that made it (a stack), found by the `owner` index (store/owner.ts). */
  ownerRef?: OwnerRef;
  desired: 'present' | 'removed';
}

export interface VolumeStatus {
  observedGeneration: number;
  phase: 'pending' | 'ready' | 'failed' | 'removing';
  error: string;
  /** Host directory containers mount: `<data-root>/volumes/<name>/_data`. */
  mountpoint: string;
}

/** Label the reference daemon puts on anonymous volumes. */
export const ANONYMOUS_LABEL = 'com.docker.volume.anonymous';

const stringMap = z.record(z.string(), z.string());

const volumeSpecSchema = z.object({
  name: z.string().min(1),
  driver: z.literal('local'),
  options: stringMap,
  labels: stringMap,
  created: z.string(),
  anonymous: z.boolean(),
  owner: z.string().optional(),
  ownerRef: ownerRefSchema.optional(),
  desired: z.enum(['present', 'removed']),
}) satisfies z.ZodType<VolumeSpec>;

const volumeStatusSchema = z.object({
  observedGeneration: z.number().int().nonnegative(),
  phase: z.enum(['pending', 'ready', 'failed', 'removing']),
  error: z.string(),
  mountpoint: z.string(),
}) satisfies z.ZodType<VolumeStatus>;

export type VolumeResource = Resource<VolumeSpec, VolumeStatus>;

export const Volumes = defineKind<VolumeSpec, VolumeStatus>({ name: 'volume', version: 1, schema: { spec: volumeSpecSchema, status: volumeStatusSchema }, indexes: { owner: (r) => ownerKeys(r.spec) } });

/** The volumes the daemon has (one being removed is gone for clients). */
export function liveVolumes(store: Pick<Store, 'list'>): VolumeResource[] {
  return store.list(Volumes).filter((v) => v.spec.desired !== 'removed');
}

/** Exact name only, as the reference: 404 `get <name>: no such volume`. */
export function findVolume(store: Pick<Store, 'get'>, name: string): VolumeResource {
  const v = store.get(Volumes, name);
  if (!v || v.spec.desired === 'removed') throw notFound(`get ${name}: no such volume`);
  return v;
}

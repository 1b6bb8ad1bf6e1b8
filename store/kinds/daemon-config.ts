// The daemon-config kind: one record, `daemon`, the configuration file as last read. Its spec is
// what the file said (its text, or null when it was missing) and why it was read (the daemon's
// start, SIGHUP, or the file watcher); the config-reload reconciler applies it all or nothing and
// records the outcome: the revision it looked at, the reloadable values now live, a condition.

import * as z from 'zod';
import { defineKind } from '../kind.ts';
import type { Resource } from '../types.ts';

/** The one record's name. */
export const DAEMON_CONFIG = 'daemon';

export type ReloadCause = 'start' | 'signal' | 'watch';

export interface DaemonConfigSpec {
  /** Counts reads of the file: each read is a reload asked for, even with the same text. */
  revision: number;
  cause: ReloadCause;
  /** The file's text; null when it does not exist (nothing changes then). */
  text: string | null;
}

export interface DaemonConfigCondition {
  /** `Applied`: whether the revision last looked at is the configuration the daemon runs with. */
  type: 'Applied';
  status: 'True' | 'False';
  /** Applied, Unchanged, FileMissing, Invalid, Conflict, NotReloadable, ApplyFailed. */
  reason: string;
  message: string;
  lastTransitionTime: string;
}

export interface DaemonConfigStatus {
  /** The spec revision the reconciler last acted on. */
  observedRevision: number;
  /** The reloadable options live now, under their file keys. */
  applied: Record<string, unknown>;
  conditions: DaemonConfigCondition[];
}

const specSchema = z.object({
  revision: z.number().int().nonnegative(),
  cause: z.enum(['start', 'signal', 'watch']),
  text: z.string().nullable(),
}) satisfies z.ZodType<DaemonConfigSpec>;

const statusSchema = z.object({
  observedRevision: z.number().int().nonnegative(),
  applied: z.record(z.string(), z.unknown()),
  conditions: z.array(z.object({ type: z.literal('Applied'), status: z.enum(['True', 'False']), reason: z.string(), message: z.string(), lastTransitionTime: z.string() })),
}) satisfies z.ZodType<DaemonConfigStatus>;

export type DaemonConfigResource = Resource<DaemonConfigSpec, DaemonConfigStatus>;

export const DaemonConfigs = defineKind<DaemonConfigSpec, DaemonConfigStatus>({ name: 'daemon-config', version: 1, schema: { spec: specSchema, status: statusSchema } });

/** The record's Applied condition, if any. */
export function appliedCondition(r: Pick<DaemonConfigResource, 'status'>): DaemonConfigCondition | undefined {
  return r.status.conditions.find((c) => c.type === 'Applied');
}

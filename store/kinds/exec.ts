// The exec kind: name = the exec's id (64 hex). A process to run inside a running container
// (`docker exec`, a healthcheck probe), owned by its container: found by the `container` index,
// deleted with it. The API writes the spec (create; start sets desired `started` with the start's
// options); the exec reconciler starts the process, records its pid and exit in status, and deletes
// the record a while after it ended. Not durable across a daemon restart, as with the reference
// daemon: the records left by an earlier daemon are deleted before the API serves.
import * as z from 'zod';
import { defineKind } from '../kind.ts';
import type { IndexDef, Resource } from '../types.ts';

/** What `POST /containers/{id}/exec` asked for. */
export interface ExecConfig {
  User: string;
  Privileged: boolean;
  Tty: boolean;
  AttachStdin: boolean;
  AttachStdout: boolean;
  AttachStderr: boolean;
  DetachKeys: string;
  Env: string[];
  WorkingDir: string;
  Cmd: string[];
  ConsoleSize?: [number, number] | null;
}

export interface ExecSpec {
  containerId: string;
  config: ExecConfig;
  /** `started` once a start asked for it (an exec starts at most once). */
  desired: 'created' | 'started';
  /** The start's options, with desired `started`. */
  start?: { tty: boolean; consoleSize: [number, number] | null };
  /** A healthcheck probe: deleted as soon as it ended (nobody inspects it), as the reference unregisters it. */
  probe?: boolean;
}

export type ExecPhase = 'created' | 'starting' | 'running' | 'exited';

export interface ExecStatus {
  observedGeneration: number;
  phase: ExecPhase;
  /** The process id once started, else 0. */
  pid: number;
  /** Its exit code once exited (126/127 when it could not be started), else null. */
  exitCode: number | null;
  /** Why the start failed ('' otherwise), and the error's class (lib/errors.ts ErrorCode). */
  error: string;
  errorCode: string;
  /** RFC 3339 time it ended ('' before). */
  finishedAt: string;
}

const execSpecSchema = z.object({
  containerId: z.string(),
  config: z.object({
    User: z.string(),
    Privileged: z.boolean(),
    Tty: z.boolean(),
    AttachStdin: z.boolean(),
    AttachStdout: z.boolean(),
    AttachStderr: z.boolean(),
    DetachKeys: z.string(),
    Env: z.array(z.string()),
    WorkingDir: z.string(),
    Cmd: z.array(z.string()),
    ConsoleSize: z.tuple([z.number(), z.number()]).nullish(),
  }),
  desired: z.enum(['created', 'started']),
  start: z.object({ tty: z.boolean(), consoleSize: z.tuple([z.number(), z.number()]).nullable() }).optional(),
  probe: z.boolean().optional(),
}) satisfies z.ZodType<ExecSpec>;

const execStatusSchema = z.object({
  observedGeneration: z.number().int().nonnegative(),
  phase: z.enum(['created', 'starting', 'running', 'exited']),
  pid: z.number().int().nonnegative(),
  exitCode: z.number().int().nullable(),
  error: z.string(),
  errorCode: z.string(),
  finishedAt: z.string(),
}) satisfies z.ZodType<ExecStatus>;

export type ExecResource = Resource<ExecSpec, ExecStatus>;

export const Execs = defineKind<ExecSpec, ExecStatus>({
  name: 'exec',
  version: 1,
  schema: { spec: execSpecSchema, status: execStatusSchema },
  indexes: { container: (r) => [r.spec.containerId] },
});

export const EXECS_BY_CONTAINER = Execs.indexes.container!;

/** The status of an exec just created. */
export function newExecStatus(): ExecStatus {
  return { observedGeneration: 0, phase: 'created', pid: 0, exitCode: null, error: '', errorCode: '', finishedAt: '' };
}

/** Running for inspect, ExecIDs and resize: from the start on (as the start claims it) until the exit. */
export function execRunning(r: Pick<ExecResource, 'spec' | 'status'>): boolean {
  return r.status.phase === 'starting' || r.status.phase === 'running' || (r.spec.desired === 'started' && r.status.phase === 'created');
}

/** The container's execs (by the index). */
export function execsOfContainer(store: { byIndex<S, T>(def: IndexDef<S, T>, key: string): Resource<S, T>[] }, containerId: string): ExecResource[] {
  return store.byIndex(EXECS_BY_CONTAINER, containerId);
}

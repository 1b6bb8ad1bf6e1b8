// The runtime kind: one record per runtime a container may name (name = the runtime's name). The
// 'runtimes' component (cmd/components/core.ts) writes the specs from the configuration file,
// --add-runtime, the built-in stdrt (and its `runc` alias) and the shims found on PATH; the runtime
// reconciler validates each (drivers/supervisor/runtimes.ts), writes its runtimeArgs wrapper and
// records what the supervisor is given for it.

import * as z from 'zod';
import { defineKind } from '../kind.ts';
import type { Resource } from '../types.ts';
import { byteOrder } from '../../lib/compare.ts';

export type RuntimeSource = 'builtin' | 'file' | 'flag' | 'path';

export interface RuntimeSpec {
  source: RuntimeSource;
  /** A drop-in OCI runtime binary (run through the runc shim). */
  path?: string;
  /** Arguments for `path` (a wrapper script under `<data-root>/runtimes`). */
  runtimeArgs?: string[];
  /** A shim name (io.containerd.<name>.v<N>) or an absolute shim path. */
  runtimeType?: string;
  /** Shim options as daemon.json writes them (runc: BinaryName...; others: TypeUrl, ConfigPath). */
  options?: Record<string, unknown>;
}

export interface RuntimeCondition {
  type: 'Ready';
  status: 'True' | 'False';
  reason: string;
  message: string;
}

export interface RuntimeStatus {
  observedGeneration: number;
  /** The supervisor's runtime (shim) name; '' until reconciled or when invalid. */
  shim: string;
  /** The shim options, as ResolvedRuntime carries them (typeUrl + proto field names). */
  options?: { typeUrl: string; fields: Record<string, unknown> };
  conditions: RuntimeCondition[];
}

const runtimeSpecSchema = z.object({
  source: z.enum(['builtin', 'file', 'flag', 'path']),
  path: z.string().optional(),
  runtimeArgs: z.array(z.string()).optional(),
  runtimeType: z.string().optional(),
  options: z.record(z.string(), z.unknown()).optional(),
}) satisfies z.ZodType<RuntimeSpec>;

const runtimeStatusSchema = z.object({
  observedGeneration: z.number().int().nonnegative(),
  shim: z.string(),
  options: z.object({ typeUrl: z.string(), fields: z.record(z.string(), z.unknown()) }).optional(),
  conditions: z.array(z.object({ type: z.literal('Ready'), status: z.enum(['True', 'False']), reason: z.string(), message: z.string() })),
}) satisfies z.ZodType<RuntimeStatus>;

export type RuntimeResource = Resource<RuntimeSpec, RuntimeStatus>;

export const Runtimes = defineKind<RuntimeSpec, RuntimeStatus>({ name: 'runtime', version: 1, schema: { spec: runtimeSpecSchema, status: runtimeStatusSchema } });

export const INITIAL_RUNTIME_STATUS: RuntimeStatus = { observedGeneration: 0, shim: '', conditions: [] };

/** The record's Ready condition, if any. */
export function readyCondition(r: Pick<RuntimeResource, 'status'>): RuntimeCondition | undefined {
  return r.status.conditions.find((c) => c.type === 'Ready');
}

/** Reconciled at its current generation and valid: its status answers what the supervisor is given. */
export function isRuntimeReady(r: RuntimeResource): boolean {
  return r.status.observedGeneration === r.generation && readyCondition(r)?.status === 'True';
}

const SOURCE_ORDER: Record<RuntimeSource, number> = { builtin: 0, flag: 1, file: 1, path: 2 };

/** The runtimes in the order `docker info` lists them: built-in, configured, then shims on PATH. */
export function listRuntimes(store: { list(k: typeof Runtimes): RuntimeResource[] }): RuntimeResource[] {
  const builtinOrder = (n: string) => (n === 'stdrt' ? 0 : 1);
  return [...store.list(Runtimes)].sort(
    (a, b) => SOURCE_ORDER[a.spec.source] - SOURCE_ORDER[b.spec.source] || (a.spec.source === 'builtin' ? builtinOrder(a.name) - builtinOrder(b.name) : 0) || byteOrder(a.name, b.name),
  );
}

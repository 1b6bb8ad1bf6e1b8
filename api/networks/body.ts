// Request bodies of the network routes: zod-checked, top-level keys matched as Go's decoder does.
import type { z } from 'zod';
import { invalidArgument } from '../../lib/errors.ts';

/** Top-level keys matched case-insensitively, as Go's JSON decoder does (`name` fills `Name`). */
function canonicalKeys(body: unknown, names: readonly string[]): unknown {
  if (body === undefined || body === null) return {};
  if (typeof body !== 'object' || Array.isArray(body)) return body;
  const byLower = new Map(names.map((n) => [n.toLowerCase(), n]));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(body as Record<string, unknown>)) {
    const canon = byLower.get(k.toLowerCase()) ?? k;
    if (!(canon in out) || k === canon) out[canon] = v;
  }
  return out;
}

export function parseBody<T>(schema: z.ZodType<T>, body: unknown): T {
  const keys = Object.keys((schema as unknown as { shape?: Record<string, unknown> }).shape ?? {});
  const r = schema.safeParse(canonicalKeys(body, keys));
  if (!r.success) {
    const msg = r.error.issues.map((i) => (i.path.length ? `${i.path.join('.')}: ${i.message}` : i.message)).join('; ');
    throw invalidArgument(`invalid JSON: ${msg}`);
  }
  return r.data;
}

// Request bodies of the network routes: zod-checked, top-level keys matched as Go's decoder does.
import type { z } from 'zod';
import { invalidArgument } from '../../lib/errors.ts';
import { canonicalKeys } from '../go-json.ts';

export function parseBody<T>(schema: z.ZodType<T>, body: unknown): T {
  const keys = Object.keys((schema as unknown as { shape?: Record<string, unknown> }).shape ?? {});
  const r = schema.safeParse(canonicalKeys(body ?? {}, keys));
  if (!r.success) {
    const msg = r.error.issues.map((i) => (i.path.length ? `${i.path.join('.')}: ${i.message}` : i.message)).join('; ');
    throw invalidArgument(`invalid JSON: ${msg}`);
  }
  return r.data;
}

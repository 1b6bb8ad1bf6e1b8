// Query-string readers with the reference daemon's parsing rules (PROTOCOL §2).
import type { FastifyRequest } from 'fastify';

export type Query = Record<string, string | string[] | undefined>;

export function queryOf(req: FastifyRequest): Query {
  return (req.query ?? {}) as Query;
}

/** Last value of a key (repeated keys arrive as arrays). */
export function qStr(q: Query, key: string): string | undefined {
  const v = q[key];
  return Array.isArray(v) ? v[v.length - 1] : v;
}

/** Every value of a repeatable key (`names`, `changes`, `t`). */
export function qList(q: Query, key: string): string[] {
  const v = q[key];
  if (v === undefined) return [];
  return Array.isArray(v) ? v : [v];
}

/** False for "", 0, no, false, none (any case); true for anything else; `dflt` when absent. */
export function qBool(q: Query, key: string, dflt = false): boolean {
  const v = qStr(q, key);
  if (v === undefined) return dflt;
  return !['', '0', 'no', 'false', 'none'].includes(v.trim().toLowerCase());
}

/** The request's API version as a comparable number: "1.47" → 1.47, "1.9" → 1.09. */
export function apiVersionNumber(req: FastifyRequest): number {
  const v = req.apiVersion;
  if (!v) return 1.47;
  const [maj, min] = v.split('.').map((x) => Number.parseInt(x, 10) || 0);
  return maj + (min ?? 0) / 100;
}

// JSON with object keys sorted at every depth: the same value always gives the same text (config
// hashes, and records compared before they are written again).
type Json = Record<string, unknown>;

const sorted = (v: unknown): unknown =>
  Array.isArray(v) ? v.map(sorted) : v && typeof v === 'object' ? Object.fromEntries(Object.keys(v as Json).sort().map((k) => [k, sorted((v as Json)[k])])) : v;

export function canonicalJson(value: unknown): string {
  return JSON.stringify(sorted(value));
}

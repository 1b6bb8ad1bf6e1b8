// The contract of a stored kind: a zod schema for its spec and for its status, a version stamped
// on each record written, and the steps that bring a record written at an older version up to
// the current one. The store checks every write against it (a wrong shape is a bug in the
// writer, refused before it reaches the disk) and every record it loads (a record that still
// fails after its migrations is set aside, never a crash).
import type { z } from 'zod';

/** A record's two halves, as a migration step sees and returns them. */
export interface StoredRecord {
  spec: unknown;
  status: unknown;
}

export interface KindSchema {
  kind: string;
  /** Stamped on every record written; records written before schemas existed are version 0. */
  version: number;
  spec: z.ZodType;
  status: z.ZodType;
  /** `migrations[n]` turns a version-n record into a version-(n+1) one; a missing step changes nothing. */
  migrations?: Partial<Record<number, (r: StoredRecord) => StoredRecord>>;
}

export type StoreSchemas = ReadonlyMap<string, KindSchema>;

export function schemaTable(list: readonly KindSchema[]): StoreSchemas {
  const m = new Map<string, KindSchema>();
  for (const k of list) {
    if (m.has(k.kind)) throw new Error(`store schema for kind ${k.kind} registered twice`);
    m.set(k.kind, k);
  }
  return m;
}

/** What is wrong with `value` as the `part` of a `kind` record, or undefined when nothing is. */
export function schemaProblem(ks: KindSchema, part: 'spec' | 'status', value: unknown): string | undefined {
  const r = ks[part].safeParse(value);
  if (r.success) return undefined;
  const issues = r.error.issues.slice(0, 3).map((i) => `${[part, ...i.path.map(String)].join('.')}: ${i.message}`);
  if (r.error.issues.length > 3) issues.push(`(${r.error.issues.length - 3} more)`);
  return issues.join('; ');
}

/**
 * Brings a loaded record from `fromVersion` to the kind's version and checks it. Answers the
 * record (`changed` when a step rewrote it) or why it cannot be kept.
 */
export function upgradeRecord(
  ks: KindSchema,
  fromVersion: number,
  rec: StoredRecord,
): { ok: true; record: StoredRecord; changed: boolean } | { ok: false; reason: string } {
  let cur = rec;
  let changed = false;
  for (let v = fromVersion; v < ks.version; v++) {
    const step = ks.migrations?.[v];
    if (!step) continue;
    try {
      cur = step(cur);
    } catch (err) {
      return { ok: false, reason: `migration from schema version ${v} failed: ${err instanceof Error ? err.message : String(err)}` };
    }
    changed = true;
  }
  const problem = schemaProblem(ks, 'spec', cur.spec) ?? schemaProblem(ks, 'status', cur.status);
  if (problem) return { ok: false, reason: problem };
  return { ok: true, record: cur, changed };
}

// The contract of a stored kind: a zod schema for its spec and for its status, a version stamped
// on each record written, and the steps that bring a record written at an older version up to
// the current one. The store checks every write against it (a wrong shape is a bug in the
// writer, refused before it reaches the disk) and every record it loads (a record that still
// fails after its migrations is set aside, never a crash).
import type { AnyKind, KindTable, StoredRecord } from './kind.ts';

export type { StoredRecord } from './kind.ts';

/** The kinds a store checks writes against and migrates loaded records by, by name. */
export type StoreSchemas = KindTable;

/** What is wrong with `value` as the `part` of a `kind` record, or undefined when nothing is. */
export function schemaProblem(ks: AnyKind, part: 'spec' | 'status', value: unknown): string | undefined {
  const r = ks.schema[part].safeParse(value);
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
  ks: AnyKind,
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

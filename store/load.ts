// Reading the stored records at open: each is parsed, brought to its kind's current schema
// version and checked. A record that cannot be read or still fails its schema is moved to the
// quarantine table (kept for a human, out of the daemon's sight) and reported; the daemon starts
// without it rather than not at all. Migrated records are written back at once.
import type { DatabaseSync } from 'node:sqlite';
import type { Logger } from 'pino';
import { upgradeRecord, type StoreSchemas } from './schema.ts';

/** A record set aside at load because it could not be read or failed its schema. */
export interface QuarantinedRecord {
  kind: string;
  name: string;
  reason: string;
  /** RFC 3339 time it was set aside. */
  at: string;
}

export interface LoadedRecord {
  kind: string;
  name: string;
  spec: unknown;
  status: unknown;
  specJson: string;
  statusJson: string;
  generation: number;
  resourceVersion: number;
  createdAt: string;
  /** SQLite rowid: creation order, kept across restarts. */
  order: number;
}

interface Row {
  rowid: number;
  kind: string;
  name: string;
  spec: string;
  status: string;
  generation: number;
  resource_version: number;
  created_at: string;
  schema_version: number;
}

const TABLES = `
CREATE TABLE IF NOT EXISTS quarantine (
  kind TEXT NOT NULL,
  name TEXT NOT NULL,
  spec TEXT NOT NULL,
  status TEXT NOT NULL,
  generation INTEGER NOT NULL,
  resource_version INTEGER NOT NULL,
  created_at TEXT NOT NULL,
  schema_version INTEGER NOT NULL,
  reason TEXT NOT NULL,
  quarantined_at TEXT NOT NULL
);
`;

/** The quarantine table, and the schema_version column stores made before schemas lack (their records are version 0). */
export function prepareRecordTables(db: DatabaseSync): void {
  db.exec(TABLES);
  const cols = db.prepare('PRAGMA table_info(resources)').all() as Array<{ name: string }>;
  if (!cols.some((c) => c.name === 'schema_version')) db.exec('ALTER TABLE resources ADD COLUMN schema_version INTEGER NOT NULL DEFAULT 0');
}

/** Every record to keep, in creation order; the others are quarantined on the way. */
export function loadRecords(db: DatabaseSync, schemas: StoreSchemas, log: Logger | undefined): LoadedRecord[] {
  const rows = db
    .prepare('SELECT rowid, kind, name, spec, status, generation, resource_version, created_at, schema_version FROM resources ORDER BY rowid')
    .all() as unknown as Row[];
  const out: LoadedRecord[] = [];
  const setAside: Array<{ row: Row; reason: string }> = [];
  const upgraded: LoadedRecord[] = [];
  for (const row of rows) {
    const read = readRow(row, schemas);
    if ('reason' in read) {
      setAside.push({ row, reason: read.reason });
      continue;
    }
    const rec: LoadedRecord = {
      kind: row.kind,
      name: row.name,
      spec: read.spec,
      status: read.status,
      specJson: read.changed ? JSON.stringify(read.spec) : row.spec,
      statusJson: read.changed ? JSON.stringify(read.status) : row.status,
      generation: Number(row.generation),
      resourceVersion: Number(row.resource_version),
      createdAt: row.created_at,
      order: Number(row.rowid),
    };
    if (read.changed) upgraded.push(rec);
    out.push(rec);
  }
  if (setAside.length || upgraded.length) rewrite(db, schemas, setAside, upgraded, log);
  return out;
}

export function quarantinedRecords(db: DatabaseSync): QuarantinedRecord[] {
  const rows = db.prepare('SELECT kind, name, reason, quarantined_at FROM quarantine ORDER BY rowid').all() as unknown as Array<{
    kind: string;
    name: string;
    reason: string;
    quarantined_at: string;
  }>;
  return rows.map((r) => ({ kind: r.kind, name: r.name, reason: r.reason, at: r.quarantined_at }));
}

/** A stored row as the current schema of its kind wants it, or why it cannot be kept. */
function readRow(row: Row, schemas: StoreSchemas): { spec: unknown; status: unknown; changed: boolean } | { reason: string } {
  let rec: { spec: unknown; status: unknown };
  try {
    rec = { spec: JSON.parse(row.spec), status: JSON.parse(row.status) };
  } catch (err) {
    return { reason: `not JSON: ${(err as Error).message}` };
  }
  const ks = schemas.get(row.kind);
  if (!ks) return { ...rec, changed: false };
  const up = upgradeRecord(ks, Number(row.schema_version ?? 0), rec);
  if (!up.ok) return { reason: up.reason };
  return { ...up.record, changed: up.changed };
}

/** Moves what cannot be kept to the quarantine table and writes migrated records back, in one transaction. */
function rewrite(db: DatabaseSync, schemas: StoreSchemas, setAside: Array<{ row: Row; reason: string }>, upgraded: LoadedRecord[], log: Logger | undefined): void {
  const at = new Date().toISOString();
  const keep = db.prepare(
    `INSERT INTO quarantine (kind, name, spec, status, generation, resource_version, created_at, schema_version, reason, quarantined_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const remove = db.prepare('DELETE FROM resources WHERE kind = ? AND name = ?');
  const update = db.prepare('UPDATE resources SET spec = ?, status = ?, schema_version = ? WHERE kind = ? AND name = ?');
  db.exec('BEGIN IMMEDIATE');
  try {
    for (const { row, reason } of setAside) {
      keep.run(row.kind, row.name, row.spec, row.status, row.generation, row.resource_version, row.created_at, row.schema_version ?? 0, reason, at);
      remove.run(row.kind, row.name);
    }
    for (const u of upgraded) update.run(u.specJson, u.statusJson, schemas.get(u.kind)?.version ?? 0, u.kind, u.name);
    db.exec('COMMIT');
  } catch (err) {
    db.exec('ROLLBACK');
    throw err;
  }
  for (const { row, reason } of setAside) log?.error({ kind: row.kind, name: row.name, reason }, 'stored record cannot be read: quarantined');
  if (upgraded.length) log?.info({ records: upgraded.length }, 'stored records migrated to the current schema');
}

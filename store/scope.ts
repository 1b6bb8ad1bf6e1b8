// Scopes: records that belong to one storage driver. The reference keeps an image store per
// graph driver and loads only the containers its driver made; a daemon started with another
// driver shows none of them, and started with the first again shows them all. Here every record
// lives in one database, so the store does the same at open: when the scope (the driver) differs
// from the one the records were last opened under, the old scope's records — its kinds (images,
// tags, pulls, containers) and the followers of its containers (endpoints, execs: records whose
// spec names the container) — move to the `parked` table under the old scope's name, and the new
// scope's come back out of it. Nothing is deleted; the reconcilers never see a parked record.
import type { DatabaseSync } from 'node:sqlite';
import type { Logger } from 'pino';

export interface ScopeRules {
  /** The scope records are opened under now (the storage driver's name). */
  name: string;
  /** Kinds whose every record belongs to the scope. */
  kinds: readonly string[];
  /** Kinds whose records belong to the scope of the container their `spec.containerId` names. */
  followers: readonly string[];
  /** The kind `followers` name by `spec.containerId`. */
  owner: string;
}

const TABLES = `
CREATE TABLE IF NOT EXISTS scope (
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS parked (
  scope TEXT NOT NULL,
  kind TEXT NOT NULL,
  name TEXT NOT NULL,
  spec TEXT NOT NULL,
  status TEXT NOT NULL,
  generation INTEGER NOT NULL,
  resource_version INTEGER NOT NULL,
  created_at TEXT NOT NULL,
  schema_version INTEGER NOT NULL
);
`;

const COLUMNS = 'kind, name, spec, status, generation, resource_version, created_at, schema_version';

export interface ScopeChange {
  from: string;
  to: string;
  parked: number;
  restored: number;
}

/**
 * Brings the records to `rules.name`'s scope; called inside the open's transaction, before the
 * records are read. Answers what moved when the scope changed, undefined otherwise (a store opened
 * for the first time with scopes takes its records as the current scope's).
 */
export function enterScope(db: DatabaseSync, rules: ScopeRules): ScopeChange | undefined {
  db.exec(TABLES);
  const row = db.prepare(`SELECT value FROM scope WHERE key = 'current'`).get() as { value: string } | undefined;
  if (row?.value === rules.name) return undefined;
  db.prepare(`INSERT INTO scope (key, value) VALUES ('current', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value`).run(rules.name);
  if (row === undefined) return undefined;

  const kinds = rules.kinds.map(() => '?').join(', ');
  const followers = rules.followers.map(() => '?').join(', ');
  const mine = `kind IN (${kinds}) OR (kind IN (${followers}) AND json_extract(spec, '$.containerId') IN (SELECT name FROM resources WHERE kind = ?))`;
  const args = [...rules.kinds, ...rules.followers, rules.owner];
  const parked = Number(db.prepare(`INSERT INTO parked (scope, ${COLUMNS}) SELECT ?, ${COLUMNS} FROM resources WHERE ${mine} ORDER BY rowid`).run(row.value, ...args).changes);
  // Followers first: the statement finds them by the containers still in the table.
  db.prepare(`DELETE FROM resources WHERE kind IN (${followers}) AND json_extract(spec, '$.containerId') IN (SELECT name FROM resources WHERE kind = ?)`).run(...rules.followers, rules.owner);
  db.prepare(`DELETE FROM resources WHERE kind IN (${kinds})`).run(...rules.kinds);
  const restored = Number(db.prepare(`INSERT OR IGNORE INTO resources (${COLUMNS}) SELECT ${COLUMNS} FROM parked WHERE scope = ? ORDER BY rowid`).run(rules.name).changes);
  db.prepare('DELETE FROM parked WHERE scope = ?').run(rules.name);
  return { from: row.value, to: rules.name, parked, restored };
}

/** Logs a change of scope. */
export function logScopeChange(log: Logger | undefined, change: ScopeChange | undefined): void {
  if (!change) return;
  log?.warn(change, `records of storage driver ${change.from} hidden (parked); those of ${change.to} shown`);
}

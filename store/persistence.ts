// What the store puts on disk: the SQLite database (node:sqlite), its tables, the statements that
// write a record and the revision, and the transaction verbs. Kept apart from the in-memory view
// (records.ts) so the SQL, the pragmas and their trade-offs are read in one place.
//
// Durability: WAL with synchronous=NORMAL. A commit has been written (write(2)) into the WAL
// before the call returns, so it survives the process being killed (kill -9, OOM, crash): the
// bytes are in the kernel's page cache and SQLite recovers the WAL on the next open. What NORMAL
// gives up is the fsync per commit, i.e. the last commits on power loss or kernel panic. That is
// the trade the daemon wants: an fsync per write would make every API call cost milliseconds,
// and after a power loss the reconcilers re-observe the world anyway. `synchronous: 'FULL'`
// is available for callers that need the stronger guarantee.
import { DatabaseSync, type StatementSync } from 'node:sqlite';
import type { Logger } from 'pino';
import { unavailable } from '../lib/errors.ts';
import { loadRecords, prepareRecordTables, quarantinedRecords, type LoadedRecord, type QuarantinedRecord } from './load.ts';
import type { KindTable } from './kind.ts';
import { enterScope, type ScopeChange, type ScopeRules } from './scope.ts';

const SCHEMA = `
CREATE TABLE IF NOT EXISTS resources (
  kind TEXT NOT NULL,
  name TEXT NOT NULL,
  spec TEXT NOT NULL,
  status TEXT NOT NULL,
  generation INTEGER NOT NULL,
  resource_version INTEGER NOT NULL,
  created_at TEXT NOT NULL,
  PRIMARY KEY (kind, name)
);
CREATE TABLE IF NOT EXISTS meta (
  key TEXT PRIMARY KEY,
  value INTEGER NOT NULL
);
`;

export class StoreDb {
  private readonly db: DatabaseSync;
  private readonly stmt: {
    insert: StatementSync;
    update: StatementSync;
    remove: StatementSync;
    setRev: StatementSync;
    begin: StatementSync;
    commit: StatementSync;
  };

  /** What moved between scopes at open (store/scope.ts); undefined: nothing. */
  readonly scopeChange: ScopeChange | undefined;

  constructor(path: string, synchronous: 'NORMAL' | 'FULL' | undefined, scope?: ScopeRules) {
    let scopeChange: ScopeChange | undefined;
    const db = new DatabaseSync(path);
    try {
      // One daemon per store: its memory is the only view of the data. EXCLUSIVE locking makes a
      // second process fail at open instead of writing behind our back (the OS drops the lock
      // when the holder dies, so a killed daemon never blocks its successor).
      db.exec('PRAGMA locking_mode = EXCLUSIVE');
      db.exec('PRAGMA busy_timeout = 1000');
      db.exec('PRAGMA journal_mode = WAL');
      db.exec(`PRAGMA synchronous = ${synchronous === 'FULL' ? 'FULL' : 'NORMAL'}`);
      // Reads are served from memory (everything is loaded at open), so SQLite's page cache only
      // helps writes find their B-tree pages, and the OS caches the file anyway. 256 KiB instead of
      // the default 2 MiB, which a busy daemon would otherwise fill and keep.
      db.exec('PRAGMA cache_size = -256');
      db.exec('BEGIN IMMEDIATE');
      db.exec(SCHEMA);
      prepareRecordTables(db);
      if (scope) scopeChange = enterScope(db, scope);
      db.exec(`INSERT OR IGNORE INTO meta (key, value) VALUES ('revision', 0)`);
      db.exec('COMMIT');
    } catch (err) {
      db.close();
      if (/locked|busy/i.test(String((err as Error)?.message))) {
        throw unavailable(`store ${path} is in use by another process`, err);
      }
      throw err;
    }
    this.db = db;
    this.scopeChange = scopeChange;
    this.stmt = {
      insert: db.prepare(
        'INSERT INTO resources (kind, name, spec, status, generation, resource_version, created_at, schema_version) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
      ),
      update: db.prepare(
        'UPDATE resources SET spec = ?, status = ?, generation = ?, resource_version = ?, schema_version = ? WHERE kind = ? AND name = ?',
      ),
      remove: db.prepare('DELETE FROM resources WHERE kind = ? AND name = ?'),
      setRev: db.prepare(`UPDATE meta SET value = ? WHERE key = 'revision'`),
      // Prepared once: exec() would parse them again for every write.
      begin: db.prepare('BEGIN IMMEDIATE'),
      commit: db.prepare('COMMIT'),
    };
  }

  /** The revision last committed. */
  revision(): number {
    const meta = this.db.prepare(`SELECT value FROM meta WHERE key = 'revision'`).get() as { value: number } | undefined;
    return Number(meta?.value ?? 0);
  }

  /** Every stored record, migrated and checked (load.ts); the ones that fail are quarantined. */
  records(schemas: KindTable, log: Logger | undefined): LoadedRecord[] {
    return loadRecords(this.db, schemas, log);
  }

  quarantined(): QuarantinedRecord[] {
    return quarantinedRecords(this.db);
  }

  /** Inserts a record; answers its rowid (its creation order). */
  insert(kind: string, name: string, specJson: string, statusJson: string, generation: number, revision: number, createdAt: string, schemaVersion: number): number {
    return Number(this.stmt.insert.run(kind, name, specJson, statusJson, generation, revision, createdAt, schemaVersion).lastInsertRowid);
  }

  update(kind: string, name: string, specJson: string, statusJson: string, generation: number, revision: number, schemaVersion: number): void {
    this.stmt.update.run(specJson, statusJson, generation, revision, schemaVersion, kind, name);
  }

  remove(kind: string, name: string): void {
    this.stmt.remove.run(kind, name);
  }

  setRevision(revision: number): void {
    this.stmt.setRev.run(revision);
  }

  begin(): void {
    this.stmt.begin.run();
  }

  commit(): void {
    this.stmt.commit.run();
  }

  rollback(): void {
    this.db.exec('ROLLBACK');
  }

  savepoint(sp: string): void {
    this.db.exec(`SAVEPOINT ${sp}`);
  }

  rollbackTo(sp: string): void {
    this.db.exec(`ROLLBACK TO ${sp}; RELEASE ${sp}`);
  }

  release(sp: string): void {
    this.db.exec(`RELEASE ${sp}`);
  }

  close(): void {
    this.db.close();
  }
}

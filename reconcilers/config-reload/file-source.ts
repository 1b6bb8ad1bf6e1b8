// The configuration file as the daemon-config record's spec: each read (the daemon's start,
// SIGHUP, a change the watcher saw) writes what the file says with the next revision. The watcher
// is chokidar's: an edit in place, a replace by rename and a re-create after a delete all read
// the file again; a delete only says so (a missing file changes nothing).
import { readFileSync } from 'node:fs';
import { watch } from 'chokidar';
import type { Logger } from 'pino';
import { DAEMON_CONFIG, DaemonConfigs, type ReloadCause } from '../../store/kinds/daemon-config.ts';
import type { Store } from '../../store/store.ts';

export class ConfigFileSource {
  private readonly store: Pick<Store, 'get' | 'put' | 'updateSpec'>;
  private readonly file: string;
  private readonly log: Logger;

  constructor(store: Pick<Store, 'get' | 'put' | 'updateSpec'>, file: string, log: Logger) {
    this.store = store;
    this.file = file;
    this.log = log;
  }

  /** The file's text; null when it does not exist; a read error is logged and answers undefined. */
  private text(): string | null | undefined {
    try {
      return readFileSync(this.file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      this.log.error({ err, file: this.file }, 'reload: cannot read the configuration file; nothing changed');
      return undefined;
    }
  }

  /**
   * At start: the record says what the daemon started with, as already applied (the previous run's
   * record, if any, is replaced). `applied` is the status' view of the live values.
   */
  started(applied: Record<string, unknown>): void {
    const text = this.text() ?? null;
    const revision = (this.store.get(DaemonConfigs, DAEMON_CONFIG)?.spec.revision ?? 0) + 1;
    this.store.put(DaemonConfigs, {
      name: DAEMON_CONFIG,
      spec: { revision, cause: 'start', text },
      status: { observedRevision: revision, applied, conditions: [] },
    });
  }

  /** A reload asked for: the file as it is now becomes the spec. */
  read(cause: ReloadCause): void {
    const text = this.text();
    if (text === undefined) return;
    this.store.updateSpec(DaemonConfigs, DAEMON_CONFIG, (s) => ({ revision: s.revision + 1, cause, text }));
  }

  /** Watches the file until the answer is called (it resolves once the watcher is closed). */
  async watch(): Promise<() => Promise<void>> {
    const watcher = watch(this.file, { ignoreInitial: true, atomic: true, awaitWriteFinish: { stabilityThreshold: 100, pollInterval: 25 } });
    watcher.on('add', () => this.read('watch'));
    watcher.on('change', () => this.read('watch'));
    watcher.on('unlink', () => this.log.warn({ file: this.file }, 'the configuration file was removed; the daemon keeps its configuration until it exists again'));
    watcher.on('error', (err) => this.log.warn({ err, file: this.file }, 'watching the configuration file failed'));
    await new Promise<void>((resolve) => watcher.once('ready', () => resolve()));
    return () => watcher.close();
  }
}

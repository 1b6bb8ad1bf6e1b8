// The config-reload reconciler: the daemon-config record's spec is the configuration file as last
// read; this brings the running daemon to it, all or nothing. The whole file is parsed and checked
// first (config/reload.ts: a flag conflict, an unknown or invalid value, a key only a restart
// applies); then every owner of a changed key prepares (and may still refuse: a runtime table that
// does not hold together); then they apply in order, and one that fails has the others undone.
// A refused reload leaves the daemon as it was and says why, in the log and in the record's
// condition; an accepted one is a `daemon reload` event carrying the new values.
import type { Logger } from 'pino';
import type { Reconciler } from '../../controllers/controller.ts';
import type { ConfigSources } from '../../config/load.ts';
import type { ConfigField, DaemonConfig } from '../../config/options.ts';
import { OPTIONS } from '../../config/options.ts';
import { diffReload, type ReloadChange } from '../../config/reload.ts';
import { rfc3339Nano } from '../../lib/ids.ts';
import { appliedCondition, DaemonConfigs, type DaemonConfigCondition, type DaemonConfigSpec } from '../../store/kinds/daemon-config.ts';
import type { Store } from '../../store/store.ts';

/** A component that owns some reloadable options and applies them. */
export interface ReloadOwner {
  /** For logs and conditions: who refused or failed. */
  readonly name: string;
  /** The options it applies; it is asked only when one of them changed. */
  readonly fields: readonly ConfigField[];
  /**
   * Checks `next` (a throw refuses the whole reload before anything changed) and answers how to
   * apply it, and how to go back to `prev` should a later owner fail.
   */
  prepare(next: DaemonConfig, prev: DaemonConfig): { apply(): void; rollback(): void };
}

export interface ConfigReloadDeps {
  /** The live configuration: the object every component reads; an accepted reload writes into it. */
  config: DaemonConfig;
  /** Which options came from flags (a file key for one is a conflict). */
  sources: Partial<ConfigSources>;
  /** In the order they apply; undone in reverse. */
  owners: readonly ReloadOwner[];
  /** An accepted reload: the `daemon reload` event. */
  reloaded(config: DaemonConfig, changed: readonly ReloadChange[]): void;
  /** Every reload's end, accepted or not (the service manager's READY=1 after RELOADING=1). */
  settled?(ok: boolean, message: string): void;
  log: Logger;
}

type Outcome = { ok: true; changed: ReloadChange[] } | { ok: false; reason: string; message: string };

/** The file keys of the options a reload may change. */
const RELOADABLE = OPTIONS.filter((o) => o.reloadable && o.field).map((o) => ({ key: o.fileKey ?? o.name, field: o.field as ConfigField }));

/** The reloadable options' live values under their file keys (the record's status, the event's values). */
export function reloadableValues(c: DaemonConfig): Record<string, unknown> {
  return Object.fromEntries(RELOADABLE.map(({ key, field }) => [key, structuredClone(c[field])]));
}

export class ConfigReloadReconciler implements Reconciler {
  private readonly store: Pick<Store, 'get' | 'updateStatus'>;
  private readonly deps: ConfigReloadDeps;

  constructor(store: Pick<Store, 'get' | 'updateStatus'>, deps: ConfigReloadDeps) {
    this.store = store;
    this.deps = deps;
  }

  async reconcile(key: string): Promise<void> {
    const r = this.store.get(DaemonConfigs, key);
    if (!r || r.status.observedRevision === r.spec.revision) return;
    const outcome = this.reload(r.spec);
    const now = rfc3339Nano();
    const condition = (status: 'True' | 'False', reason: string, message: string): DaemonConfigCondition => {
      const prev = appliedCondition(r);
      return { type: 'Applied', status, reason, message, lastTransitionTime: prev && prev.status === status ? prev.lastTransitionTime : now };
    };
    const c = outcome.ok
      ? condition('True', outcome.changed.length ? 'Applied' : 'Unchanged', outcome.changed.map((x) => x.key).join(', '))
      : condition(outcome.reason === 'FileMissing' ? 'True' : 'False', outcome.reason, outcome.message);
    this.store.updateStatus(DaemonConfigs, key, () => ({ observedRevision: r.spec.revision, applied: reloadableValues(this.deps.config), conditions: [c] }));
    this.deps.settled?.(outcome.ok, outcome.ok ? 'configuration reloaded' : `reload refused: ${outcome.message}`);
  }

  private reload(spec: DaemonConfigSpec): Outcome {
    const { config, log } = this.deps;
    if (spec.text === null) {
      log.warn({ file: config.configFile, cause: spec.cause }, 'reload: the configuration file does not exist; nothing changes until it exists again');
      return { ok: false, reason: 'FileMissing', message: `${config.configFile} does not exist` };
    }
    const diff = diffReload(config, spec.text, this.deps.sources);
    if (!diff.ok) {
      log.error({ error: diff.error, cause: spec.cause }, 'reload refused: the daemon keeps its configuration');
      const reason = diff.notReloadable.length ? 'NotReloadable' : /specified both as a flag/.test(diff.error) ? 'Conflict' : 'Invalid';
      return { ok: false, reason, message: diff.error };
    }
    const next = diff.config;
    const changed = new Set(diff.changed.map((c) => c.field));
    const owners = this.deps.owners.filter((o) => o.fields.some((f) => changed.has(f)));
    const prev = structuredClone(config);
    let plans: { owner: ReloadOwner; plan: { apply(): void; rollback(): void } }[];
    try {
      plans = owners.map((owner) => ({ owner, plan: owner.prepare(next, prev) }));
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      log.error({ err, cause: spec.cause }, 'reload refused: the daemon keeps its configuration');
      return { ok: false, reason: 'Invalid', message };
    }
    const done: typeof plans = [];
    for (const p of plans) {
      try {
        p.plan.apply();
        done.push(p);
      } catch (err) {
        for (const d of done.reverse()) {
          try {
            d.plan.rollback();
          } catch (undoErr) {
            log.error({ err: undoErr, owner: d.owner.name }, 'reload: undoing a change failed');
          }
        }
        const message = `${p.owner.name}: ${err instanceof Error ? err.message : String(err)}`;
        log.error({ err, owner: p.owner.name, cause: spec.cause }, 'reload failed and was undone: the daemon keeps its configuration');
        return { ok: false, reason: 'ApplyFailed', message };
      }
    }
    // The shared object last: from here on every reader sees the new values.
    Object.assign(config, next);
    log.info({ changed: diff.changed.map((c) => c.key), cause: spec.cause }, 'configuration reloaded');
    this.deps.reloaded(config, diff.changed);
    return { ok: true, changed: diff.changed };
  }
}

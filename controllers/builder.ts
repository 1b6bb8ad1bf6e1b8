// The controller builder, in controller-runtime's shape: what wakes a reconciler is declared beside
// it, once, and cmd only binds the declaration to the store, the reconciler and a logger.
//
//   export const endpointController = controller('endpoint')
//     .for(Endpoints, { specChangesOnly: true })        // its own kind: every change of a record
//     .watches(Containers, (c, { store }) => ...)       // another kind's change, mapped to keys
//     .watches(Networks, (n, { store }) => ...)
//     .workers(4);
//
// A loop whose state is outside the store (the cluster's, in etcd) is a controller of fixed keys:
//
//   controller('swarm-tasks').forKeys(['tasks']).source(etcdPrefix(assigned), () => 'tasks')
//
// `owns(kind, ownerOf)` is a watch whose map names the owner of a child record (an endpoint's
// container); `source(src, map)` takes keys from outside the store (supervisor exits, a job's end).
// Map functions read the store as it is when the event is delivered and answer keys (a key, a list
// of keys, or nothing); they are plain functions, tested on their own through `keysFor`.
import type { Logger } from 'pino';
import type { AnyKind, ResourceOf } from '../store/kind.ts';
import type { Store } from '../store/store.ts';
import type { WatchEvent, WatchEventType } from '../store/types.ts';
import { Controller, type ControllerOptions, type ControllerStore, type Reconciler, type Trigger } from './controller.ts';
import type { ControllerFamilies } from './metrics.ts';
import type { Source } from './source.ts';

/** What a map function may read. */
export type MapStore = Pick<Store, 'get' | 'list' | 'byIndex'>;

export interface MapContext {
  /** The change: a record written ('put') or deleted ('delete', with its last version). */
  type: WatchEventType;
  store: MapStore;
}

export type Keys = Iterable<string> | string | undefined | null | false;

export type MapFn<K extends AnyKind> = (r: ResourceOf<K>, ctx: MapContext) => Keys;

interface WatchDecl {
  kind: AnyKind;
  relation: 'watches' | 'owns';
  map: (r: never, ctx: MapContext) => Keys;
}

interface SourceDecl {
  source: Source<unknown>;
  map: (value: never) => Keys;
}

type Tuning = Pick<ControllerOptions, 'workers' | 'stopTimeoutMs' | 'baseDelayMs' | 'maxDelayMs' | 'resumeFromRevision' | 'quietRetries'>;

export function controller(name: string): ControllerBuilder {
  return new ControllerBuilder(name);
}

export class ControllerBuilder<K extends AnyKind = AnyKind> {
  readonly name: string;
  private kind: AnyKind | undefined;
  private keys: readonly string[] = [];
  private specChangesOnly = false;
  private readonly watchDecls: WatchDecl[] = [];
  private readonly sourceDecls: SourceDecl[] = [];
  private tuning: Tuning = {};

  constructor(name: string) {
    this.name = name;
  }

  /** The kind the controller reconciles: each record's name is a key. */
  for<F extends AnyKind>(kind: F, opts: { specChangesOnly?: boolean } = {}): ControllerBuilder<F> {
    this.kind = kind;
    this.specChangesOnly = !!opts.specChangesOnly;
    return this as unknown as ControllerBuilder<F>;
  }

  /**
   * No kind of its own: the controller reconciles these keys (what each names is the reconciler's:
   * this node, the cluster's placement), queued at start and whenever a watch or a source wakes one.
   */
  forKeys(keys: readonly string[]): this {
    this.keys = [...keys];
    return this;
  }

  /** Records of `kind` owned by this controller's: a change of one wakes the owner `ownerOf` names. */
  owns<C extends AnyKind>(kind: C, ownerOf: MapFn<C>): this {
    this.watchDecls.push({ kind, relation: 'owns', map: ownerOf as WatchDecl['map'] });
    return this;
  }

  /** A change of a `kind` record wakes the keys `map` answers. */
  watches<W extends AnyKind>(kind: W, map: MapFn<W>): this {
    this.watchDecls.push({ kind, relation: 'watches', map: map as WatchDecl['map'] });
    return this;
  }

  /** Keys from outside the store; `map` turns what the source emits into keys (default: it is the key). */
  source<T>(source: Source<T>, map?: (value: T) => Keys): this {
    this.sourceDecls.push({ source: source as Source<unknown>, map: (map ?? ((v: T) => v as unknown as string)) as SourceDecl['map'] });
    return this;
  }

  /** Concurrent reconciles (of different keys). */
  workers(n: number): this {
    this.tuning = { ...this.tuning, workers: n };
    return this;
  }

  /** Queue and shutdown tuning (tests shorten the back-off). */
  withOptions(t: Tuning): this {
    this.tuning = { ...this.tuning, ...t };
    return this;
  }

  /** The keys a change of another kind's record wakes: what the declared watches map it to. */
  keysFor(ev: Pick<WatchEvent, 'type' | 'kind' | 'resource'>, store: MapStore): string[] {
    const out = new Set<string>();
    for (const w of this.watchDecls) {
      if (w.kind.name !== ev.kind) continue;
      for (const k of keysOf(w.map(ev.resource as never, { type: ev.type, store }))) out.add(k);
    }
    return [...out];
  }

  /** Binds the declaration: a Controller, started and stopped by the manager. */
  build(deps: { store?: ControllerStore; reconciler: Reconciler; log: Logger; metrics?: ControllerFamilies } & Tuning): Controller {
    if (!this.kind && !this.keys.length) throw new Error(`controller ${this.name}: no kind (call .for(kind)) and no keys (.forKeys(keys))`);
    if ((this.kind || this.watchDecls.length) && !deps.store) throw new Error(`controller ${this.name}: watches the store, built without one`);
    const store = deps.store;
    const triggers: Trigger[] = [
      ...this.watchDecls.map(
        (w): Trigger => ({
          describe: `${w.relation} ${w.kind.name}`,
          start: (enqueue) => {
            const st = store!; // checked above: a watch is built with a store
            return st.watch(w.kind, (ev) => {
              for (const k of keysOf(w.map(ev.resource as never, { type: ev.type, store: st }))) enqueue(k);
            });
          },
        }),
      ),
      ...this.sourceDecls.map(
        (s): Trigger => ({
          describe: 'source',
          start: (enqueue) =>
            s.source.subscribe((v) => {
              for (const k of keysOf(s.map(v as never))) enqueue(k);
            }),
        }),
      ),
    ];
    const { store: _store, reconciler, log, metrics, ...tuning } = deps;
    return new Controller({
      ...this.tuning,
      ...tuning,
      name: this.name,
      kind: this.kind,
      keys: this.keys,
      specChangesOnly: this.specChangesOnly,
      store,
      reconciler,
      log,
      triggers,
      metrics: metrics?.forController(this.name),
    });
  }
}

function keysOf(k: Keys): Iterable<string> {
  if (!k) return [];
  return typeof k === 'string' ? [k] : k;
}

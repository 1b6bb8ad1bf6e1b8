// The one way a route changes something: write the desired state into the store, then wait on the
// store's watch until the reconciler's status says it is done (or the record is gone), within a
// deadline. A wait that runs out answers the route's error, never success: the request is not known
// to have worked. A spec change goes through writeAndWait; a create writes its records (store.create,
// or a transaction of several) and waits with waitUntil, the same waiting half.
//
// Every wait of the API goes through this module. Two more shapes for routes that judge the outcome
// themselves: `settle` answers the record as it is once a condition holds or the deadline passes
// (no deadline: only the AbortSignal ends it, as a follow or a client's /wait), and `waitRemoved`
// waits for the record's deletion and answers what is left (undefined: it is gone).
import type { AnyKind, ResourceOf, SpecMutation } from '../store/kind.ts';
import type { Resource } from '../store/types.ts';
import type { ApiStore } from './containers/store.ts';

export interface WriteAndWaitOptions<R> {
  /** How long the reconciler may take; undefined: no end (a stop whose grace period has none). */
  timeoutMs: number | undefined;
  /** The error when the deadline passes first, with the record as it was then. */
  timedOut: (r: R) => Error;
  signal?: AbortSignal;
}

/**
 * Applies `mutate` to the spec, then waits until `done(record, written)` holds (`written` is the
 * record as this write left it: its generation, its levels). Answers the record, or undefined when it
 * was removed meanwhile.
 */
export async function writeAndWait<K extends AnyKind>(
  store: ApiStore,
  kind: K,
  name: string,
  mutate: SpecMutation<K>,
  done: (r: ResourceOf<K>, written: ResourceOf<K>) => boolean,
  o: WriteAndWaitOptions<ResourceOf<K>>,
): Promise<ResourceOf<K> | undefined> {
  const written = store.updateSpec(kind, name, mutate);
  return waitUntil(store, kind, name, (r) => done(r, written), o);
}

/** The waiting half, for a route that waits again on what the reconciler decided (a stop's deadline). */
export async function waitUntil<K extends AnyKind>(
  store: Waiter,
  kind: K,
  name: string,
  done: (r: ResourceOf<K>) => boolean,
  o: WriteAndWaitOptions<ResourceOf<K>>,
): Promise<ResourceOf<K> | undefined> {
  const r = await settle(store, kind, name, (x) => !x || done(x), o);
  if (r && !done(r)) throw o.timedOut(r);
  return r;
}

type Waiter = Pick<ApiStore, 'waitFor'>;

export interface SettleOptions {
  /** undefined: no deadline, only `signal` (or the store closing) ends the wait. */
  timeoutMs?: number;
  signal?: AbortSignal;
}

/**
 * Waits until `until(record)` holds (the record is undefined once removed) or the deadline passes,
 * and answers the record as it is then; the caller tells the two apart. An abort rejects.
 */
export function settle<K extends AnyKind>(
  store: Waiter,
  kind: K,
  name: string,
  until: (r: ResourceOf<K> | undefined) => boolean,
  o: SettleOptions,
): Promise<ResourceOf<K> | undefined> {
  return store.waitFor(kind, name, until, { timeoutMs: o.timeoutMs, signal: o.signal });
}

/** Waits for the record's deletion: answers undefined once it is gone, or the record still there at the deadline. */
export function waitRemoved<K extends AnyKind>(store: Waiter, kind: K, name: string, o: SettleOptions): Promise<ResourceOf<K> | undefined> {
  return settle(store, kind, name, (r) => !r, o);
}

/** Observed: the reconciler has seen (and acted on) the generation this write made. */
export const observed = <S, T extends { observedGeneration: number }>(r: Resource<S, T>, written: Resource<S, T>): boolean =>
  r.status.observedGeneration >= written.generation;

/** Gone: for removals, whose only end is the record's deletion. */
export const gone = (): boolean => false;

// What every stored resource has, whatever its kind: the envelope (kind, name, generation,
// resourceVersion), secondary indexes and watch events. The kinds themselves, each with its spec and
// status types, schema and lookups, are in store/kinds/.

export interface Resource<Spec = unknown, Status = unknown> {
  kind: string;
  name: string;
  spec: Spec;
  status: Status;
  /** Bumped by every spec change. */
  generation: number;
  /** Store revision of the last write to this resource (spec or status). */
  resourceVersion: number;
  /** RFC 3339 time the resource was first written. */
  createdAt: string;
}

/** A secondary index of a kind: the keys each resource is found by (store.byIndex). Declare it once, as a constant. */
export interface IndexDef<S = unknown, T = unknown> {
  kind: string;
  /** Unique among the kind's indexes. */
  name: string;
  keys: (r: Resource<S, T>) => readonly string[];
}

export type WatchEventType = 'put' | 'delete';
/** A committed change; typed by its kind when watched through one (`store.watch(Containers, ...)`, or narrowed by `isEventOf`). */
export interface WatchEvent<R extends Resource = Resource> {
  type: WatchEventType;
  revision: number;
  kind: string;
  name: string;
  /** The resource after the change (put) or the last version before deletion (delete). */
  resource: R;
}

// A stored kind as one typed object: its name, the zod schema of its spec and status, the version
// stamped on each record and the steps that bring older records up to it. The store takes the kind
// object (`store.get(Containers, id)`), so every read and write is typed by it; nothing states
// `<Spec, Status>` by hand. Each kind lives in store/kinds/<kind>.ts with its types, schema, indexes
// and predicates.
import type { z } from 'zod';
import type { IndexDef, Resource, WatchEvent } from './types.ts';

/** A record's two halves, as a migration step sees and returns them. */
export interface StoredRecord {
  spec: unknown;
  status: unknown;
}

export interface Kind<S = unknown, T = unknown> {
  /** The kind's name in the store ('container', 'endpoint', ...): Resource.kind and WatchEvent.kind. */
  readonly name: string;
  /** Stamped on every record written; records written before schemas existed are version 0. */
  readonly version: number;
  readonly schema: { readonly spec: z.ZodType; readonly status: z.ZodType };
  /** `migrations[n]` turns a version-n record into a version-(n+1) one; a missing step changes nothing. */
  readonly migrations?: Partial<Record<number, (r: StoredRecord) => StoredRecord>>;
  /** Its secondary indexes by name (store.byIndex(Containers.indexes.name, key)). */
  readonly indexes: Readonly<Record<string, IndexDef<S, T>>>;
  /**
   * Never set: carries the kind's types to the store's methods. They are reached through indexed
   * access (SpecOf<K>), which TypeScript does not infer from, so a callback's return (`{ ...s,
   * desired: 'removed' }`) is checked against the kind's spec instead of widening the literal.
   */
  readonly types?: {
    spec: S;
    status: T;
    resource: Resource<S, T>;
    mutateSpec: (spec: S, current: Resource<S, T>) => S;
    mutateStatus: (status: T, current: Resource<S, T>) => T;
    predicate: (r: Resource<S, T> | undefined) => boolean;
  };
}

export type AnyKind = Kind<any, any>;
type Types<K extends AnyKind> = NonNullable<K['types']>;
export type SpecOf<K extends AnyKind> = Types<K>['spec'];
export type StatusOf<K extends AnyKind> = Types<K>['status'];
export type ResourceOf<K extends AnyKind> = Types<K>['resource'];
export type SpecMutation<K extends AnyKind> = Types<K>['mutateSpec'];
export type StatusMutation<K extends AnyKind> = Types<K>['mutateStatus'];
export type ResourcePredicate<K extends AnyKind> = Types<K>['predicate'];

export function defineKind<S, T>(def: {
  name: string;
  version: number;
  schema: { spec: z.ZodType<S>; status: z.ZodType<T> };
  migrations?: Kind<S, T>['migrations'];
  /** Index name -> the keys a resource is found by. */
  indexes?: Record<string, (r: Resource<S, T>) => readonly string[]>;
}): Kind<S, T> {
  const indexes = Object.fromEntries(Object.entries(def.indexes ?? {}).map(([name, keys]) => [name, { kind: def.name, name, keys }]));
  return Object.freeze({ name: def.name, version: def.version, schema: def.schema, migrations: def.migrations, indexes: Object.freeze(indexes) });
}

export type KindTable = ReadonlyMap<string, AnyKind>;

/** The kinds a store knows, by name; each name once. */
export function kindTable(list: readonly AnyKind[]): KindTable {
  const m = new Map<string, AnyKind>();
  for (const k of list) {
    if (m.has(k.name)) throw new Error(`store kind ${k.name} registered twice`);
    m.set(k.name, k);
  }
  return m;
}

/** Narrows an event of a watch over every kind (`store.watch(null, ...)`) to one kind's. */
export function isEventOf<K extends AnyKind>(ev: WatchEvent, kind: K): ev is WatchEvent<ResourceOf<K>> {
  return ev.kind === kind.name;
}

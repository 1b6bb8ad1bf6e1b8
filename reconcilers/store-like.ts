// The slice of the store the reconcilers use (store/store.ts implements it).
import type { IndexDef, Resource } from '../store/types.ts';

export interface ReconcilerStore {
  get<S, T>(kind: string, name: string): Resource<S, T> | undefined;
  list<S, T>(kind: string): Resource<S, T>[];
  byIndex<S, T>(def: IndexDef<S, T>, key: string): Resource<S, T>[];
  updateSpec<S, T>(kind: string, name: string, mutate: (spec: S, current: Resource<S, T>) => S): Resource<S, T>;
  updateStatus<S, T>(kind: string, name: string, mutate: (status: T, current: Resource<S, T>) => T): Resource<S, T>;
  delete(kind: string, name: string): boolean;
}

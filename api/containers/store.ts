// The slice of the store the container routes use (store/store.ts implements it).
import type { IndexDef, Resource } from '../../store/types.ts';

export interface ApiStore {
  get<S, T>(kind: string, name: string): Resource<S, T> | undefined;
  list<S, T>(kind: string): Resource<S, T>[];
  byIndex<S, T>(def: IndexDef<S, T>, key: string): Resource<S, T>[];
  create<S, T>(kind: string, name: string, spec: S, status: T): Resource<S, T>;
  updateSpec<S, T>(kind: string, name: string, mutate: (spec: S, current: Resource<S, T>) => S): Resource<S, T>;
  delete(kind: string, name: string): boolean;
  waitFor<S, T>(
    kind: string,
    name: string,
    predicate: (r: Resource<S, T> | undefined) => boolean,
    opts: { timeoutMs?: number; signal?: AbortSignal },
  ): Promise<Resource<S, T> | undefined>;
}

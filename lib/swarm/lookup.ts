// The one lookup of a swarm object by the reference a client names it with, as dockerd's does: the
// full id, else an exact name (each of `names` in turn, over all the objects), else a unique id
// prefix; none is the caller's `notFound` (the reference's 404), several by prefix its `ambiguous`
// (by default `notFound` too; the reference says "KIND REF is ambiguous (N matches found)", a 400).

export interface LookupOptions<T> {
  /** An object's full id. */
  id: (x: T) => string;
  /** The names an object may be named by, tried in this order after the id (undefined: no name). */
  names?: ReadonlyArray<(x: T) => string | undefined>;
  /** The error when nothing matches. */
  notFound: (ref: string) => Error;
  /** The error when `n` (> 1) ids have the prefix `ref`; `notFound` when not given. */
  ambiguous?: (ref: string, n: number) => Error;
  /** Whether an empty ref is a prefix of every id (the one object found when there is one); by default it matches none. */
  emptyPrefix?: boolean;
}

/** The object `ref` names in `items`: by full id, exact name, or unique id prefix. */
export function lookup<T>(items: readonly T[], ref: string, opts: LookupOptions<T>): T {
  const exact = items.find((x) => opts.id(x) === ref);
  if (exact !== undefined) return exact;
  for (const name of opts.names ?? []) {
    const named = items.find((x) => name(x) === ref);
    if (named !== undefined) return named;
  }
  const byPrefix = ref || opts.emptyPrefix ? items.filter((x) => opts.id(x).startsWith(ref)) : [];
  if (byPrefix.length === 1) return byPrefix[0]!;
  if (byPrefix.length > 1 && opts.ambiguous) throw opts.ambiguous(ref, byPrefix.length);
  throw opts.notFound(ref);
}

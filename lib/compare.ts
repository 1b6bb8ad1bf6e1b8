// Go's string order (sort.Strings, map keys as encoding/json writes them): by code units, not by
// locale. Also cheap: the first localeCompare of a process loads ICU's collation data (~9 ms).

/** Negative, zero or positive as `a` sorts before, with or after `b` in Go's string order. */
export function byteOrder(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

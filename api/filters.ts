// The `filters` query parameter of every API area, read as the reference daemon reads it (moby
// v20.10 api/types/filters: FromJSON, Validate, MatchKVList), and the filters every prune shares
// (`until`, `label`, `label!`). Each area keeps only what is its own: which keys it takes and what
// a value means to it.
//
// Two encodings reach us: {"label":{"a=b":true}} (API 1.22 on) and the older {"label":["a=b"]}.
// Like Go, the first is tried, then the second; a text neither reads is refused with the first
// attempt's words. One object mixing both is refused too, as the reference does.
import { invalidArgument } from '../lib/errors.ts';
import { jsonType } from '../lib/go-json.ts';
import { parseTimestampMs } from '../lib/timestamp.ts';
import { goJsonSyntaxError } from '../lib/go-json-syntax.ts';

/** Each key with its values (a set in Go: no value twice). A key may be present with no values. */
export type Filters = Map<string, string[]>;

/**
 * An unknown key (and the areas' refused values, `key=value`). The reference writes "Invalid
 * filter" (capital I) in 20.10; this daemon has always answered in lower case, and its clients'
 * tests read it so.
 */
export const invalidFilter = (what: string) => invalidArgument(`invalid filter '${what}'`);

const TOP = 'map[string]map[string]bool';

/** Go's decode into map[string]map[string]bool: the filters, or the first type error's text. */
function decodeSets(v: object): Filters | string {
  const out: Filters = new Map();
  for (const [k, set] of Object.entries(v)) {
    if (set === null) out.set(k, []);
    else if (typeof set !== 'object' || Array.isArray(set)) return `json: cannot unmarshal ${jsonType(set, false)} into Go value of type map[string]bool`;
    else {
      const bad = Object.values(set).find((on) => on !== null && typeof on !== 'boolean');
      if (bad !== undefined) return `json: cannot unmarshal ${jsonType(bad, false)} into Go value of type bool`;
      // Go's Args.Get answers every key of the set, a `false` one too.
      out.set(k, Object.keys(set));
    }
  }
  return out;
}

/** The legacy decode into map[string][]string; undefined when it does not fit either. */
function decodeLists(v: object): Filters | undefined {
  const out: Filters = new Map();
  for (const [k, list] of Object.entries(v)) {
    if (list === null) out.set(k, []);
    else if (!Array.isArray(list) || list.some((x) => x !== null && typeof x !== 'string')) return undefined;
    else out.set(k, [...new Set(list.map((x: string | null) => x ?? ''))]);
  }
  return out;
}

/**
 * Reads a `filters` parameter: empty or absent is no filter; a text that is not JSON, or not one
 * of the two encodings, is a 400 in Go's words (after `errorPrefix`, where the reference's route
 * adds one); a key outside `accepted` (when given) is a 400 naming it.
 */
export function parseFilters(raw: string | undefined, accepted?: ReadonlySet<string>, errorPrefix = ''): Filters {
  if (!raw) return new Map();
  const refuse = (msg: string) => invalidArgument(errorPrefix + msg);
  const syntax = goJsonSyntaxError(raw);
  if (syntax) throw refuse(syntax);
  const v: unknown = JSON.parse(raw);
  if (v === null) return new Map();
  if (typeof v !== 'object' || Array.isArray(v)) throw refuse(`json: cannot unmarshal ${jsonType(v, false)} into Go value of type ${TOP}`);
  const sets = decodeSets(v);
  const f = typeof sets === 'string' ? decodeLists(v) : sets;
  if (!f) throw refuse(sets as string);
  if (accepted) for (const k of f.keys()) if (!accepted.has(k)) throw invalidFilter(k);
  return f;
}

/** Whether `key` or `key=value` is among `labels` (own keys only). */
function hasLabel(labels: Record<string, string>, want: string): boolean {
  const i = want.indexOf('=');
  if (i < 0) return Object.hasOwn(labels, want);
  const key = want.slice(0, i);
  return Object.hasOwn(labels, key) && labels[key] === want.slice(i + 1);
}

/**
 * The reference's MatchKVList: every `key` (present) and `key=value` (that value) in `wanted`
 * holds; no wanted labels matches everything.
 */
export function matchKVList(wanted: readonly string[] | undefined, labels: Record<string, string>): boolean {
  return !wanted || wanted.every((w) => hasLabel(labels, w));
}

/** At least one of `wanted` holds: a `label!` list that excludes on any match. */
export function matchAnyKV(wanted: readonly string[] | undefined, labels: Record<string, string>): boolean {
  return !!wanted && wanted.some((w) => hasLabel(labels, w));
}

/**
 * The prune endpoints' `until` (a timestamp or a duration before now), in ms: one value at most.
 * An empty value is refused, as the reference's getUntilFromPruneFilters refuses it.
 */
export function untilFilter(f: Filters, nowMs = Date.now()): number | undefined {
  const values = f.get('until') ?? [];
  if (values.length > 1) throw invalidArgument('more than one until filter specified');
  return values.length ? parseTimestampMs(values[0]!, nowMs) : undefined;
}

export interface PruneFilters {
  until?: number;
  labels: string[];
  notLabels: string[];
}

export const PRUNE_KEYS: ReadonlySet<string> = new Set(['until', 'label', 'label!']);

/** The filters of the container, network and volume prunes. */
export function pruneFilters(f: Filters, nowMs = Date.now()): PruneFilters {
  for (const k of f.keys()) if (!PRUNE_KEYS.has(k)) throw invalidFilter(k);
  return { until: untilFilter(f, nowMs), labels: f.get('label') ?? [], notLabels: f.get('label!') ?? [] };
}

/** Created before `until`, every `label` holds, no `label!` does. */
export function pruneMatches(f: PruneFilters, labels: Record<string, string>, createdMs: number): boolean {
  if (f.until !== undefined && !(createdMs < f.until)) return false;
  return matchKVList(f.labels, labels) && !matchAnyKV(f.notLabels, labels);
}

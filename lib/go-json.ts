// Zod pieces that check a request body as the reference daemon's Go JSON decoder checks it: keys
// matched case-insensitively, unknown keys kept (Go ignores them), null wherever Go takes null,
// and a value of the wrong type refused with the decoder's own message. Each route's schema
// sits beside it and is built from these.
import * as z from 'zod';
import { invalidArgument } from './errors.ts';

/** The JSON type Go names in an unmarshal error; a number a Go integer cannot hold is quoted, as Go quotes it. */
export function jsonType(v: unknown, integer: boolean): string {
  if (typeof v === 'number') return integer ? `number ${v}` : 'number';
  if (typeof v === 'boolean') return 'bool';
  if (Array.isArray(v)) return 'array';
  return typeof v === 'object' ? 'object' : typeof v;
}

/**
 * Go's UnmarshalTypeError text: `struct` is the innermost Go struct holding the field, `path` the
 * JSON path from the body's top (Go's field stack), `goType` the field's Go type. An empty path
 * is the body itself, which Go names as a value, not a field.
 */
export const unmarshal = (struct: string, path: string, goType: string, integer = false) => (iss: { input?: unknown }) =>
  path
    ? `json: cannot unmarshal ${jsonType(iss.input, integer)} into Go struct field ${struct}.${path} of type ${goType}`
    : `json: cannot unmarshal ${jsonType(iss.input, integer)} into Go value of type ${goType}`;

/** Where a field sits: the Go struct that holds it and its JSON path from the top. */
export interface At {
  struct: string;
  path: string;
}
export const at = (struct: string, prefix: string) => (name: string): At => ({ struct, path: prefix ? `${prefix}.${name}` : name });
/** The body itself, a value of the Go struct `struct`. */
export const body = (struct: string): At => ({ struct, path: '' });

export const str = (f: At, goType = 'string') => z.string({ error: unmarshal(f.struct, f.path, goType) }).nullish();
/**
 * A flag: any value is taken and only `true` counts, as this daemon has always read them (Go
 * would refuse a non-boolean).
 */
export const bool = () => z.unknown().optional();
// int64 bounds are JavaScript's safe integers: a larger JSON number has already lost its value.
const GO_INTS = { int: [-(2 ** 31), 2 ** 31 - 1], int64: [Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER], uint16: [0, 65535], uint64: [0, Number.MAX_SAFE_INTEGER] } as const;
export type GoInt = keyof typeof GO_INTS | 'time.Duration';
export function int(f: At, goType: GoInt = 'int64') {
  const [min, max] = GO_INTS[goType === 'time.Duration' ? 'int64' : goType];
  const error = unmarshal(f.struct, f.path, goType, true);
  return z.number({ error }).int({ error }).min(min, { error }).max(max, { error }).nullish();
}

/**
 * A list of strings; a lone string is taken as a one-element list (the reference's StrSlice
 * fields do so, and this daemon has always done it for every list). Go names the element type
 * when an element is wrong and the list type when the whole value is.
 */
export const strList = (f: At, goType = '[]string') =>
  z.preprocess(
    (v) => (typeof v === 'string' ? [v] : v),
    z.array(z.string({ error: unmarshal(f.struct, f.path, 'string') }), { error: unmarshal(f.struct, f.path, goType) }).nullish(),
  ).optional();
/** A Go []string, lists this daemon never took a lone string for. */
export const strArray = (f: At) =>
  z.array(z.string({ error: unmarshal(f.struct, f.path, 'string') }), { error: unmarshal(f.struct, f.path, '[]string') }).nullish();
/** The reference's strslice.StrSlice: on any failure Go reports its fallback decode, into a string. */
export const strSlice = (f: At) => strList(f, 'string');
export const strMap = (f: At, goType = 'map[string]string') =>
  z.record(z.string(), z.string({ error: unmarshal(f.struct, f.path, 'string') }), { error: unmarshal(f.struct, f.path, goType) }).nullish();
/** A map whose values this daemon does not read (Go decodes them into empty structs). */
export const anyMap = (f: At, goType: string) => z.record(z.string(), z.unknown(), { error: unmarshal(f.struct, f.path, goType) }).nullish();
export const list = (f: At, goType: string) => z.array(z.unknown(), { error: unmarshal(f.struct, f.path, goType) }).nullish();

/** Keys matched to the shape's names case-insensitively, as Go's decoder matches them; an exact match wins. */
export function canonicalKeys(v: unknown, names: readonly string[]): unknown {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return v;
  const byLower = new Map(names.map((n) => [n.toLowerCase(), n]));
  const out: Record<string, unknown> = {};
  for (const [k, val] of Object.entries(v)) {
    const canon = byLower.get(k.toLowerCase()) ?? k;
    if (!(canon in out) || k === canon) out[canon] = val;
  }
  return out;
}

/** A Go struct: a JSON object (or null) whose known keys are matched as Go matches them. */
export function struct<S extends z.ZodRawShape>(f: At, goType: string, shape: S) {
  const names = Object.keys(shape);
  return z.preprocess((v) => canonicalKeys(v, names), z.looseObject(shape, { error: unmarshal(f.struct, f.path, goType) }).nullish()).optional();
}

/**
 * A route's body that is one Go struct: its top-level keys matched as Go's decoder matches them
 * (`detachKeys` is DetachKeys), then the route's schema; no body is an empty one.
 */
export function goStructBody<S extends z.ZodObject>(schema: S) {
  const keys = Object.keys(schema.shape);
  return z.preprocess((v) => canonicalKeys(v ?? {}, keys), schema);
}

/**
 * A route's body schema built from these pieces: no body (or JSON null) is an empty request, as Go
 * decodes it. The first problem is the answer, as Go reports only its first.
 */
export function goBody<S extends z.ZodType>(schema: S) {
  return z.preprocess((v) => v ?? {}, schema).transform((v) => (v ?? {}) as NonNullable<z.output<S>>);
}

/** The same check outside a route (unit tests, bodies read by hand). */
export function parseWith<S extends z.ZodType>(schema: S, input: unknown): NonNullable<z.output<S>> {
  const r = goBody(schema).safeParse(input);
  if (!r.success) throw invalidArgument(r.error.issues[0].message);
  return r.data;
}

// What every route reads from a request the same way: the zod pieces of the routes' params and
// querystring schemas (query values read as the reference daemon reads them), the message of a
// failed schema, and the request's API version.
import type { FastifyRequest, FastifySchemaValidationError } from 'fastify';
import * as z from 'zod';
import { invalidArgument } from '../lib/errors.ts';

/** Numeric, part-by-part comparison (1.9 < 1.10); missing parts count as 0. */
export function compareVersions(a: string, b: string): number {
  const pa = a.split('.');
  const pb = b.split('.');
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const x = Number.parseInt(pa[i] ?? '0', 10) || 0;
    const y = Number.parseInt(pb[i] ?? '0', 10) || 0;
    if (x !== y) return x < y ? -1 : 1;
  }
  return 0;
}

/** Go's `r.Form.Get`: the first value of a key given more than once. */
export const first = (v: unknown): unknown => (Array.isArray(v) ? v[0] : v);

const FALSE = new Set(['', '0', 'no', 'false', 'none']);

/**
 * Go's httputils.BoolValueOrDefault: `dflt` only when the key is absent (`?k` and `?k=` are
 * present, and false); false for "", 0, no, false, none (any case, spaces trimmed); true for
 * anything else. It never refuses a value.
 */
export function boolValue(v: unknown, dflt = false): boolean {
  const s = first(v);
  if (s === undefined) return dflt;
  return !FALSE.has(String(s).trim().toLowerCase());
}

/** Go's strconv error text for a value it cannot read as an integer. */
export const strconvError = (fn: 'Atoi' | 'ParseInt', v: string) => `strconv.${fn}: parsing ${JSON.stringify(v)}: invalid syntax`;

/** A query integer read with strconv: absent or empty is undefined; a bad one is refused in Go's words. */
function strconvInt(fn: 'Atoi' | 'ParseInt') {
  return z.preprocess(first, z.string().optional()).transform((v, ctx): number | undefined => {
    if (v === undefined || v === '') return undefined;
    if (/^[+-]?\d+$/.test(v)) return Number(v);
    ctx.addIssue({ code: 'custom', message: strconvError(fn, v), input: v });
    return z.NEVER;
  });
}

/** Query value schemas; every querystring schema is a `z.looseObject` of these (other keys are ignored, as Go ignores them). */
export const q = {
  /** A string (the first of repeated values); undefined when absent. */
  str: () => z.preprocess(first, z.string().optional()),
  /** A flag (see boolValue). */
  bool: (dflt = false) => z.preprocess((v) => boolValue(v, dflt), z.boolean()),
  /** Every value of a repeatable key (`names`, `changes`, `t`). */
  list: () => z.preprocess((v) => (v === undefined ? [] : Array.isArray(v) ? v : [v]), z.array(z.string())),
  /**
   * strconv.Atoi / ParseInt where the reference refuses a bad value, in its words. Always a 400
   * here: the reference returns some of these bare (a 500), but bad input is never a server error.
   */
  atoi: () => strconvInt('Atoi'),
  parseInt: () => strconvInt('ParseInt'),
  /** An integer the reference reads leniently (Int64ValueOrZero and the like): a bad or absent value is `dflt`. */
  intOr: (dflt: number) =>
    z.preprocess((v) => {
      const s = first(v);
      return typeof s === 'string' && /^[+-]?\d+$/.test(s.trim()) ? Number(s.trim()) : dflt;
    }, z.number()),
};

/** The querystring of the list and prune routes. */
export const filtersQuery = z.looseObject({ filters: q.str() });

/** Path parameters of the routes that name one object. */
export const idParams = z.object({ id: z.string() });
export const nameParams = z.object({ name: z.string() });
/** A `*` route's rest of the path. */
export const restParams = z.object({ '*': z.string() });

/** One schema problem, as zod reports it and fastify passes it on. */
interface Problem {
  keyword?: string;
  instancePath?: string;
  message?: string;
}

/**
 * The answer to a refused request part: the first problem, as Go reports only its first.
 * Messages written in the reference's words (Go's decoder, strconv, a custom issue) go as they
 * are; zod's own name the field, as a body the decoder could not take.
 */
function refusal(e: Problem | undefined, dataVar: string): Error {
  const message = e?.message ?? 'invalid value';
  if (e?.keyword === 'custom' || /^(json|strconv)[.:]/.test(message)) return invalidArgument(message);
  const field = e?.instancePath && e.instancePath !== '/' ? `${e.instancePath.slice(1).replaceAll('/', '.')}: ` : '';
  return invalidArgument(`${dataVar === 'body' ? 'invalid JSON' : `invalid ${dataVar}`}: ${field}${message}`);
}

/** fastify's schemaErrorFormatter. */
export function validationError(errors: FastifySchemaValidationError[], dataVar: string): Error {
  return refusal(errors[0] as Problem | undefined, dataVar);
}

/**
 * A querystring schema applied inside a handler (routes that read a different query per
 * sub-action, handlers other areas plug in); a failure is the answer a declared schema gives.
 */
export function parseQuery<S extends z.ZodType>(schema: S, query: unknown): z.output<S> {
  const r = schema.safeParse(query ?? {});
  if (r.success) return r.data;
  const issue = r.error.issues[0];
  throw refusal({ keyword: issue.code, instancePath: `/${issue.path.join('/')}`, message: issue.message }, 'querystring');
}

/** The request's API version as a comparable number: "1.47" → 1.47, "1.9" → 1.09. */
export function apiVersion(req: FastifyRequest): number {
  const v = req.apiVersion;
  if (!v) return 1.47;
  const [maj, min] = v.split('.').map((x) => Number.parseInt(x, 10) || 0);
  return maj + (min ?? 0) / 100;
}

/** A route older API versions do not have: the reference's 400 below `min`. */
export function requireApiVersion(req: FastifyRequest, min: string): void {
  if (compareVersions(req.apiVersion || min, min) >= 0) return;
  const path = (req.originalUrl ?? req.url).split('?')[0];
  throw invalidArgument(`${req.method} ${path} requires minimum API version ${min}`);
}

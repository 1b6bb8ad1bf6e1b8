// Request bodies of the network routes: top-level keys matched as Go's decoder matches them, then
// the route's zod schema; no body is an empty one.
import * as z from 'zod';
import { canonicalKeys } from '../go-json.ts';

export function networkBody<S extends z.ZodObject>(schema: S) {
  const keys = Object.keys(schema.shape);
  return z.preprocess((v) => canonicalKeys(v ?? {}, keys), schema);
}

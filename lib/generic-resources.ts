// Node generic resources (--node-generic-resource, key node-generic-resources), parsed as the
// reference (swarmkit's api/genericresource Parse): each term NAME=VALUE; a name given once with
// an integer is a discrete resource (a count, never negative); a name given with strings, once or
// more, is a named set (one unit each); a name mixing integers and strings, or repeated with
// integers, is refused. Shapes are the Engine API's GenericResources entries.
import { invalidArgument } from './errors.ts';

export interface DiscreteGenericResource {
  DiscreteResourceSpec: { Kind: string; Value: number };
}
export interface NamedGenericResource {
  NamedResourceSpec: { Kind: string; Value: string };
}
export type GenericResource = DiscreteGenericResource | NamedGenericResource;

const PREFIX = 'could not parse GenericResource: ';

/** Go's strconv.ParseInt(s, 10, 64) accepts an optional sign and decimal digits. */
function asInt(s: string): number | undefined {
  return /^[+-]?\d+$/.test(s) ? Number(s) : undefined;
}

/**
 * The terms of every option value (each value may itself be comma separated, as the reference's
 * list flag splits), as GenericResources in the order the names first appear. InvalidArgument on
 * a malformed term, a negative count or a name mixing kinds.
 */
export function parseGenericResources(values: readonly string[]): GenericResource[] {
  const tokens = new Map<string, string[]>();
  for (const value of values) {
    for (const term of value.split(',')) {
      const kv = term.split('=');
      if (kv.length !== 2) throw invalidArgument(`${PREFIX}incorrect term ${term}, missing '=' or malformed expression`);
      const key = kv[0].trim();
      const val = kv[1].trim();
      const list = tokens.get(key);
      if (list) list.push(val);
      else tokens.set(key, [val]);
    }
  }
  const out: GenericResource[] = [];
  for (const [kind, vals] of tokens) {
    if (vals.length === 1) {
      const n = asInt(vals[0]);
      if (n !== undefined) {
        if (n < 0) throw invalidArgument(`${PREFIX}cannot ask for negative resource ${kind}`);
        out.push({ DiscreteResourceSpec: { Kind: kind, Value: n } });
        continue;
      }
    }
    if (vals.every((v) => asInt(v) === undefined)) {
      for (const v of vals) out.push({ NamedResourceSpec: { Kind: kind, Value: v } });
      continue;
    }
    throw invalidArgument(`${PREFIX}malformed expression '${kind}=[${vals.join(' ')}]'`);
  }
  return out;
}

// The route table: paths of static segments, `:name` segments (one path segment each) and a final
// `*` (the rest of the path), matched segment by segment with static before `:name` before `*`, and
// backtracking when a more specific branch leads nowhere. Matching is on the raw path; parameter
// values are percent-decoded, and a value that does not decode is a client error.

export type Params = Record<string, string>;

/** A handler with its route's parameter names, in path order (routes may name one position differently). */
interface Route<H> {
  handler: H;
  names: string[];
}

interface Node<H> {
  statics: Map<string, Node<H>>;
  param: Node<H> | null;
  /** The route of a `*` ending here: matches any rest after the slash, including an empty one. */
  wildcard: Route<H> | null;
  route: Route<H> | null;
}

const node = <H>(): Node<H> => ({ statics: new Map(), param: null, wildcard: null, route: null });

export class BadUrlError extends Error {}

export class Router<H> {
  private readonly roots = new Map<string, Node<H>>();
  /** A parameter longer than this does not match (the route answers 404). */
  private readonly maxParamLength: number;

  constructor(maxParamLength = 4096) {
    this.maxParamLength = maxParamLength;
  }

  add(method: string, path: string, handler: H): void {
    let root = this.roots.get(method);
    if (!root) this.roots.set(method, (root = node()));
    const segs = path.slice(1).split('/');
    const names: string[] = [];
    let n = root;
    for (let i = 0; i < segs.length; i++) {
      const s = segs[i];
      if (s === '*' && i === segs.length - 1) {
        if (n.wildcard) throw new Error(`duplicate route ${method} ${path}`);
        names.push('*');
        n.wildcard = { handler, names };
        return;
      }
      if (s.startsWith(':')) {
        names.push(s.slice(1));
        n = n.param ??= node();
      } else {
        let next = n.statics.get(s);
        if (!next) n.statics.set(s, (next = node()));
        n = next;
      }
    }
    if (n.route) throw new Error(`duplicate route ${method} ${path}`);
    n.route = { handler, names };
  }

  has(method: string): boolean {
    return this.roots.has(method);
  }

  /** The handler and parameters for `path` (no query string), or null. Throws BadUrlError on bad escapes. */
  find(method: string, path: string): { handler: H; params: Params } | null {
    const root = this.roots.get(method);
    if (!root || path[0] !== '/') return null;
    const segs = path.slice(1).split('/');
    const values: string[] = [];
    const route = this.walk(root, segs, 0, values);
    if (!route) return null;
    const params: Params = {};
    for (let k = 0; k < route.names.length; k++) params[route.names[k]] = decode(values[k]);
    return { handler: route.handler, params };
  }

  /** The route matching segs[i..], with the raw values of its parameters pushed on `values`. */
  private walk(n: Node<H>, segs: string[], i: number, values: string[]): Route<H> | null {
    // `/a/*` matches `/a/` and below, not `/a`.
    if (i === segs.length) return n.route;
    const s = segs[i];
    const st = n.statics.get(s);
    if (st) {
      const r = this.walk(st, segs, i + 1, values);
      if (r) return r;
    }
    if (n.param && s !== '' && s.length <= this.maxParamLength) {
      values.push(s);
      const r = this.walk(n.param, segs, i + 1, values);
      if (r) return r;
      values.pop();
    }
    if (n.wildcard) {
      values.push(segs.slice(i).join('/'));
      return n.wildcard;
    }
    return null;
  }
}

function decode(s: string): string {
  if (!s.includes('%')) return s;
  try {
    return decodeURIComponent(s);
  } catch {
    throw new BadUrlError(`'${s}' is not a valid url component`);
  }
}

// The daemon as a list of components, in the manner of containerd's plugin registry: each names
// what it requires, starts once those are up, and closes before them. Adding a capability is
// adding one entry.

/**
 * What each component id stands for: a registry maps ids to their values' types, so `get` is
 * typed by the id alone (the daemon's is cmd/components/registry.ts). Untyped by default.
 */
export type Registry = Record<string, unknown>;

export interface ComponentContext<R extends Registry = Registry> {
  /** The value of a component this one declared in `requires` (asking for any other is a bug). */
  get<K extends keyof R & string>(id: K): R[K];
}

export interface Component<T = unknown, R extends Registry = Registry> {
  readonly id: string;
  readonly requires: readonly (keyof R & string)[];
  init(ctx: ComponentContext<R>): Promise<T> | T;
  close?(value: T): Promise<void> | void;
}

export interface StartedComponents<R extends Registry = Registry> {
  /** The value of any started component (for the code that started them, e.g. to wire signals). */
  get<K extends keyof R & string>(id: K): R[K];
  /** Closes every started component, last started first; a failing close is logged, not thrown. */
  close(): Promise<void>;
}

interface WarnLog {
  warn(obj: object, msg: string): void;
}

/** Identity, so that `T` is inferred from `init` and `close` receives that type. */
export function component<T, R extends Registry = Registry>(c: Component<T, R>): Component<T, R> {
  return c;
}

/**
 * The components in an order where each follows what it requires. The list's own order breaks
 * ties, so a list already written in dependency order starts exactly as written — side effects
 * with no declared dependency between them keep the order the list gives them.
 */
export function orderComponents<C extends Pick<Component, 'id' | 'requires'>>(list: readonly C[]): C[] {
  const byId = new Map<string, C>();
  for (const c of list) {
    if (byId.has(c.id)) throw new Error(`component ${c.id} is listed twice`);
    byId.set(c.id, c);
  }
  const ordered: C[] = [];
  const state = new Map<string, 'visiting' | 'done'>();
  const visit = (c: C, path: string[]): void => {
    const s = state.get(c.id);
    if (s === 'done') return;
    if (s === 'visiting') throw new Error(`components require each other in a cycle: ${[...path.slice(path.indexOf(c.id)), c.id].join(' -> ')}`);
    state.set(c.id, 'visiting');
    for (const r of c.requires) {
      const dep = byId.get(r);
      if (!dep) throw new Error(`component ${c.id} requires ${r}, which is not registered`);
      visit(dep, [...path, c.id]);
    }
    state.set(c.id, 'done');
    ordered.push(c);
  };
  for (const c of list) visit(c, []);
  return ordered;
}

/**
 * Starts the components in dependency order. If one fails to start, those already started are
 * closed (last first) and its error is rethrown, so a failed start leaves nothing behind.
 */
export async function startComponents<R extends Registry = Registry>(list: readonly Component<unknown, R>[], log: WarnLog): Promise<StartedComponents<R>> {
  const values = new Map<string, unknown>();
  const started: Array<{ c: Component<unknown, R>; value: unknown }> = [];
  const close = async (): Promise<void> => {
    while (started.length > 0) {
      const { c, value } = started.pop()!;
      try {
        await c.close?.(value);
      } catch (err) {
        log.warn({ err, component: c.id }, 'closing component failed');
      }
    }
  };
  for (const c of orderComponents(list)) {
    const ctx: ComponentContext<R> = {
      get: <K extends keyof R & string>(id: K): R[K] => {
        // Only declared requirements: an undeclared one may not be started yet, or may close first.
        if (!c.requires.includes(id)) throw new Error(`component ${c.id} asked for ${id}, which it does not require`);
        return values.get(id) as R[K];
      },
    };
    let value: unknown;
    try {
      value = await c.init(ctx);
    } catch (err) {
      await close();
      throw err;
    }
    values.set(c.id, value);
    started.push({ c, value });
  }
  return {
    get: <K extends keyof R & string>(id: K): R[K] => {
      if (!values.has(id)) throw new Error(`component ${id} is not started`);
      return values.get(id) as R[K];
    },
    close,
  };
}

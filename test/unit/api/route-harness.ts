// Route tests: one area's plugin in the real fastify app, over the real store (SQLite in a temp
// directory, with the daemon's schemas), driven with app.inject(). A test that needs a
// reconciler's observable effect passes `react`, called after every committed change.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { createApp, type Plugin } from '../../../api/app.ts';
import { STORE_KINDS } from '../../../store/kinds/index.ts';
import { openStore, type Store } from '../../../store/store.ts';
import { Images } from '../../../store/kinds/image.ts';
import type { WatchEvent } from '../../../store/types.ts';

export interface RouteHarness {
  app: ReturnType<typeof createApp>;
  store: Store;
  close(): Promise<void>;
}

export async function routeHarness(
  plugins: (store: Store) => Plugin[],
  opts: { react?: (store: Store, ev: WatchEvent) => void; experimental?: boolean; engineVersion?: string } = {},
): Promise<RouteHarness> {
  const dir = mkdtempSync(join(tmpdir(), 'engine-routes-'));
  const store = openStore(join(dir, 'engine.db'), { kinds: STORE_KINDS });
  const react = opts.react;
  let closed = false;
  // A reaction queued before close() must not write to the closed store.
  const unwatch = react ? store.watch(null, (ev) => queueMicrotask(() => closed || react(store, ev))) : () => {};
  let app: ReturnType<typeof createApp> | undefined;
  try {
    app = createApp({ log: pino({ level: 'silent' }), version: { api: '1.47', min: '1.24' }, experimental: opts.experimental, engineVersion: opts.engineVersion, plugins: plugins(store) });
    await app.ready();
  } catch (err) {
    // Nothing of a harness that did not start is left behind.
    closed = true;
    unwatch();
    await app?.close();
    store.close();
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  return {
    app,
    store,
    async close() {
      if (closed) return;
      closed = true;
      unwatch();
      await app.close();
      store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The image reconciler's observable behaviour: pending → ready (or failed); desired removed → record deleted. */
export function imageReconciler(opts: { fail?: (id: string) => string | undefined } = {}) {
  return (store: Store, ev: WatchEvent): void => {
    if (ev.kind !== Images.name) return;
    const r = store.get(Images, ev.name);
    if (!r) return;
    if (r.spec.desired === 'removed') {
      store.delete(Images, r.name);
      return;
    }
    if (r.status.observedGeneration < r.generation) {
      const error = opts.fail?.(r.name);
      store.updateStatus(Images, r.name, (s) => ({
        ...s, phase: error ? 'failed' : 'ready', error: error ?? '', observedGeneration: r.generation,
      }));
    }
  };
}

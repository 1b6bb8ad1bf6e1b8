// Route tests: one area's plugin in the real fastify app, over the real store (SQLite in a temp
// directory, with the daemon's schemas), driven with app.inject(). A test that needs a
// reconciler's observable effect passes `react`, called after every committed change.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { createApp, type Plugin } from '../../../api/app.ts';
import { STORE_SCHEMAS } from '../../../store/schemas/index.ts';
import { openStore, type Store } from '../../../store/store.ts';
import type { WatchEvent } from '../../../store/types.ts';

export interface RouteHarness {
  app: ReturnType<typeof createApp>;
  store: Store;
  close(): Promise<void>;
}

export async function routeHarness(
  plugins: (store: Store) => Plugin[],
  opts: { react?: (store: Store, ev: WatchEvent) => void; experimental?: boolean } = {},
): Promise<RouteHarness> {
  const dir = mkdtempSync(join(tmpdir(), 'engine-routes-'));
  const store = openStore(join(dir, 'engine.db'), { schemas: STORE_SCHEMAS });
  const react = opts.react;
  const unwatch = react ? store.watch(null, (ev) => queueMicrotask(() => react(store, ev))) : () => {};
  const app = createApp({ log: pino({ level: 'silent' }), version: { api: '1.47', min: '1.24' }, experimental: opts.experimental, plugins: plugins(store) });
  await app.ready();
  return {
    app,
    store,
    async close() {
      unwatch();
      await app.close();
      store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

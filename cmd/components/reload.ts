// SIGHUP: re-read the configuration file and apply what may change without a restart, all or
// nothing (a refused reload leaves the daemon as it was).
import { readFileSync } from 'node:fs';
import { component } from '../components.ts';
import type { DaemonEnv } from './env.ts';
import type { SwappableRuntimes } from './core.ts';
import { diffReload } from '../../config/reload.ts';
import type { DistributionDriver } from '../../drivers/distribution/distribution.ts';
import { levelOf, registryOptions } from '../daemon-helpers.ts';

export function reloadComponent({ cfg, log, sources }: DaemonEnv) {
  return component<() => void>({
    id: 'reload',
    // After the API: a reload is taken only once the daemon runs.
    requires: ['runtimes', 'distribution', 'api'],
    init: (ctx) => {
      const runtimes = ctx.get<SwappableRuntimes>('runtimes');
      const distribution = ctx.get<DistributionDriver>('distribution');
      return () => {
        let text = '{}';
        try {
          text = readFileSync(cfg.configFile, 'utf8');
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== 'ENOENT') {
            log.error({ err, file: cfg.configFile }, 'reload: cannot read the configuration file; nothing changed');
            return;
          }
        }
        const r = diffReload(cfg, text, sources);
        if (!r.ok) {
          log.error({ error: r.error }, 'reload refused: the daemon keeps its configuration');
          return;
        }
        let next = null;
        try {
          if (r.changed.some((c) => c.field === 'runtimes' || c.field === 'defaultRuntime')) next = runtimes.build(r.config);
        } catch (err) {
          log.error({ err }, 'reload refused: invalid runtimes; the daemon keeps its configuration');
          return;
        }
        if (next) runtimes.swap(next);
        Object.assign(cfg, r.config);
        log.level = levelOf(cfg);
        distribution.reconfigure(registryOptions(cfg));
        log.info({ changed: r.changed.map((c) => c.key) }, 'configuration reloaded');
      };
    },
  });
}

// What every component of the daemon is built from: its configuration and logger.
import type { Logger } from 'pino';
import type { ConfigSources, DaemonConfig } from '../../config/load.ts';

export interface DaemonEnv {
  /** Mutable: a reload assigns the new values in place, and components read them when they need them. */
  readonly cfg: DaemonConfig;
  readonly log: Logger;
  readonly sources: Partial<ConfigSources>;
}

export interface Paths {
  readonly dataRoot: string;
  readonly execRoot: string;
  readonly tmpDir: string;
}

// Container log drivers: json-file ('local' is written as json-file for now) and none.
import type { Logger } from 'pino';
import { invalidArgument } from '../../lib/errors.ts';
import { openJsonFile } from './json-file.ts';
import type { LogSink } from './json-file.ts';
import { FILE_DRIVERS } from './options.ts';

export { validateLogConfig, fileLogOptions, fromHumanSize } from './options.ts';
export { createLogReader } from './reader.ts';
export type { LogReaderOptions, LogReadOptions, LogEntry } from './reader.ts';
export { openJsonFile, MAX_LINE, nowRfc3339Nano } from './json-file.ts';
export type { LogSink } from './json-file.ts';

export interface Logging {
  /** null for the `none` driver. */
  open(containerId: string, path: string, config: { Type: string; Config: Record<string, string> }): LogSink | null;
}

export function createLogging(opts: { log: Logger }): Logging {
  return {
    open(containerId, path, config) {
      const type = config.Type || 'json-file';
      if (type === 'none') return null;
      if (!FILE_DRIVERS.has(type)) throw invalidArgument(`logger: no log driver named '${type}' is registered`);
      return openJsonFile(path, config.Config ?? {}, opts.log.child({ container: containerId }));
    },
  };
}

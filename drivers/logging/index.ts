// Container log drivers: json-file, local (the reference's framed protobuf files), none, and the
// remote drivers syslog, gelf, fluentd and journald. A remote driver is wrapped in a RemoteSink:
// its messages go through a queue, and, unless cache-disabled, the output is also written to a
// local cache so `docker logs` works (dual logging): a `local`-format log at
// containers/<id>/container-cached.log, as the reference's (./cache.ts). mode=non-blocking puts the dropping ring of ./ring.ts
// in front of any driver (the cache stays outside it, as the reference's).
import type { Logger } from 'pino';
import { invalidArgument } from '../../lib/errors.ts';
import { newFluentd } from './fluentd.ts';
import { newGelf } from './gelf.ts';
import type { ContainerLogInfo } from './info.ts';
import { newJournald } from './journald.ts';
import { cacheOptions, cachePathBeside } from './cache.ts';
import { fileWriterSpec, newFileWriter } from './file-writer.ts';
import { PromotingSink, type LogThread } from './log-thread.ts';
import type { LogSink } from './json-file.ts';
import { ramInBytes } from '../../lib/units.ts';
import { cacheEnabled, FILE_DRIVERS, REMOTE_DRIVERS } from './options.ts';
import { RemoteSink, withCache, type RemoteDriver } from './remote.ts';
import { withLogMode } from './ring.ts';
import { newSyslog } from './syslog.ts';

export { validateLogConfig, canReadLogs, LOG_DRIVERS } from './options.ts';
export { fileLogOptions } from './file-options.ts';
export { createLogReader } from './reader.ts';
export type { LogReaderOptions, LogReadOptions, LogEntry } from './reader.ts';
export { MAX_LINE, nowRfc3339Nano } from './json-file.ts';
export type { LogSink } from './json-file.ts';
export { localLogPath } from './local.ts';
export { LogThread } from './log-thread.ts';
export { cachedLogPath, readPathOf, CACHE_FILE } from './cache.ts';
export type { ContainerLogInfo } from './info.ts';

export interface Logging {
  /**
   * null for the `none` driver. A remote driver connects first (a Promise); its failure is the
   * container start's failure ("failed to initialize logging driver: ...").
   */
  open(containerId: string, path: string, config: LogConfig): LogSink | null;
  open(containerId: string, path: string, config: LogConfig, info: ContainerLogInfo): LogSink | null | Promise<LogSink | null>;
}

type LogConfig = { Type: string; Config: Record<string, string> };

const REMOTE: Record<string, (info: ContainerLogInfo, cfg: Record<string, string>) => Promise<RemoteDriver>> = {
  syslog: (i, c) => newSyslog(i, c),
  gelf: (i, c) => newGelf(i, c),
  fluentd: (i, c) => newFluentd(i, c),
  journald: (i, c) => newJournald(i, c),
};

export async function openRemote(type: string, containerId: string, path: string, cfg: Record<string, string>, info: ContainerLogInfo, log: Logger): Promise<LogSink> {
  let driver: RemoteDriver;
  try {
    driver = await REMOTE[type]!(info, cfg);
  } catch (err) {
    throw new Error(`failed to initialize logging driver: ${(err as Error).message}`);
  }
  let cache: LogSink | null = null;
  if (path && cacheEnabled(cfg)) {
    try {
      cache = newFileWriter(fileWriterSpec('local', cachePathBeside(path), cacheOptions(cfg)), log.child({ container: containerId, cache: true }));
    } catch (err) {
      await driver.close().catch(() => {});
      throw new Error(`failed to initialize logging driver: error setting up local container log cache: error initializing local log cache driver: ${(err as Error).message}`);
    }
  }
  const l = log.child({ container: containerId, driver: type });
  return withCache(withLogMode(new RemoteSink(driver, { log: l }), cfg, ramInBytes, l), cache);
}

/** `thread`: busy file logs move to it (./log-thread.ts); without it they stay in this thread. */
export function createLogging(opts: { log: Logger; thread?: LogThread }): Logging {
  function open(containerId: string, path: string, config: LogConfig): LogSink | null;
  function open(containerId: string, path: string, config: LogConfig, info: ContainerLogInfo): LogSink | null | Promise<LogSink | null>;
  function open(containerId: string, path: string, config: LogConfig, info?: ContainerLogInfo): LogSink | null | Promise<LogSink | null> {
    const type = config.Type || 'json-file';
    if (type === 'none') return null;
    if (REMOTE_DRIVERS.has(type)) {
      if (!info) throw invalidArgument(`logger: the ${type} log driver needs the container's info`);
      return openRemote(type, containerId, path, config.Config ?? {}, info, opts.log);
    }
    if (!FILE_DRIVERS.has(type)) throw invalidArgument(`logger: no log driver named '${type}' is registered`);
    const cfg = config.Config ?? {};
    const log = opts.log.child({ container: containerId });
    const spec = fileWriterSpec(type === 'local' ? 'local' : 'json-file', path, cfg, info);
    const sink = opts.thread ? new PromotingSink(spec, opts.thread, log) : newFileWriter(spec, log);
    return withLogMode(sink, cfg, ramInBytes, log);
  }
  return { open };
}

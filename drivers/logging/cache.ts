// The dual-logging cache of the remote drivers (syslog, gelf, fluentd, journald), as the
// reference's (container/container.go StartLogger, daemon/logger/loggerutils/cache): unless
// cache-disabled, the output is also written by the `local` driver (./local.ts, framed protobuf
// records) to <container dir>/container-cached.log, and `docker logs` reads that file. Its
// options are cache-max-size (default 20m), cache-max-file (5) and cache-compress (true), the
// documented dual-logging options, given to the local writer as max-size/max-file/compress.
// Inspect's LogPath stays empty for these drivers (the reference sets it for json-file only).
import { dirname, join } from 'node:path';
import { cacheEnabled, REMOTE_DRIVERS } from './options.ts';

export { REMOTE_DRIVERS };

export const CACHE_FILE = 'container-cached.log';

/** The cache file of a container whose directory is `containerDir`. */
export function cachedLogPath(containerDir: string): string {
  return join(containerDir, CACHE_FILE);
}

/**
 * The cache file beside a container's recorded log path (the path is in the container's
 * directory: <id>-json.log for containers recorded before the cache moved, else the cache itself).
 */
export function cachePathBeside(logPath: string): string {
  return join(dirname(logPath), CACHE_FILE);
}

/** The local driver's options for the cache: cache-max-size (20m), cache-max-file (5), cache-compress (true). */
export function cacheOptions(cfg: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = { 'max-size': cfg['cache-max-size'] ?? '20m', 'max-file': cfg['cache-max-file'] ?? '5' };
  if (cfg['cache-compress'] !== undefined) out.compress = cfg['cache-compress'];
  return out;
}

/**
 * The file `docker logs` reads for a container with this log config and recorded log path:
 * a remote driver's cache (undefined when cache-disabled), else the path itself ('' = none).
 */
export function readPathOf(lc: { Type: string; Config?: Record<string, string> | null }, logPath: string): string | undefined {
  if (!logPath) return undefined;
  if (REMOTE_DRIVERS.has(lc.Type)) return cacheEnabled(lc.Config ?? {}) ? cachePathBeside(logPath) : undefined;
  return logPath;
}

// The rotation options of the file log drivers (json-file; local reads its own, ./local.ts), apart
// from the validation of every driver's options (./options.ts): the log thread's writers need
// these and nothing of the network drivers (whose modules load a native addon).
import { invalidArgument } from '../../lib/errors.ts';
import { fromHumanSize, goBool, goBoolSyntax } from '../../lib/units.ts';

export interface FileLogOptions {
  /** Bytes; -1 = never rotate. */
  maxSize: number;
  /** Files kept including the live one (1 = truncate in place when full). */
  maxFiles: number;
  /** Gzip rotated files (path.N.gz). */
  compress: boolean;
}

/** Rotation options of the file drivers; throws InvalidArgument for bad values. */
export function fileLogOptions(cfg: Record<string, string>): FileLogOptions {
  let maxSize = -1;
  if (cfg['max-size'] !== undefined) {
    maxSize = fromHumanSize(cfg['max-size']);
    if (maxSize <= 0) throw invalidArgument('max-size must be a positive number');
  }
  let maxFiles = 1;
  if (cfg['max-file'] !== undefined) {
    const s = cfg['max-file'];
    if (!/^[+-]?\d+$/.test(s)) throw invalidArgument(`strconv.Atoi: parsing "${s}": invalid syntax`);
    maxFiles = Number.parseInt(s, 10);
    if (maxFiles < 1) throw invalidArgument('max-file cannot be less than 1');
  }
  let compress = false;
  if (cfg.compress !== undefined) {
    const b = goBool(cfg.compress);
    if (b === undefined) throw invalidArgument(goBoolSyntax(cfg.compress));
    compress = b;
    if (compress && (maxFiles === 1 || maxSize === -1)) {
      throw invalidArgument('compress cannot be true when max-file is less than 2 or max-size is not set');
    }
  }
  return { maxSize, maxFiles, compress };
}

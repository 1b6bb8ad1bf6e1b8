// A container's --storage-opt (HostConfig.StorageOpt) and the daemon's driver options as the
// reference's graph drivers read them (docs/reference-storage.md has its answers): keys
// lower-cased, `size` in bytes as go-units RAMInBytes reads it ("invalid size: 'abc'"), any other
// key refused in the driver's own words. Each refusal is the daemon's error (a 500 at create, as
// the reference answers), never an option accepted and ignored.
import { EngineError, internal } from '../../lib/errors.ts';
import { parseRamSize } from '../../lib/volume-options.ts';

/** The `size` of `opts` (undefined without one); a key other than size refused with `unknown(key)`. */
export function storageOptSize(opts: Readonly<Record<string, string>>, unknown: (key: string) => string): number | undefined {
  let size: number | undefined;
  for (const [k, v] of Object.entries(opts)) {
    const key = k.toLowerCase();
    if (key !== 'size') throw internal(unknown(key));
    try {
      size = parseRamSize(v);
    } catch (err) {
      throw internal(err instanceof EngineError ? err.message : String(err));
    }
  }
  return size;
}

/** What a file system without quotas answers a size (vfs, overlay2 off xfs's project quotas). */
export const NO_QUOTA = 'Filesystem does not support, or has not enabled quotas';

/** The daemon's --storage-opt values a driver acts on. */
export interface DriverOptions {
  /** overlay2.size: every container's size (a project quota on xfs). */
  size?: number;
  /** btrfs.min_space: the smallest size a container may ask for. */
  minSpace?: number;
}

/**
 * The daemon's --storage-opt list for `driver`, as the reference's drivers parse it: overlay2 takes
 * overlay2.override_kernel_check (a boolean, without effect: there is no kernel check to skip) and
 * overlay2.size (checked against the backing file system by the driver at start); btrfs takes
 * btrfs.min_space; vfs takes size (a quota: refused, no quota here). Anything else is the driver's
 * "unknown option". Throws the refusal's words (the start fails).
 */
export function driverOptions(driver: string, opts: readonly string[]): DriverOptions {
  const out: DriverOptions = {};
  const size = (v: string) => {
    try {
      return parseRamSize(v);
    } catch (err) {
      throw internal(err instanceof EngineError ? err.message : String(err));
    }
  };
  for (const opt of opts) {
    const eq = opt.indexOf('=');
    if (eq <= 0) throw internal(`${driver === 'btrfs' ? 'Unable' : 'unable'} to parse key/value option: ${opt}`);
    const key = opt.slice(0, eq).trim().toLowerCase();
    const val = opt.slice(eq + 1).trim();
    if (driver === 'overlay2') {
      if (key === 'overlay2.override_kernel_check') {
        if (!/^(1|t|true|0|f|false)$/i.test(val)) throw internal(`strconv.ParseBool: parsing "${val}": invalid syntax`);
      } else if (key === 'overlay2.size') out.size = size(val);
      else throw internal(`overlay2: unknown option ${key}`);
    } else if (driver === 'fuse-overlayfs') {
      // The reference's driver reads none (and ignores them all): refused here, never ignored.
      throw internal(`fuse-overlayfs: unknown option ${key}`);
    } else if (driver === 'btrfs') {
      if (key === 'btrfs.min_space') out.minSpace = size(val);
      else throw internal(`Unknown option ${key}`);
    } else if (key === 'size') {
      size(val);
      throw internal(NO_QUOTA);
    } else throw internal(`unknown option ${key} for ${driver}`);
  }
  return out;
}

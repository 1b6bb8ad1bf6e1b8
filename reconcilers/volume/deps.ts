// What the volume reconciler and the container side of volumes need: the store (with
// transaction) and the local volume driver, behind narrow interfaces that cmd fills.
import type { Resource } from '../../store/types.ts';
import type { ReconcilerStore } from '../store-like.ts';

export interface VolumeStore extends ReconcilerStore {
  transaction<R>(fn: () => R): R;
}

export interface VolumeDriverPort {
  /** Make `<root>/<name>/_data` (idempotent); answers it. */
  ensure(name: string): Promise<{ mountpoint: string; created: boolean }>;
  mountpoint(name: string): string;
  /** Mount what the options name (type/o/device) on the data directory unless mounted; answers it. */
  mount(name: string, opts: Record<string, string>): Promise<string>;
  /** Unmount the data directory if something is mounted on it. */
  unmount(name: string): Promise<void>;
  /** Unmount (if mounted) and delete the volume's directory. */
  remove(name: string): Promise<void>;
  isEmpty(name: string): Promise<boolean>;
  /** Copy `src`'s content into the volume when the volume is empty; answers whether it copied. */
  copyUp(src: string, name: string): Promise<boolean>;
  size(name: string): Promise<number>;
}

export type { Resource };

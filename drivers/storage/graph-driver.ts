// What the layer store needs from a graph driver: directories keyed by cache id, each optionally
// on top of a parent's. The store owns metadata, ids and reference counting; drivers own bytes.
import type { ChangeEntry, DriverName } from './types.ts';
import type { OwnerMap } from './diff-walk.ts';
import type { WhiteoutMode } from './unpack.ts';

export interface GraphDriver {
  readonly name: DriverName;
  /** How whiteouts are unpacked into this driver's layer directories. */
  readonly whiteouts: WhiteoutMode;
  /** The directory holding every layer directory of this driver. */
  readonly home: string;
  init(): Promise<void>;
  status(): Array<[string, string]>;
  /**
   * Create the directory of a layer (read-only image layer or container RW layer) on `parent`.
   * `storageOpt`: a container's --storage-opt (RW layers only), done or refused in the reference's
   * words (./storage-opt.ts), before anything is made.
   */
  create(id: string, parent: string | null, storageOpt?: Readonly<Record<string, string>>): Promise<void>;
  /**
   * Drivers whose layer directories hold only the layer's own changes (overlay2): give a layer
   * created without a parent its parent afterwards, so it can be unpacked before the parent is
   * complete. Absent when unpacking needs the parent's content (vfs copies it).
   */
  attach?(id: string, parent: string): Promise<void>;
  /** Where applyLayer unpacks a layer's tar. */
  unpackDir(id: string): string;
  remove(id: string): Promise<void>;
  /** Mount (if the driver mounts at all) and return the root path. Idempotent. */
  mount(id: string): Promise<string>;
  unmount(id: string): Promise<void>;
  isMounted(id: string): Promise<boolean>;
  /** The layer's own changes as a tar (whiteouts as `.wh.` entries). */
  diff(id: string, parent: string | null, owner?: OwnerMap): AsyncIterable<Buffer>;
  changes(id: string, parent: string | null): Promise<ChangeEntry[]>;
  /** Bytes of the layer's own changes. */
  diffSize(id: string, parent: string | null): Promise<number>;
  metadata(id: string): Record<string, string>;
  /** Cache ids present on disk (to remove the ones no metadata references after a crash). */
  list(): Promise<string[]>;
}

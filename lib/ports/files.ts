// Reading files inside a container (docker cp's stat and archive): what a path's stat answers,
// between the API's archive routes and the driver that resolves paths in the root filesystem
// (drivers/sys/rootfs-files.ts). Declared below both.

export interface PathStat {
  name: string;
  size: number;
  /** Go os.FileMode bits (type bits in the high bits, as the reference daemon encodes them). */
  mode: number;
  mtime: string;
  linkTarget: string;
}

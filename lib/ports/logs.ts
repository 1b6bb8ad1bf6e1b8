// The log contracts between the layers that read and write containers' logs and the log drivers
// that do it (drivers/logging/), declared below both: api/ reads logs through ContainerLogReader,
// the container reconciler hands ContainerLogInfo to the driver it opens; neither imports a driver.

export interface LogReadOptions {
  stdout: boolean;
  stderr: boolean;
  /** Keep streaming new entries until `stopFollowing` fires (then drain what is left and end). */
  follow: boolean;
  /** Unix time in seconds (fractional allowed); entries strictly before are skipped. 0 = none. */
  since: number;
  /** Unix time in seconds (fractional allowed); entries after are skipped. 0 = none. */
  until: number;
  /** Number of entries from the end, -1 = all. */
  tail: number;
}

export interface LogEntry {
  stream: 'stdout' | 'stderr';
  /** The payload, including its trailing "\n" unless the entry is partial. */
  line: Buffer;
  /** RFC 3339 with 9 fractional digits. */
  time: string;
  attrs?: Record<string, string>;
}

export interface ContainerLogReader {
  /**
   * Entries of one container's log in order. `signal` aborts at once (client gone);
   * `stopFollowing` ends follow mode gracefully (container stopped).
   */
  read(containerId: string, opts: LogReadOptions, signal: AbortSignal, stopFollowing?: AbortSignal): AsyncIterable<LogEntry>;
}

/** What the log drivers know of the container they log for (tag, labels/env attributes, gelf fields). */
export interface ContainerLogInfo {
  /** Full 64-hex id. */
  id: string;
  /** With the leading slash, as the reference's ContainerName. */
  name: string;
  /** `sha256:...` */
  imageId: string;
  /** As given at create (Config.Image). */
  imageName: string;
  /** Entrypoint/executable and its arguments. */
  path: string;
  args: string[];
  /** RFC 3339 (nano) creation time. */
  created: string;
  env: string[];
  labels: Record<string, string>;
}

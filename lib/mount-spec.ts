// The `Binds` entry syntax ("src:dst[:opts]") shared by the API (which resolves named and
// anonymous volumes at create) and the OCI spec builder (which mounts host paths), with the
// reference daemon's messages.
import { posix } from 'node:path';
import { invalidArgument } from './errors.ts';

export interface ParsedBind {
  /** Absolute host path, or a volume name when `volume` is set. */
  source: string;
  destination: string;
  readOnly: boolean;
  propagation: string;
  volume: boolean;
  nocopy: boolean;
  /** The options as written ("ro,z"), what inspect shows as Mode. */
  mode: string;
}

const RW_MODES = new Set(['rw', 'ro']);
const LABEL_MODES = new Set(['z', 'Z']);
export const PROPAGATION_MODES = new Set(['shared', 'rshared', 'slave', 'rslave', 'private', 'rprivate']);
const COPY_MODES = new Set(['nocopy']);
const CONSISTENCY_MODES = new Set(['consistent', 'cached', 'delegated']);
const MODE_GROUPS = [RW_MODES, LABEL_MODES, PROPAGATION_MODES, COPY_MODES, CONSISTENCY_MODES];
const VOLUME_NAME = /^[a-zA-Z0-9][a-zA-Z0-9_.-]+$/;

/** Go's path.Clean for absolute paths: normalized, without a trailing slash (except "/"). */
export function cleanPath(p: string): string {
  const n = posix.normalize(p);
  return n.length > 1 && n.endsWith('/') ? n.slice(0, -1) : n;
}

const invalidSpec = (raw: string) => invalidArgument(`invalid volume specification: '${raw}'`);

function validMode(mode: string): boolean {
  if (mode === '') return true;
  const counts = new Array<number>(MODE_GROUPS.length).fill(0);
  for (const o of mode.split(',')) {
    const g = MODE_GROUPS.findIndex((set) => set.has(o));
    if (g < 0 || ++counts[g]! > 1) return false;
  }
  return true;
}

/** Parse one `Binds` entry; throws InvalidArgument with the reference messages. */
export function parseBind(raw: string): ParsedBind {
  const arr = raw.split(':');
  if (arr.length > 3 || arr[0] === '') throw invalidSpec(raw);
  let source = '';
  let destination: string;
  let mode = '';
  if (arr.length === 1) {
    destination = arr[0]!;
  } else if (arr.length === 2) {
    if (validMode(arr[1]!)) throw invalidSpec(raw); // "/foo:rw": a mode without a destination
    [source, destination] = arr as [string, string];
  } else {
    [source, destination, mode] = arr as [string, string, string];
  }
  if (!validMode(mode)) throw invalidArgument(`invalid mode: ${mode}`);
  if (destination === '') throw invalidSpec(raw);
  if (!destination.startsWith('/')) {
    throw invalidArgument(`invalid mount config for type "${source.startsWith('/') ? 'bind' : 'volume'}": invalid mount path: '${destination}' mount path must be absolute`);
  }
  if (cleanPath(destination) === '/') throw invalidArgument(`invalid specification: destination can't be '/'`);
  const volume = !source.startsWith('/');
  if (volume && source !== '' && !VOLUME_NAME.test(source)) {
    throw invalidArgument(
      `create ${source}: "${source}" includes invalid characters for a local volume name, only "[a-zA-Z0-9][a-zA-Z0-9_.-]" are allowed. If you intended to pass a host directory, use absolute path`,
    );
  }
  const opts = mode ? mode.split(',') : [];
  return {
    source: volume ? source : cleanPath(source),
    destination: cleanPath(destination),
    readOnly: opts.includes('ro'),
    propagation: opts.find((o) => PROPAGATION_MODES.has(o)) ?? 'rprivate',
    volume,
    nocopy: opts.includes('nocopy'),
    mode,
  };
}

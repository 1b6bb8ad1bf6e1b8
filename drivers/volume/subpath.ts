// A volume mount's subpath on the host: resolved (symlinks followed) and kept inside the volume's
// data directory, as the start step binds it and as docker cp reads through it.
import { realpath } from 'node:fs/promises';
import { posix } from 'node:path';
import { invalidArgument } from '../../lib/errors.ts';

/** The real host path of `subpath` inside the volume data `root`; InvalidArgument when missing or outside it. */
export async function volumeSubpath(root: string, subpath: string, volume: string): Promise<string> {
  const full = posix.join(root, subpath);
  let real: string;
  try {
    real = await realpath(full);
  } catch {
    throw invalidArgument(`cannot access path ${full}: no such file or directory`);
  }
  const realRoot = await realpath(root);
  if (real !== realRoot && !real.startsWith(`${realRoot}/`)) throw invalidArgument(`subpath ${subpath} is outside of the volume ${volume}`);
  return real;
}

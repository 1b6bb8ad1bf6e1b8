// The --chown and --chmod values of COPY/ADD: owner names looked up in the image's own
// /etc/passwd and /etc/group (resolved inside the rootfs), modes parsed as octal.
import { readFile } from 'node:fs/promises';
import { invalidArgument } from '../../lib/errors.ts';
import { resolveInRoot } from '../sys/rootfs-files.ts';
import type { Ids } from './copy-paths.ts';

const NUMERIC = /^[0-9]+$/;

/** Lines of a passwd/group file split on ':'; a missing file reads as empty. */
async function entries(destRoot: string, file: string): Promise<string[][]> {
  let text: string;
  try {
    text = await readFile(await resolveInRoot(destRoot, file), 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'EISDIR') return [];
    throw err;
  }
  return text.split('\n').filter((l) => l.trim() !== '' && !l.startsWith('#')).map((l) => l.split(':'));
}

/** The ids a --chown value names; `user` alone takes the user's primary group. */
export async function parseChown(chown: string, destRoot: string): Promise<Ids> {
  const sides = chown.split(':');
  if (sides.length > 2 || sides[0] === '') throw invalidArgument(`invalid chown string format: ${chown}`);
  const [user, group] = sides as [string, string | undefined];
  let uid: number;
  let primary: number;
  if (NUMERIC.test(user)) {
    uid = primary = Number(user);
  } else {
    const row = (await entries(destRoot, '/etc/passwd')).find((f) => f[0] === user && f.length >= 4);
    if (!row) throw invalidArgument(`unable to find user ${user}: no matching entries in passwd file`);
    uid = Number(row[2]);
    primary = Number(row[3]);
    if (!Number.isInteger(uid) || !Number.isInteger(primary)) throw invalidArgument(`invalid passwd entry for user ${user}`);
  }
  if (group === undefined) return { uid, gid: primary };
  if (group === '') throw invalidArgument(`invalid chown string format: ${chown}`);
  if (NUMERIC.test(group)) return { uid, gid: Number(group) };
  const row = (await entries(destRoot, '/etc/group')).find((f) => f[0] === group && f.length >= 3);
  if (!row) throw invalidArgument(`unable to find group ${group}: no matching entries in group file`);
  const gid = Number(row[2]);
  if (!Number.isInteger(gid)) throw invalidArgument(`invalid group entry for group ${group}`);
  return { uid, gid };
}

/** A --chmod value: octal permission bits. */
export function parseChmod(chmod: string): number {
  if (!/^[0-7]{1,4}$/.test(chmod)) throw invalidArgument(`invalid chmod parameter: ${chmod}: must be an octal number`);
  return parseInt(chmod, 8);
}

// Resolve a container's `User` ("name", "uid", "name:group", "uid:gid") against the rootfs's
// /etc/passwd and /etc/group, with the reference runtime library's semantics: a numeric user
// that is not in passwd is used as is (gid 0); a name must exist; supplementary groups are the
// groups listing the user, unless a group was given explicitly; GroupAdd entries are appended.
import { lstatSync, readFileSync, readlinkSync } from 'node:fs';
import { posix } from 'node:path';
import { invalidArgument } from '../../lib/errors.ts';

export interface ExecUser {
  uid: number;
  gid: number;
  additionalGids: number[];
  home: string;
}

interface PasswdEntry {
  name: string;
  uid: number;
  gid: number;
  home: string;
}

interface GroupEntry {
  name: string;
  gid: number;
  members: string[];
}

const MAX_ID = 2147483647;

/**
 * Resolve `p` (absolute, as seen inside the container) to a host path under `root`, following
 * symlinks as if `root` were `/`, so a link in the image can never point outside the rootfs.
 */
export function resolveInRoot(root: string, p: string): string {
  let pending = p.split('/').filter(Boolean);
  const done: string[] = [];
  let links = 0;
  while (pending.length > 0) {
    const part = pending.shift()!;
    if (part === '.') continue;
    if (part === '..') {
      done.pop();
      continue;
    }
    const full = posix.join(root, ...done, part);
    let isLink = false;
    try {
      isLink = lstatSync(full).isSymbolicLink();
    } catch {
      // missing: the remaining components are taken literally
    }
    if (!isLink) {
      done.push(part);
      continue;
    }
    if (++links > 255) throw invalidArgument(`too many symlinks resolving ${p}`);
    const target = readlinkSync(full);
    if (target.startsWith('/')) done.length = 0;
    pending = [...target.split('/').filter(Boolean), ...pending];
  }
  return posix.join(root, ...done);
}

function readEtc(rootfs: string, file: string): string | null {
  try {
    return readFileSync(resolveInRoot(rootfs, file), 'utf8');
  } catch {
    return null;
  }
}

function parseId(s: string): number | null {
  if (!/^\d+$/.test(s)) return null;
  const n = Number(s);
  if (n > MAX_ID) throw invalidArgument(`uids and gids must be in range 0-${MAX_ID}`);
  return n;
}

function parsePasswd(text: string | null): PasswdEntry[] {
  const out: PasswdEntry[] = [];
  for (const line of (text ?? '').split('\n')) {
    const l = line.trim();
    if (!l || l.startsWith('#')) continue;
    const f = l.split(':');
    const uid = Number.parseInt(f[2] ?? '', 10);
    const gid = Number.parseInt(f[3] ?? '', 10);
    out.push({ name: f[0] ?? '', uid: Number.isNaN(uid) ? -1 : uid, gid: Number.isNaN(gid) ? 0 : gid, home: f[5] ?? '' });
  }
  return out;
}

function parseGroup(text: string | null): GroupEntry[] {
  const out: GroupEntry[] = [];
  for (const line of (text ?? '').split('\n')) {
    const l = line.trim();
    if (!l || l.startsWith('#')) continue;
    const f = l.split(':');
    const gid = Number.parseInt(f[2] ?? '', 10);
    out.push({ name: f[0] ?? '', gid: Number.isNaN(gid) ? -1 : gid, members: (f[3] ?? '').split(',').filter(Boolean) });
  }
  return out;
}

/** Synchronous core (the spec builder is on the hot path). */
export function resolveUserSync(rootfs: string, user: string, groupAdd: readonly string[] = []): ExecUser {
  const [userArg = '', groupArg = ''] = splitOnce(user, ':');
  const passwd = parsePasswd(readEtc(rootfs, '/etc/passwd'));
  const uidArg = userArg === '' ? 0 : parseId(userArg);

  const pw = passwd.find((u) => (uidArg !== null ? u.uid === uidArg : u.name === userArg));
  const res: ExecUser = { uid: 0, gid: 0, additionalGids: [], home: '/' };
  if (pw) {
    res.uid = pw.uid;
    res.gid = pw.gid;
    res.home = pw.home || '/';
  } else if (uidArg === null) {
    throw invalidArgument(`unable to find user ${userArg}: no matching entries in passwd file`);
  } else {
    res.uid = uidArg;
  }

  let groups: GroupEntry[] | undefined;
  const loadGroups = () => (groups ??= parseGroup(readEtc(rootfs, '/etc/group')));
  if (groupArg !== '') {
    const gidArg = parseId(groupArg);
    const g = loadGroups().find((x) => (gidArg !== null ? x.gid === gidArg : x.name === groupArg));
    if (g) res.gid = g.gid;
    else if (gidArg === null) throw invalidArgument(`unable to find group ${groupArg}: no matching entries in group file`);
    else res.gid = gidArg;
  } else if (pw) {
    for (const g of loadGroups()) if (g.members.includes(pw.name)) res.additionalGids.push(g.gid);
  }

  for (const ag of groupAdd) {
    const n = parseId(ag);
    const g = loadGroups().find((x) => (n !== null ? x.gid === n : x.name === ag));
    if (g) res.additionalGids.push(g.gid);
    else if (n !== null) res.additionalGids.push(n);
    else throw invalidArgument(`Unable to find group ${ag}: no matching entries in group file`);
  }
  res.additionalGids = [...new Set(res.additionalGids)];
  return res;
}

/** Exec and other callers: the same resolution, promise-shaped. */
export async function resolveUser(rootfs: string, user: string, groupAdd: readonly string[] = []): Promise<ExecUser> {
  return resolveUserSync(rootfs, user, groupAdd);
}

function splitOnce(s: string, sep: string): [string, string] {
  const i = s.indexOf(sep);
  return i < 0 ? [s, ''] : [s.slice(0, i), s.slice(i + 1)];
}

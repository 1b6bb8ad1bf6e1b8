// --userns-remap: the user/group spec turned into the id map containers run under, as the
// reference's parseRemappedRoot/setupRemappedRoot and idtools do it: names and ids looked up in
// <etc>/passwd and <etc>/group, ranges read from <etc>/subuid and <etc>/subgid, and for
// `default` the engine's own system user created, with a free 65536-id range, when missing.
import { appendFile, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { invalidArgument } from '../../lib/errors.ts';
import type { IdMap, IdRange } from '../../lib/idmap.ts';
import { EXECA_DEFAULTS, SHORT_COMMAND_TIMEOUT_MS } from './exec.ts';

/** The spec that asks for the engine's own user (the reference's `default` → `dockremap`). */
const DEFAULT_SPEC = 'default';
const DEFAULT_USER = 'engine-remap';
// Where the reference starts looking for a free subordinate range, and how long it makes one.
const RANGE_START = 100000;
const RANGE_LEN = 65536;

export type RunCommand = (cmd: string, args: string[]) => Promise<void>;
export interface ResolveRemapOptions {
  /** Directory holding passwd, group, subuid, subgid; '/etc' unless a test points elsewhere. */
  etc?: string;
  /** Runs a host command, rejecting on a non-zero exit (tests fake it). */
  run?: RunCommand;
}

interface Account { name: string; id: number }
interface SubRange { owner: string; start: number; count: number }

const isNumeric = (s: string) => /^[0-9]+$/.test(s);

/**
 * The user and group a spec names (`default`, USER, USER:GROUP, UID, UID:GID); without a group
 * the group is the user part itself (a name as a group name, a uid as a gid), as the reference
 * takes it. Nothing is looked up here.
 */
export function parseRemapSpec(value: string): { user: string; group: string } {
  const parts = value.split(':');
  if (parts.length > 2 || parts.some((p) => p === '')) {
    throw invalidArgument(`Invalid user/group specification in --userns-remap: ${JSON.stringify(value)}`);
  }
  const user = parts[0] === DEFAULT_SPEC ? DEFAULT_USER : parts[0]!;
  return { user, group: parts[1] ?? user };
}

/**
 * The id map of a --userns-remap value. For `default` the engine-remap user (and its group) is
 * created when <etc>/passwd lacks it, and given ranges when subuid/subgid lack them. An empty map
 * means remapping is off: the reference refuses to remap root onto itself and runs without it.
 */
export async function resolveRemap(value: string, opts: ResolveRemapOptions = {}): Promise<IdMap> {
  const etc = opts.etc ?? '/etc';
  const run = opts.run ?? runCommand;
  const spec = parseRemapSpec(value);
  const wantsDefault = value.split(':')[0] === DEFAULT_SPEC;
  if (wantsDefault) await ensureDefaultUser(etc, run);
  const user = await lookupUser(etc, spec.user);
  const group = await lookupGroup(etc, spec.group, value.includes(':'));
  if (user.name === 'root') return { uids: [], gids: [] };
  if (wantsDefault) {
    await ensureSubRange(etc, 'subuid', '-v', user, run);
    await ensureSubRange(etc, 'subgid', '-w', user, run);
  }
  const uids = await loadRanges(join(etc, 'subuid'), user);
  if (uids.length === 0) throw invalidArgument(`no subuid ranges found for user ${JSON.stringify(user.name)}`);
  const gids = await loadRanges(join(etc, 'subgid'), group);
  if (gids.length === 0) throw invalidArgument(`no subgid ranges found for group ${JSON.stringify(group.name)}`);
  return { uids, gids };
}

// ---- passwd / group -------------------------------------------------------------------------

/** A file's text, or '' when it does not exist (a host without subuid simply has no ranges). */
async function readText(path: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return '';
    throw invalidArgument(`${path}: ${(err as Error).message}`, err);
  }
}

/** name:x:id:... entries; comments, blanks and NIS `+`/`-` lines are not local accounts. */
async function readAccounts(path: string): Promise<Account[]> {
  const out: Account[] = [];
  for (const line of (await readText(path)).split('\n')) {
    const f = line.trim().split(':');
    if (f.length < 3 || !f[0] || /^[#+-]/.test(f[0]) || !isNumeric(f[2]!)) continue;
    out.push({ name: f[0], id: Number(f[2]) });
  }
  return out;
}

/** The first entry matching the name or id, as libc's lookups take the first. */
function findAccount(accounts: Account[], part: string): Account | undefined {
  return isNumeric(part) ? accounts.find((a) => a.id === Number(part)) : accounts.find((a) => a.name === part);
}

async function lookupUser(etc: string, part: string): Promise<Account> {
  const path = join(etc, 'passwd');
  const found = findAccount(await readAccounts(path), part);
  if (found) return found;
  const why = 'no matching entries in passwd file';
  throw invalidArgument(isNumeric(part) ? `Uid ${part} has no entry in ${path}: ${why}` : `Error during uid lookup for ${JSON.stringify(part)}: ${why}`);
}

/** `explicit`: the spec named the group; the reference words the two misses differently. */
async function lookupGroup(etc: string, part: string, explicit: boolean): Promise<Account> {
  const path = join(etc, 'group');
  const found = findAccount(await readAccounts(path), part);
  if (found) return found;
  const why = 'no matching entries in group file';
  if (isNumeric(part)) throw invalidArgument(`Gid ${part} has no entry in ${path}: ${why}`);
  throw invalidArgument(`Error during ${explicit ? 'groupname' : 'gid'} lookup for ${JSON.stringify(part)}: ${why}`);
}

// ---- subuid / subgid ------------------------------------------------------------------------

async function readSubRanges(path: string): Promise<SubRange[]> {
  return parseSubRanges(await readText(path), path);
}

function parseSubRanges(text: string, path: string): SubRange[] {
  const out: SubRange[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const f = line.split(':');
    // A broken line refuses the start (as the reference's parser does) rather than being skipped:
    // skipping it could hand out ids that line was meant to reserve.
    if (f.length !== 3 || !isNumeric(f[1]!) || !isNumeric(f[2]!) || Number(f[2]) === 0) {
      throw invalidArgument(`Cannot parse subuid/gid information: Format not correct for ${path} file`);
    }
    out.push({ owner: f[0]!, start: Number(f[1]), count: Number(f[2]) });
  }
  return out;
}

/** An account's lines (by name or by numeric id), lowest first, laid end to end from id 0. */
async function loadRanges(path: string, owner: Account): Promise<IdRange[]> {
  const mine = (await readSubRanges(path)).filter((r) => ownedBy(r, owner)).sort((a, b) => a.start - b.start);
  let containerID = 0;
  return mine.map((r) => {
    const range = { containerID, hostID: r.start, size: r.count };
    containerID += r.count;
    return range;
  });
}

const ownedBy = (r: SubRange, a: Account) => r.owner === a.name || r.owner === String(a.id);

/** The first RANGE_LEN ids from RANGE_START that no line of the file (anyone's) overlaps. */
function nextFreeStart(ranges: readonly { start: number; count: number }[]): number {
  let start = RANGE_START;
  // Sorted by start, one pass is enough: a range that starts later cannot pull `start` back.
  for (const r of [...ranges].sort((a, b) => a.start - b.start)) {
    if (start < r.start + r.count && r.start < start + RANGE_LEN) start = r.start + r.count;
  }
  return start;
}

/**
 * Give the default user a range in subuid/subgid when it has none: through usermod when the
 * host has it (it takes the shadow lock), else by appending the line, re-checking first so a
 * concurrent start that already added one is not doubled.
 */
async function ensureSubRange(etc: string, file: 'subuid' | 'subgid', flag: '-v' | '-w', user: Account, run: RunCommand): Promise<void> {
  const path = join(etc, file);
  const all = await readSubRanges(path);
  if (all.some((r) => ownedBy(r, user))) return;
  const start = nextFreeStart(all);
  if (await has(run, 'usermod')) {
    await run('usermod', [flag, `${start}-${start + RANGE_LEN - 1}`, user.name]).catch((err: unknown) => {
      throw invalidArgument(`unable to add ${file} range to user: ${JSON.stringify(user.name)}: ${(err as Error).message}`, err);
    });
    return;
  }
  const text = await readText(path);
  if (parseSubRanges(text, path).some((r) => ownedBy(r, user))) return;
  const sep = text === '' || text.endsWith('\n') ? '' : '\n';
  await appendFile(path, `${sep}${user.name}:${start}:${RANGE_LEN}\n`, { mode: 0o644 });
}

// ---- creating the default user --------------------------------------------------------------

type Step = [cmd: string, args: string[]];
/** Ways hosts add a system user with a same-named group: shadow's useradd, Debian's adduser, busybox. */
const ADD_USER_RECIPES: Array<{ needs: string[]; steps: Step[] }> = [
  { needs: ['useradd'], steps: [['useradd', ['--system', '--shell', '/bin/false', '--no-create-home', '--user-group', DEFAULT_USER]]] },
  { needs: ['adduser'], steps: [['adduser', ['--system', '--shell', '/bin/false', '--no-create-home', '--disabled-login', '--disabled-password', '--group', DEFAULT_USER]]] },
  { needs: ['addgroup', 'adduser'], steps: [['addgroup', ['-S', DEFAULT_USER]], ['adduser', ['-S', '-D', '-H', '-s', '/bin/false', '-G', DEFAULT_USER, DEFAULT_USER]]] },
];

async function ensureDefaultUser(etc: string, run: RunCommand): Promise<void> {
  const passwd = join(etc, 'passwd');
  if (findAccount(await readAccounts(passwd), DEFAULT_USER)) return;
  const failures: string[] = [];
  for (const recipe of ADD_USER_RECIPES) {
    if (!(await hasAll(run, recipe.needs))) continue;
    try {
      for (const [cmd, args] of recipe.steps) await run(cmd, args);
      if (findAccount(await readAccounts(passwd), DEFAULT_USER)) return;
      failures.push(`${recipe.steps.at(-1)![0]} succeeded but ${passwd} has no ${DEFAULT_USER} entry`);
      break;
    } catch (err) {
      failures.push((err as Error).message);
    }
  }
  const why = failures.length ? failures.join('; ') : 'cannot add user; no useradd/adduser binary found';
  throw invalidArgument(`Error during ${JSON.stringify(DEFAULT_USER)} user creation: ${why}`);
}

async function has(run: RunCommand, bin: string): Promise<boolean> {
  return run('which', [bin]).then(() => true, () => false);
}

async function hasAll(run: RunCommand, bins: string[]): Promise<boolean> {
  for (const b of bins) if (!(await has(run, b))) return false;
  return true;
}

/** The real `run`: a host command whose failure carries its output (useradd says why). */
async function runCommand(cmd: string, args: string[]): Promise<void> {
  const r = await execa(cmd, args, {
    ...EXECA_DEFAULTS,
    stdin: 'ignore',
    all: true,
    reject: false,
    timeout: SHORT_COMMAND_TIMEOUT_MS,
    env: { LC_ALL: 'C' },
  });
  if (r.exitCode === 0) return;
  const out = typeof r.all === 'string' ? r.all.trim() : '';
  throw new Error(`${cmd} ${args.join(' ')}: ${out || r.shortMessage}`);
}

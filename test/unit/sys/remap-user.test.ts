import assert from 'node:assert/strict';
import { appendFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { parseRemapSpec, resolveRemap } from '../../../drivers/sys/remap-user.ts';
import { isCode } from '../../../lib/errors.ts';

const PASSWD = 'root:x:0:0:root:/root:/bin/bash\nalice:x:1000:1000::/home/alice:/bin/sh\nbob:x:1001:1001::/home/bob:/bin/sh\n';
const GROUP = 'root:x:0:\nalice:x:1000:\nbob:x:1001:\nstaff:x:50:alice\n';

/** A fake /etc in a temp dir; `files` overrides or adds to the defaults. */
async function fakeEtc(files: Record<string, string> = {}): Promise<string> {
  const etc = await mkdtemp(join(tmpdir(), 'remap-user-'));
  const all: Record<string, string> = { passwd: PASSWD, group: GROUP, subuid: '', subgid: '', ...files };
  for (const [name, text] of Object.entries(all)) await writeFile(join(etc, name), text);
  return etc;
}

/**
 * A fake host: `which` finds only `bins`; useradd/adduser write the passwd and group lines a real
 * one would, into the temp etc; usermod appends the range it is given. Every call is recorded.
 */
function fakeHost(etc: string, bins: string[]) {
  const calls: string[] = [];
  const run = async (cmd: string, args: string[]) => {
    calls.push([cmd, ...args].join(' '));
    if (cmd === 'which') {
      if (!bins.includes(args[0]!)) throw new Error(`which ${args[0]}: exit 1`);
      return;
    }
    if (cmd === 'useradd' || cmd === 'adduser') {
      const name = args.at(-1)!;
      await appendFile(join(etc, 'passwd'), `${name}:x:998:998::/nonexistent:/bin/false\n`);
      await appendFile(join(etc, 'group'), `${name}:x:998:\n`);
      return;
    }
    if (cmd === 'usermod') {
      const [flag, span, name] = args as [string, string, string];
      const [lo, hi] = span.split('-').map(Number) as [number, number];
      await appendFile(join(etc, flag === '-v' ? 'subuid' : 'subgid'), `${name}:${lo}:${hi - lo + 1}\n`);
      return;
    }
    throw new Error(`unexpected command ${cmd}`);
  };
  return { run, calls };
}

function rejectsWith(p: Promise<unknown>, message: string | RegExp) {
  return assert.rejects(p, (err: unknown) => {
    assert.ok(isCode(err, 'InvalidArgument'), `InvalidArgument, got ${String(err)}`);
    if (typeof message === 'string') assert.equal((err as Error).message, message);
    else assert.match((err as Error).message, message);
    return true;
  });
}

test('parseRemapSpec: the five forms', () => {
  assert.deepEqual(parseRemapSpec('default'), { user: 'engine-remap', group: 'engine-remap' });
  assert.deepEqual(parseRemapSpec('alice'), { user: 'alice', group: 'alice' });
  assert.deepEqual(parseRemapSpec('alice:staff'), { user: 'alice', group: 'staff' });
  assert.deepEqual(parseRemapSpec('1000'), { user: '1000', group: '1000' });
  assert.deepEqual(parseRemapSpec('1000:50'), { user: '1000', group: '50' });
});

test('parseRemapSpec: malformed values are refused with the reference words', () => {
  for (const v of ['', ':', 'alice:', ':staff', 'a:b:c']) {
    assert.throws(() => parseRemapSpec(v), (err: unknown) => {
      assert.ok(isCode(err, 'InvalidArgument'));
      assert.equal((err as Error).message, `Invalid user/group specification in --userns-remap: ${JSON.stringify(v)}`);
      return true;
    });
  }
});

test('default: creates engine-remap through useradd and appends 100000:65536 when usermod is absent', async (t) => {
  const etc = await fakeEtc();
  t.after(() => rm(etc, { recursive: true, force: true }));
  const host = fakeHost(etc, ['useradd']);
  const map = await resolveRemap('default', { etc, run: host.run });
  assert.deepEqual(map, { uids: [{ containerID: 0, hostID: 100000, size: 65536 }], gids: [{ containerID: 0, hostID: 100000, size: 65536 }] });
  assert.ok(host.calls.includes('useradd --system --shell /bin/false --no-create-home --user-group engine-remap'));
  assert.equal(await readFile(join(etc, 'subuid'), 'utf8'), 'engine-remap:100000:65536\n');
  assert.equal(await readFile(join(etc, 'subgid'), 'utf8'), 'engine-remap:100000:65536\n');

  // A second start finds the user and its ranges: nothing is run, nothing is added.
  const again = fakeHost(etc, ['useradd']);
  assert.deepEqual(await resolveRemap('default', { etc, run: again.run }), map);
  assert.deepEqual(again.calls.filter((c) => !c.startsWith('which')), []);
  assert.equal(await readFile(join(etc, 'subuid'), 'utf8'), 'engine-remap:100000:65536\n');
});

test('default: the new range starts past every existing one, and usermod is used when present', async (t) => {
  const etc = await fakeEtc({ subuid: 'alice:100000:65536\n', subgid: 'alice:100000:65536\nbob:165536:65536\n' });
  t.after(() => rm(etc, { recursive: true, force: true }));
  const host = fakeHost(etc, ['adduser', 'usermod']);
  const map = await resolveRemap('default', { etc, run: host.run });
  assert.ok(host.calls.some((c) => c.startsWith('adduser --system') && c.endsWith('--group engine-remap')));
  assert.ok(host.calls.includes('usermod -v 165536-231071 engine-remap'));
  assert.ok(host.calls.includes('usermod -w 231072-296607 engine-remap'));
  assert.deepEqual(map.uids, [{ containerID: 0, hostID: 165536, size: 65536 }]);
  assert.deepEqual(map.gids, [{ containerID: 0, hostID: 231072, size: 65536 }]);
});

test('default: appending keeps a file without a final newline well-formed', async (t) => {
  const etc = await fakeEtc({ subuid: 'alice:100000:65536', subgid: '# none yet' });
  t.after(() => rm(etc, { recursive: true, force: true }));
  await resolveRemap('default', { etc, run: fakeHost(etc, ['useradd']).run });
  assert.equal(await readFile(join(etc, 'subuid'), 'utf8'), 'alice:100000:65536\nengine-remap:165536:65536\n');
  assert.equal(await readFile(join(etc, 'subgid'), 'utf8'), '# none yet\nengine-remap:100000:65536\n');
});

test('default: no tool to add users refuses the start', async (t) => {
  const etc = await fakeEtc();
  t.after(() => rm(etc, { recursive: true, force: true }));
  await rejectsWith(resolveRemap('default', { etc, run: fakeHost(etc, []).run }), 'Error during "engine-remap" user creation: cannot add user; no useradd/adduser binary found');
});

test('USER:GROUP: several ranges, sorted and laid end to end; names and numeric owners both count', async (t) => {
  const etc = await fakeEtc({
    subuid: '# comment\nalice:300000:1000\nbob:100000:65536\n1000:200000:5000\n',
    subgid: 'staff:400000:10\n50:500000:20\nalice:600000:65536\n',
  });
  t.after(() => rm(etc, { recursive: true, force: true }));
  const map = await resolveRemap('alice:staff', { etc, run: fakeHost(etc, []).run });
  assert.deepEqual(map.uids, [
    { containerID: 0, hostID: 200000, size: 5000 },
    { containerID: 5000, hostID: 300000, size: 1000 },
  ]);
  assert.deepEqual(map.gids, [
    { containerID: 0, hostID: 400000, size: 10 },
    { containerID: 10, hostID: 500000, size: 20 },
  ]);
});

test('USER alone takes the group of the same name; UID and UID:GID are looked up by id', async (t) => {
  const etc = await fakeEtc({ subuid: 'alice:100000:65536\n', subgid: 'alice:100000:65536\nstaff:200000:65536\n' });
  t.after(() => rm(etc, { recursive: true, force: true }));
  const run = fakeHost(etc, []).run;
  const own = { uids: [{ containerID: 0, hostID: 100000, size: 65536 }], gids: [{ containerID: 0, hostID: 100000, size: 65536 }] };
  assert.deepEqual(await resolveRemap('alice', { etc, run }), own);
  assert.deepEqual(await resolveRemap('1000', { etc, run }), own);
  const staff = await resolveRemap('1000:50', { etc, run });
  assert.deepEqual(staff.gids, [{ containerID: 0, hostID: 200000, size: 65536 }]);
});

test('root is not remapped onto itself: the map is empty (remapping off)', async (t) => {
  const etc = await fakeEtc();
  t.after(() => rm(etc, { recursive: true, force: true }));
  assert.deepEqual(await resolveRemap('0:0', { etc, run: fakeHost(etc, []).run }), { uids: [], gids: [] });
});

test('unknown users and groups are refused with the reference words', async (t) => {
  const etc = await fakeEtc({ subuid: 'alice:100000:65536\n', subgid: 'alice:100000:65536\n' });
  t.after(() => rm(etc, { recursive: true, force: true }));
  const o = { etc, run: fakeHost(etc, []).run };
  await rejectsWith(resolveRemap('carol', o), 'Error during uid lookup for "carol": no matching entries in passwd file');
  await rejectsWith(resolveRemap('4242', o), `Uid 4242 has no entry in ${join(etc, 'passwd')}: no matching entries in passwd file`);
  await rejectsWith(resolveRemap('alice:nogroup', o), 'Error during groupname lookup for "nogroup": no matching entries in group file');
  await rejectsWith(resolveRemap('alice:4242', o), `Gid 4242 has no entry in ${join(etc, 'group')}: no matching entries in group file`);
});

test('a user or group without ranges is refused', async (t) => {
  const etc = await fakeEtc({ subuid: 'alice:100000:65536\n', subgid: 'alice:100000:65536\n' });
  t.after(() => rm(etc, { recursive: true, force: true }));
  const o = { etc, run: fakeHost(etc, []).run };
  await rejectsWith(resolveRemap('bob', o), 'no subuid ranges found for user "bob"');
  await rejectsWith(resolveRemap('alice:staff', o), 'no subgid ranges found for group "staff"');
  await rm(join(etc, 'subuid'));
  await rejectsWith(resolveRemap('alice', o), 'no subuid ranges found for user "alice"');
});

test('a malformed subuid line refuses the start', async (t) => {
  const etc = await fakeEtc({ subuid: 'alice:100000\n', subgid: 'alice:100000:65536\n' });
  t.after(() => rm(etc, { recursive: true, force: true }));
  await rejectsWith(resolveRemap('alice', { etc, run: fakeHost(etc, []).run }), /^Cannot parse subuid\/gid information: Format not correct for .*subuid file$/);
});

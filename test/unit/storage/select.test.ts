// drivers/storage/select.ts: the driver a daemon runs when none is asked for.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { chooseDriver, priorDrivers } from '../../../drivers/storage/select.ts';

const logged: string[] = [];
const log = { info: (m: unknown) => void logged.push(String(m)), warn: (_o: unknown, m?: string) => void logged.push(String(m)) } as never;
const root = () => mkdtempSync(join(tmpdir(), 'select-'));
const holds = (r: string, driver: string) => {
  mkdirSync(join(r, driver), { recursive: true });
  writeFileSync(join(r, driver, 'x'), '');
};
const host = { overlay: true, onOverlay: false, fuse: true };

test('asked for: that one, whatever the root holds', () => {
  const r = root();
  holds(r, 'btrfs');
  assert.equal(chooseDriver('vfs', r, log, host), 'vfs');
  rmSync(r, { recursive: true });
});

test('the prior driver (vfs never counts; an empty directory neither), said in the log', () => {
  const r = root();
  mkdirSync(join(r, 'overlay2'));
  holds(r, 'vfs');
  assert.deepEqual(priorDrivers(r), []);
  holds(r, 'btrfs');
  assert.equal(chooseDriver('', r, log, host), 'btrfs');
  assert.match(logged.at(-1)!, /\[graphdriver\] using prior storage driver: btrfs/);
  rmSync(r, { recursive: true });
});

test('two prior drivers: refused in the reference\'s words', () => {
  const r = root();
  holds(r, 'overlay2');
  holds(r, 'fuse-overlayfs');
  assert.throws(() => chooseDriver('', r, log, host), { message: `error initializing graphdriver: ${r} contains several valid graphdrivers: overlay2, fuse-overlayfs; Please cleanup or explicitly choose storage driver (-s <DRIVER>)` });
  rmSync(r, { recursive: true });
});

test('nothing prior: overlay2 where the kernel\'s overlay stacks, else fuse-overlayfs, else vfs (said in the log)', () => {
  const r = root();
  assert.equal(chooseDriver('', r, log, host), 'overlay2');
  assert.equal(chooseDriver('', r, log, { ...host, onOverlay: true }), 'fuse-overlayfs');
  assert.match(logged.at(-1)!, /cannot be used .*itself on overlayfs.*using fuse-overlayfs/);
  assert.equal(chooseDriver('', r, log, { overlay: false, onOverlay: false, fuse: false }), 'vfs');
  rmSync(r, { recursive: true });
});

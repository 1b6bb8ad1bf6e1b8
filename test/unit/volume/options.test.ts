// The local driver's DriverOpts, name rule and mount(8) arguments, against the reference's messages.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isCode } from '../../../lib/errors.ts';
import { mountArgs, parseRamSize, redactMountError, validateLocalOptions, volumeNameError } from '../../../lib/volume-options.ts';

function refused(opts: Record<string, string>, message: string): void {
  assert.throws(
    () => validateLocalOptions(opts),
    (err: unknown) => isCode(err, 'InvalidArgument') && (err as Error).message === message,
    JSON.stringify(opts),
  );
}

test('valid options', () => {
  validateLocalOptions({});
  validateLocalOptions({ type: 'tmpfs', device: 'tmpfs' });
  validateLocalOptions({ type: 'tmpfs', device: 'tmpfs', o: 'size=1m,uid=1000' });
  validateLocalOptions({ type: 'none', device: '/srv/data', o: 'bind' });
  validateLocalOptions({ type: 'nfs', device: ':/export', o: 'addr=10.0.0.1,rw' });
  validateLocalOptions({ type: 'cifs', device: '//server/share', o: 'port=445' });
  validateLocalOptions({ size: '0' });
});

test('unknown option', () => {
  refused({ foo: 'bar' }, 'invalid option: "foo"');
  refused({ type: 'tmpfs', device: 'tmpfs', Size: '1' }, 'invalid option: "Size"');
});

test('mandatory options', () => {
  refused({ type: 'tmpfs' }, 'missing required option: "device"');
  refused({ device: 'tmpfs' }, 'missing required option: "type"');
  refused({ o: 'size=1m' }, 'missing required option: "device"');
  refused({ o: 'size=1m', device: 'tmpfs' }, 'missing required option: "type"');
});

test('size needs quota support', () => {
  refused({ size: '10m' }, 'quota size requested but no quota support');
  refused({ size: 'abc' }, "invalid size: 'abc'");
  refused({ size: '10x' }, "invalid suffix: 'x'");
  assert.equal(parseRamSize('1.5k'), 1536);
  assert.equal(parseRamSize('10 MiB'), 10 * 2 ** 20);
  assert.equal(parseRamSize('2GB'), 2 * 2 ** 30);
  assert.equal(parseRamSize('512'), 512);
});

test('CIFS device URL may not carry a port', () => {
  refused({ type: 'cifs', device: '//server:445/share', o: 'user=x' }, "port not allowed in CIFS device URL, include 'port' in 'o='");
});

test('volume names', () => {
  assert.equal(volumeNameError('ab'), undefined);
  assert.equal(volumeNameError('my_vol.1-x'), undefined);
  assert.equal(volumeNameError('a'.repeat(64)), undefined);
  assert.equal(volumeNameError('a'), 'volume name is too short, names should be at least two alphanumeric characters');
  assert.equal(
    volumeNameError('_ab'),
    '"_ab" includes invalid characters for a local volume name, only "[a-zA-Z0-9][a-zA-Z0-9_.-]" are allowed. If you intended to pass a host directory, use absolute path',
  );
  assert.match(volumeNameError('a/b')!, /^"a\/b" includes invalid characters/);
  assert.match(volumeNameError('..')!, /^"\.\." includes invalid characters/);
  assert.match(volumeNameError('')!, /^"" includes invalid characters/);
  assert.match(volumeNameError('a\nb')!, /^"a\\nb" includes/);
});

test('mount arguments', () => {
  assert.equal(mountArgs({}), null);
  assert.equal(mountArgs({ o: 'ro' }), null);
  assert.deepEqual(mountArgs({ type: 'tmpfs', device: 'tmpfs', o: 'size=1m' }), { type: 'tmpfs', device: 'tmpfs', options: 'size=1m' });
  assert.deepEqual(mountArgs({ type: 'none', device: '/srv/data', o: 'bind,ro' }), { type: 'none', device: '/srv/data', options: 'bind,ro' });
  assert.deepEqual(mountArgs({ type: 'ext4', device: '/dev/sdb1' }), { type: 'ext4', device: '/dev/sdb1', options: '' });
  assert.throws(() => mountArgs({ type: 'tmpfs', device: '' }), /missing device in volume options/);
});

test('passwords are hidden in mount errors', () => {
  assert.equal(
    redactMountError('mount error: bad option password=hunter2', 'user=me,password=hunter2'),
    'mount error: bad option password=********',
  );
  assert.equal(redactMountError('boom', 'user=me'), 'boom');
});

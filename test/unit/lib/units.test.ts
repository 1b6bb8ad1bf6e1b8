import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formatGoDuration, fromHumanSize, isGoDuration, parseGoDuration, ramInBytes } from '../../../lib/units.ts';

test('Go durations: parsed as time.ParseDuration, written as Duration.String()', () => {
  assert.equal(parseGoDuration('1h30m'), 5400e9);
  assert.equal(parseGoDuration('-1.5s'), -1.5e9);
  assert.equal(parseGoDuration('300ms'), 300e6);
  assert.ok(isGoDuration('10m') && isGoDuration('0') && !isGoDuration('10') && !isGoDuration('1d') && !isGoDuration(''));
  assert.throws(() => parseGoDuration('5'), { message: 'time: missing unit in duration "5"' });
  assert.deepEqual([0, 1500, 2e6, 1.5e9, 90e9, 3600e9, 3723.5e9].map(formatGoDuration), ['0s', '1.5µs', '2ms', '1.5s', '1m30s', '1h0m0s', '1h2m3.5s']);
});

test('sizes as go-units reads them: FromHumanSize decimal, RAMInBytes binary', () => {
  assert.equal(fromHumanSize('10m'), 10e6);
  assert.equal(fromHumanSize('10 GB'), 10e9);
  assert.equal(ramInBytes('64m'), 64 * 1024 * 1024);
  assert.equal(ramInBytes('1.5GiB'), 1.5 * 1024 ** 3);
  assert.equal(ramInBytes('1024'), 1024);
  for (const bad of ['', 'm', '-1m', '10x', ' 10m', '10  m']) assert.throws(() => ramInBytes(bad), { message: `invalid size: '${bad}'` });
});

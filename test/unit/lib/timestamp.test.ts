// The reference's GetTimestamp, as the prune filters, the image list and the event stream read
// `until`/`since`: Go durations before now, RFC 3339 (and its short forms), Unix seconds[.nanos].
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseTimestamp, parseTimestampMs } from '../../../lib/timestamp.ts';

const NOW = Date.UTC(2026, 10, 28, 12, 0, 0, 750);

test('a Go duration counts back from now in whole seconds, compound units included', () => {
  assert.equal(parseTimestampMs('10m', NOW), Date.UTC(2026, 10, 28, 11, 50, 0));
  assert.equal(parseTimestampMs('1h30m', NOW), Date.UTC(2026, 10, 28, 10, 30, 0));
  assert.equal(parseTimestampMs('1.5s', NOW), Date.UTC(2026, 10, 28, 11, 59, 59));
  assert.equal(parseTimestampMs('-1m', NOW), Date.UTC(2026, 10, 28, 12, 1, 0), 'a negative duration is after now');
});

test('Unix seconds with up to nine digits of nanoseconds; "0" is the epoch, not a duration', () => {
  assert.equal(parseTimestamp('1700000000', NOW), 1_700_000_000_000_000_000n);
  assert.equal(parseTimestamp('1700000000.5', NOW), 1_700_000_000_500_000_000n);
  assert.equal(parseTimestamp('1700000000.123456789123', NOW), 1_700_000_000_123_456_789n);
  assert.equal(parseTimestamp('0', NOW), 0n);
});

test('RFC 3339 with a zone, and its short forms', () => {
  assert.equal(parseTimestampMs('2026-11-28T10:00:00Z', NOW), Date.UTC(2026, 10, 28, 10));
  assert.equal(parseTimestampMs('2026-11-28T10:00:00+02:00', NOW), Date.UTC(2026, 10, 28, 8));
  assert.equal(parseTimestamp('2026-11-28T10:00:00.000000001Z', NOW), BigInt(Date.UTC(2026, 10, 28, 10)) * 1_000_000n + 1n);
  assert.equal(parseTimestampMs('2026-11-28T10Z', NOW), Date.UTC(2026, 10, 28, 10));
  assert.equal(parseTimestampMs('2026-11-28T10:30Z', NOW), Date.UTC(2026, 10, 28, 10, 30));
  assert.equal(parseTimestampMs('2026-11-28Z', NOW), Date.UTC(2026, 10, 28));
});

test('without a zone: the daemon\'s local time, a date alone included', () => {
  assert.equal(parseTimestampMs('2026-11-28T10:00:00', NOW), new Date(2026, 10, 28, 10).getTime());
  assert.equal(parseTimestampMs('2026-11-28', NOW), new Date(2026, 10, 28).getTime());
});

test('bad values are a 400 with the reference\'s words; a date out of range is not a date', () => {
  const bad = (v: string, re: RegExp) =>
    assert.throws(() => parseTimestamp(v, NOW), (e: Error & { code?: string }) => e.code === 'InvalidArgument' && re.test(e.message), v);
  bad('yesterday', /^failed to parse value as time or duration: "yesterday"$/);
  bad('10x', /^failed to parse value as time or duration: "10x"$/);
  bad('1.2.3', /failed to parse value as time or duration/);
  bad('2026-13-01', /^parsing time "2026-13-01"/);
  bad('2026-02-30T10:00:00Z', /^parsing time/);
  bad('-5', /^parsing time "-5"/);
});

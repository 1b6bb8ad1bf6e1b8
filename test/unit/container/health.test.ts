// Healthchecks: the config read as the reference reads it, the verdict after each probe (streak,
// retries, the start period, five log entries), and the reconcile step's timing with a fake probe:
// starting at each run, a probe when due and never two at once, the wait a requeue.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { mergeHealthcheck, parseHealthcheck } from '../../../admission/containers/healthcheck.ts';
import { applyProbe, HealthChecks, healthConfigOf, type ProbeResult } from '../../../reconcilers/container/health.ts';
import { formatGoDuration } from '../../../lib/units.ts';
import type { ContainerConfig, HealthState } from '../../../store/kinds/container.ts';
import { stagedFake } from './staged-fake.ts';

const S = 1_000_000_000;

describe('healthcheck config', () => {
  test('test forms, defaults and durations', () => {
    assert.equal(healthConfigOf({}), null);
    assert.equal(healthConfigOf({ Healthcheck: { Test: ['NONE'] } }), null);
    assert.equal(healthConfigOf({ Healthcheck: { Test: [] } }), null);
    assert.deepEqual(healthConfigOf({ Healthcheck: { Test: ['CMD', 'true', 'x'] } }), {
      cmd: ['true', 'x'], intervalMs: 30_000, timeoutMs: 30_000, startPeriodMs: 0, startIntervalMs: 5_000, retries: 3,
    });
    const sh = healthConfigOf({ Healthcheck: { Test: ['CMD-SHELL', 'exit 1'], Interval: 2 * S, Timeout: S / 2, Retries: 5, StartPeriod: 10 * S } })!;
    assert.deepEqual(sh, { cmd: ['/bin/sh', '-c', 'exit 1'], intervalMs: 2000, timeoutMs: 500, startPeriodMs: 10_000, startIntervalMs: 5_000, retries: 5 });
    assert.deepEqual(healthConfigOf({ Healthcheck: { Test: ['CMD-SHELL', 'x'] }, Shell: ['/bin/ash', '-e', '-c'] })!.cmd, ['/bin/ash', '-e', '-c', 'x']);
    assert.equal(formatGoDuration(500 * 1e6), '500ms');
    assert.equal(formatGoDuration(30_000 * 1e6), '30s');
    assert.equal(formatGoDuration(1500 * 1e6), '1.5s');
    assert.equal(formatGoDuration(120_000 * 1e6), '2m0s');
  });

  test('create checks the reference way and merges with the image', () => {
    assert.throws(() => parseHealthcheck({ Test: ['CMD', 'true'], Interval: 10 }), /Interval in Healthcheck cannot be less than 1ms/);
    assert.throws(() => parseHealthcheck({ Timeout: 999_999 }), /Timeout in Healthcheck cannot be less than 1ms/);
    assert.throws(() => parseHealthcheck({ StartPeriod: 5 }), /StartPeriod in Healthcheck cannot be less than 1ms/);
    assert.throws(() => parseHealthcheck({ Retries: -1 }), /Retries in Healthcheck cannot be negative/);
    assert.throws(() => parseHealthcheck({ Test: ['SOMETHING'] }), /unsupported Healthcheck.Test type/);
    assert.throws(() => parseHealthcheck({ Test: 'true' }), /expected an array of strings/);
    assert.throws(() => parseHealthcheck({ Interval: '1s' }), /expected an integer/);
    assert.equal(parseHealthcheck(null), null);
    const image = { Test: ['CMD', 'img-check'], Interval: 5 * S, Retries: 2 };
    assert.deepEqual(mergeHealthcheck(null, image), image);
    assert.deepEqual(mergeHealthcheck({ Interval: S }, image), { Test: ['CMD', 'img-check'], Interval: S, Retries: 2 });
    assert.deepEqual(mergeHealthcheck({ Test: ['NONE'] }, image), { Test: ['NONE'], Interval: 5 * S, Retries: 2 });
    assert.equal(mergeHealthcheck(null, undefined), undefined);
  });
});

const at = (ms: number) => new Date(Date.parse('2026-01-01T00:00:00Z') + ms).toISOString();
const probe = (code: number, startMs: number, output = ''): ProbeResult => ({ exitCode: code, output, start: at(startMs), end: at(startMs + 10) });

describe('the verdict', () => {
  const hc = healthConfigOf({ Healthcheck: { Test: ['CMD', 'x'], Retries: 2, StartPeriod: 10 * S } })!;
  const starting: HealthState = { Status: 'starting', FailingStreak: 0, Log: [] };
  test('failures inside the start period do not count; after it they do; a success resets', () => {
    let h = applyProbe(starting, probe(1, 1000), hc, at(0));
    assert.deepEqual([h.Status, h.FailingStreak, h.Log.length], ['starting', 0, 1]);
    h = applyProbe(h, probe(1, 11_000), hc, at(0));
    assert.deepEqual([h.Status, h.FailingStreak], ['starting', 1]);
    h = applyProbe(h, probe(2, 12_000), hc, at(0));
    assert.deepEqual([h.Status, h.FailingStreak], ['unhealthy', 2]);
    h = applyProbe(h, probe(0, 13_000, 'ok\n'), hc, at(0));
    assert.deepEqual([h.Status, h.FailingStreak], ['healthy', 0]);
    assert.deepEqual(h.Log.at(-1), { Start: at(13_000), End: at(13_010), ExitCode: 0, Output: 'ok\n' });
  });
  test('a success inside the start period ends it: the next failures count', () => {
    let h = applyProbe(starting, probe(0, 1000), hc, at(0));
    h = applyProbe(h, probe(1, 2000), hc, at(0));
    h = applyProbe(h, probe(1, 3000), hc, at(0));
    assert.deepEqual([h.Status, h.FailingStreak], ['unhealthy', 2]);
  });
  test('the log keeps the last five', () => {
    let h = starting;
    for (let i = 0; i < 8; i++) h = applyProbe(h, probe(0, i * 1000, String(i)), hc, at(0));
    assert.deepEqual(h.Log.map((e) => e.Output), ['3', '4', '5', '6', '7']);
  });
});


describe('the reconcile step', () => {
  test('starting at a run, a probe when due, one at a time, the result recorded when it ends', async () => {
    const calls: string[][] = [];
    let finish: (r: ProbeResult) => void = () => {};
    const checks = new HealthChecks({
      run: (_id, cmd) => {
        calls.push(cmd);
        return new Promise((r) => (finish = r));
      },
    });
    const woken: string[] = [];
    checks.ends.subscribe((id) => woken.push(id));
    const config = { Healthcheck: { Test: ['CMD', 'check'], Interval: 2 * S, Timeout: S } } as unknown as ContainerConfig;
    const started = Date.parse('2026-01-01T00:00:00Z');
    const st = stagedFake({ startedAt: at(0) });

    assert.equal(checks.step('c1', config, st, started + 500), 1500, 'the first probe an interval after the start');
    assert.deepEqual(st.cur.health, { Status: 'starting', FailingStreak: 0, Log: [] });
    assert.equal(calls.length, 0);
    assert.equal(checks.step('c1', config, st, started + 2000), 2000, 'probe started: look again after its timeout');
    assert.deepEqual(calls, [['check']]);
    assert.equal(checks.step('c1', config, st, started + 2100), 2000, 'still in flight: no second probe');
    assert.equal(calls.length, 1);
    finish(probe(0, 2000));
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(woken, ['c1']);
    assert.equal(checks.step('c1', config, st, started + 2020), 1990, 'recorded; the next an interval after its end');
    assert.equal(st.cur.health!.Status, 'healthy');
    assert.equal(st.cur.health!.Log.length, 1);

    // A new run starts over.
    st.cur = { ...st.cur, startedAt: at(60_000) };
    checks.step('c1', config, st, started + 60_001);
    assert.deepEqual(st.cur.health, { Status: 'starting', FailingStreak: 0, Log: [] });
    assert.equal(healthConfigOf({ Healthcheck: { Test: ['NONE'] } }), null);
    assert.equal(checks.step('c1', { Healthcheck: { Test: ['NONE'] } } as unknown as ContainerConfig, st, started), undefined);
  });
});

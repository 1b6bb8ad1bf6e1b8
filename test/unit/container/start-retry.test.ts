// The back-off of starts the supervisor's absence cut off (reconcilers/container/start-retry.ts),
// and an exec's exit asked again while the supervisor is out of reach (reconcilers/exec/reconciler.ts).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { unavailable } from '../../../lib/errors.ts';
import { StartRetries } from '../../../reconcilers/container/start-retry.ts';
import { exitOf } from '../../../reconcilers/exec/reconciler.ts';

describe('start retries', () => {
  test('doubling delays from 250 ms up to 4 s; none after a minute; settled clears', () => {
    let now = 0;
    const r = new StartRetries(() => now);
    assert.equal(r.delay('a'), undefined);
    const delays: number[] = [];
    for (let i = 0; i < 7; i++) {
      assert.equal(r.failed('a'), true);
      delays.push(r.delay('a')!);
      now += delays.at(-1)!;
      assert.equal(r.delay('a'), 0, 'due');
    }
    assert.deepEqual(delays, [250, 500, 1000, 2000, 4000, 4000, 4000]);
    now += 60_000;
    assert.equal(r.failed('a'), false, 'past the window: the failure is the start\'s outcome');
    assert.equal(r.delay('a'), undefined);
    r.failed('b');
    r.settled('b');
    assert.equal(r.delay('b'), undefined);
  });
});

describe('an exec\'s exit across a supervisor restart', () => {
  const unreachable = () => Object.assign(unavailable('Connection dropped'), { unreachable: true });

  test('a dropped wait is asked again until the supervisor answers', async () => {
    let asked = 0;
    const code = await exitOf(Promise.reject(unreachable()), async () => {
      if (++asked < 2) throw unreachable();
      return { exitStatus: 7 };
    }, () => assert.fail('no failure'));
    assert.deepEqual([code, asked], [7, 2]);
  });

  test('another failure gives 137 at once', async () => {
    let failed: unknown;
    const code = await exitOf(Promise.reject(unavailable('deadline exceeded')), async () => assert.fail('not asked again'), (err) => (failed = err));
    assert.equal(code, 137);
    assert.match(String(failed), /deadline exceeded/);
  });
});

// Lifecycle phases of hack/bench.ts: how a daemon copes with many slow stops at once (the stop
// storm) and with its own crash (kill -9 and restart beside running containers). Each phase
// removes every container it made, also on failure.

/** Engine API reply, body read fully. */
export interface LifecycleReply {
  status: number;
  body: Buffer;
}

/** What the phases need of a daemon under test. */
export interface LifecycleClient {
  name: string;
  /** One Engine API call over the daemon's socket (path without the version prefix). */
  call(method: string, path: string, body?: unknown, opts?: { timeoutMs?: number }): Promise<LifecycleReply>;
  /** `docker ARGS` through the docker CLI against the daemon; rejects on a non-zero exit. */
  cli(args: readonly string[]): Promise<unknown>;
  /** kill -9 the daemon alone (its supervisor and containers stay), start it again with the same
   * arguments, resolve once it answers /_ping. Rejects if it does not come back. */
  crashRestart?(): Promise<void>;
  log(msg: string): void;
}

export const STORM_CONTAINERS = 20;
export const CRASH_CONTAINERS = 24;
/** How long after the stops are fired the timed `docker run` starts. */
const STORM_RUN_DELAY_MS = 300;
const LABEL = 'engine.bench';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const now = () => performance.now();

async function expectStatus(c: LifecycleClient, method: string, path: string, status: number, body?: unknown): Promise<Buffer> {
  const r = await c.call(method, path, body);
  if (r.status !== status) throw new Error(`${c.name}: ${method} ${path}: ${r.status} ${r.body.toString().slice(0, 300)}`);
  return r.body;
}

/** Creates and starts `count` containers of `sleep 3600` (network none), 4 at a time; every id
 * created is pushed to `ids` at once, so the caller's cleanup sees it even if a later one fails. */
async function startSleepers(c: LifecycleClient, image: string, count: number, phase: string, ids: string[]): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(4, count) }, async () => {
    while (next < count) {
      next++;
      const { Id: id } = JSON.parse((await expectStatus(c, 'POST', '/containers/create', 201, {
        Image: image,
        Cmd: ['sleep', '3600'],
        Labels: { [LABEL]: phase },
        HostConfig: { NetworkMode: 'none' },
      })).toString()) as { Id: string };
      ids.push(id);
      await expectStatus(c, 'POST', `/containers/${id}/start`, 204);
    }
  }));
}

/** Force-removes the containers, 8 at a time; failures are logged, not thrown (it runs in finally). */
async function removeAll(c: LifecycleClient, ids: readonly string[]): Promise<void> {
  let next = 0;
  const failed: string[] = [];
  await Promise.all(Array.from({ length: Math.min(8, ids.length) }, async () => {
    while (next < ids.length) {
      const id = ids[next++];
      try {
        const r = await c.call('DELETE', `/containers/${id}?force=1`, undefined, { timeoutMs: 60_000 });
        if (r.status !== 204 && r.status !== 404) failed.push(`${id.slice(0, 12)}: ${r.status} ${r.body.toString().slice(0, 200)}`);
      } catch (err) {
        failed.push(`${id.slice(0, 12)}: ${err instanceof Error ? err.message : String(err)}`);
      }
    }
  }));
  if (failed.length) c.log(`${c.name}: could not remove ${failed.length} container(s): ${failed.join('; ')}`);
}

/** Running containers carrying the phase's label. */
async function runningWithLabel(c: LifecycleClient, phase: string): Promise<number> {
  const filters = encodeURIComponent(JSON.stringify({ label: [`${LABEL}=${phase}`], status: ['running'] }));
  return (JSON.parse((await expectStatus(c, 'GET', `/containers/json?filters=${filters}`, 200)).toString()) as unknown[]).length;
}

/**
 * Stop storm: STORM_CONTAINERS `sleep 3600` containers (busybox sleep as PID 1 ignores SIGTERM, so
 * each stop takes the full default 10 s grace period, then SIGKILL) are all stopped at once; 300 ms
 * later one `docker run --rm IMAGE true` is timed. Resolves to [docker run seconds, seconds until
 * all stops answered].
 */
export async function stopStorm(c: LifecycleClient, image: string): Promise<[number, number]> {
  const ids: string[] = [];
  let stops: Promise<unknown>[] = [];
  try {
    await startSleepers(c, image, STORM_CONTAINERS, 'storm', ids);
    const t0 = now();
    let lastAnswer = t0;
    const stopErrors: string[] = [];
    stops = ids.map(async (id) => {
      try {
        const r = await c.call('POST', `/containers/${id}/stop`, undefined, { timeoutMs: 120_000 });
        if (r.status !== 204 && r.status !== 304) stopErrors.push(`${id.slice(0, 12)}: ${r.status} ${r.body.toString().slice(0, 200)}`);
      } catch (err) {
        stopErrors.push(`${id.slice(0, 12)}: ${err instanceof Error ? err.message : String(err)}`);
      }
      lastAnswer = Math.max(lastAnswer, now());
    });
    await sleep(STORM_RUN_DELAY_MS);
    const r0 = now();
    await c.cli(['run', '--rm', '--network', 'none', image, 'true']);
    const runSecs = (now() - r0) / 1000;
    await Promise.all(stops);
    const stopsSecs = (lastAnswer - t0) / 1000;
    c.log(`${c.name}: stop storm: docker run ${runSecs.toFixed(2)} s after ${STORM_RUN_DELAY_MS} ms; ${ids.length} stops answered after ${stopsSecs.toFixed(2)} s`);
    if (stopErrors.length) throw new Error(`${c.name}: ${stopErrors.length} of ${ids.length} stops failed: ${stopErrors.join('; ')}`);
    return [runSecs, stopsSecs];
  } finally {
    // Let outstanding stops answer first (each is bounded by its own timeout), then force-remove.
    await Promise.allSettled(stops);
    await removeAll(c, ids);
  }
}

/**
 * Crash restart: CRASH_CONTAINERS `sleep 3600` containers run while the daemon is killed with
 * SIGKILL and started again; times from the restarted daemon's first /_ping answer to the end of
 * one `docker run --rm IMAGE true`. Resolves to seconds.
 */
export async function crashRestart(c: LifecycleClient, image: string): Promise<number> {
  const restart = c.crashRestart?.bind(c);
  if (!restart) throw new Error(`${c.name}: no crash restart for this daemon`);
  const ids: string[] = [];
  try {
    await startSleepers(c, image, CRASH_CONTAINERS, 'crash', ids);
    const before = await runningWithLabel(c, 'crash');
    try {
      await restart();
    } catch (err) {
      throw new Error(`${c.name}: the daemon did not come back after kill -9: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
    }
    const t0 = now();
    await c.cli(['run', '--rm', '--network', 'none', image, 'true']);
    const secs = (now() - t0) / 1000;
    const after = await runningWithLabel(c, 'crash').catch(() => -1);
    c.log(`${c.name}: crash restart: docker run done ${secs.toFixed(2)} s after the first ping; ${before} -> ${after} of ${ids.length} sleepers running across the crash`);
    return secs;
  } finally {
    await removeAll(c, ids);
  }
}

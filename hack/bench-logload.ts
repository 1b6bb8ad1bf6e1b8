// The log-load phase of hack/bench.ts: four containers write a 100-byte line as fast as they can
// (`yes`) through the default json-file driver while clients list containers; the figure is the
// 99th-percentile latency of `GET /containers/json`, so a daemon whose log path starves its API
// shows.

import { percentile } from './bench-load.ts';

export interface LogLoadClient {
  name: string;
  /** One Engine API call (path without the version prefix). */
  call(method: string, path: string, body?: unknown): Promise<{ status: number; body?: Buffer }>;
  log(msg: string): void;
}

export interface LogLoadSizes {
  writers: number;
  clients: number;
  ms: number;
}

const now = () => performance.now();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** 99 characters and the newline: a 100-byte line. */
const LINE = 'x'.repeat(99);


/** p99 milliseconds of container lists while `writers` containers log at full speed. */
export async function listP99UnderLogLoad(c: LogLoadClient, image: string, sizes: LogLoadSizes): Promise<number> {
  const ids: string[] = [];
  try {
    for (let i = 0; i < sizes.writers; i++) {
      const r = await c.call('POST', '/containers/create', { Image: image, Cmd: ['yes', LINE], Labels: { 'engine.bench': 'logload' }, HostConfig: { NetworkMode: 'none' } });
      if (r.status !== 201 || !r.body) throw new Error(`${c.name}: create: ${r.status} ${r.body?.toString().slice(0, 200)}`);
      ids.push((JSON.parse(r.body.toString()) as { Id: string }).Id);
    }
    for (const id of ids) {
      const r = await c.call('POST', `/containers/${id}/start`);
      if (r.status !== 204) throw new Error(`${c.name}: start: ${r.status}`);
    }
    // Let the writers reach full speed before measuring.
    await sleep(1_000);
    const latencies: number[] = [];
    const t0 = now();
    await Promise.all(Array.from({ length: sizes.clients }, async () => {
      while (now() - t0 < sizes.ms) {
        const t = now();
        const r = await c.call('GET', '/containers/json');
        latencies.push(now() - t);
        if (r.status !== 200) throw new Error(`${c.name}: list under log load: ${r.status}`);
      }
    }));
    c.log(`${c.name}: log load: ${latencies.length} lists in ${((now() - t0) / 1000).toFixed(1)} s, median ${percentile(latencies, 50).toFixed(1)} ms`);
    return percentile(latencies, 99);
  } finally {
    for (const id of ids) await c.call('DELETE', `/containers/${id}?force=1`).catch(() => undefined);
  }
}

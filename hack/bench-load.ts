// The load phase of hack/bench.ts: many containers (created, not running) and many concurrent
// clients listing and inspecting them, first as they are, then while one container ignores its
// stop signal (a stop waiting out its grace period), then while the supervisor is frozen
// (SIGSTOP) with a container running: the figures are requests per second and the
// 99th-percentile latency, so a request starved behind a slow one shows.

export interface LoadReply {
  status: number;
}

export interface LoadClient {
  name: string;
  /** One Engine API call (path without the version prefix), body discarded. */
  call(method: string, path: string, body?: unknown): Promise<LoadReply & { body?: Buffer }>;
  /** SIGSTOP the daemon's supervisor; returns what resumes it. */
  freezeSupervisor(): () => void;
  log(msg: string): void;
}

export interface LoadSizes {
  containers: number;
  clients: number;
  ms: number;
}

export interface LoadFigures {
  rate: number;
  p99: number;
  wedgedP99: number;
  frozenP99: number;
}

const LABEL = 'engine.bench.load';
const now = () => performance.now();

export function percentile(xs: number[], p: number): number {
  if (xs.length === 0) return 0;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
}

async function pool<T>(items: readonly T[], width: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(width, items.length) }, async () => {
    while (next < items.length) await fn(items[next++]);
  }));
}

async function createOne(c: LoadClient, body: unknown): Promise<string> {
  const r = await c.call('POST', '/containers/create', body);
  if (r.status !== 201 || !r.body) throw new Error(`${c.name}: create: ${r.status} ${r.body?.toString().slice(0, 200)}`);
  return (JSON.parse(r.body.toString()) as { Id: string }).Id;
}

/** `clients` loops for `ms`: one list in ten, the rest inspects of random containers. */
async function hammer(c: LoadClient, ids: string[], sizes: LoadSizes): Promise<{ count: number; latencies: number[]; seconds: number }> {
  const latencies: number[] = [];
  const t0 = now();
  await Promise.all(Array.from({ length: sizes.clients }, async (_, k) => {
    for (let i = k; now() - t0 < sizes.ms; i++) {
      const path = i % 10 === 0 ? '/containers/json?all=1' : `/containers/${ids[(i * 7919) % ids.length]}/json`;
      const t = now();
      const r = await c.call('GET', path);
      if (r.status !== 200) throw new Error(`${c.name}: GET ${path}: ${r.status}`);
      latencies.push(now() - t);
    }
  }));
  return { count: latencies.length, latencies, seconds: (now() - t0) / 1000 };
}

export async function loadFigures(c: LoadClient, image: string, sizes: LoadSizes): Promise<LoadFigures> {
  const ids: string[] = [];
  let wedged = '';
  let running = '';
  try {
    const t0 = now();
    await pool(Array.from({ length: sizes.containers }, (_, i) => i), 8, async () => {
      ids.push(await createOne(c, { Image: image, Cmd: ['true'], Labels: { [LABEL]: '1' }, HostConfig: { NetworkMode: 'none' } }));
    });
    c.log(`${c.name}: load: created ${ids.length} containers in ${((now() - t0) / 1000).toFixed(1)} s`);
    const plain = await hammer(c, ids, sizes);

    // One container that ignores SIGTERM, stopped with a grace period longer than the phase.
    wedged = await createOne(c, { Image: image, Cmd: ['sh', '-c', 'trap "" TERM; while true; do sleep 1; done'], Labels: { [LABEL]: '1' }, HostConfig: { NetworkMode: 'none' } });
    const started = await c.call('POST', `/containers/${wedged}/start`);
    if (started.status !== 204) throw new Error(`${c.name}: start: ${started.status}`);
    const graceS = Math.ceil(sizes.ms / 1000) + 5;
    const stopping = c.call('POST', `/containers/${wedged}/stop?t=${graceS}`);
    const during = await hammer(c, [...ids, wedged], sizes);
    await c.call('POST', `/containers/${wedged}/kill`).catch(() => undefined);
    await stopping.catch(() => undefined);

    // The supervisor frozen, with a running container among those inspected.
    running = await createOne(c, { Image: image, Cmd: ['sleep', '300'], Labels: { [LABEL]: '1' }, HostConfig: { NetworkMode: 'none' } });
    const runStarted = await c.call('POST', `/containers/${running}/start`);
    if (runStarted.status !== 204) throw new Error(`${c.name}: start: ${runStarted.status}`);
    const thaw = c.freezeSupervisor();
    let frozen: Awaited<ReturnType<typeof hammer>>;
    try {
      frozen = await hammer(c, [...ids, running], sizes);
    } finally {
      thaw();
    }
    return {
      rate: plain.count / plain.seconds,
      p99: percentile(plain.latencies, 99),
      wedgedP99: percentile(during.latencies, 99),
      frozenP99: percentile(frozen.latencies, 99),
    };
  } finally {
    await pool([...ids, ...(wedged ? [wedged] : []), ...(running ? [running] : [])], 8, async (id) => {
      await c.call('DELETE', `/containers/${id}?force=1`).catch(() => undefined);
    });
  }
}

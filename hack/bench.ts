// Benchmarks engined against the figures of the reference daemon (dockerd 20.10 on this machine,
// 2 cores): container run cycles, parallel throughput, list, logs, pull and memory. It starts its
// own engined (the e2e harness: private socket, roots and bridge), its own local registry, and with
// --reference also a reference dockerd side by side (own roots, socket, bridge and containerd),
// measured the same way. Everything it starts is stopped by PID and removed, also on failure.
// The two daemons are measured one after the other (neither's idle work counts against the
// other), and then the none and bridge cycles once more by turns with both live: the machine's
// speed drifts over the minutes between the two sessions, and by turns it falls on both alike.
//   node_modules/.bin/node hack/bench.ts [--reference] [--quick] [--only key,key...]
// --only measures just the named figures (the keys of METRICS, e.g. cycleNone,cyclePort,logWrite).
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { closeSync, createWriteStream, existsSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, rmdirSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { tarOf } from './images/build-busybox.ts';
import { buildTimes } from './bench-build.ts';
import { loadFigures } from './bench-load.ts';
import { listP99UnderLogLoad } from './bench-logload.ts';
import { directCycleMedian, directLogCeiling } from './bench-direct.ts';
import { crashRestart, stopStorm, CRASH_CONTAINERS, STORM_CONTAINERS, type LifecycleClient } from './bench-lifecycle.ts';
import { REPO, startDaemon, type DaemonHandle } from '../test/e2e/harness/daemon.ts';
import { DOCKER_CLI, testImages } from '../test/e2e/harness/clients.ts';
import { linkExists, reapRoot, startReaper, type RootState } from '../test/e2e/harness/reap.ts';
import { startRegistry, type TestRegistry } from '../test/e2e/registry/registry.ts';

const NODE = join(REPO, 'node_modules', '.bin', 'node');
/** Both daemons speak it; the docker CLI negotiates it with dockerd 20.10. */
const API = '/v1.41';
const MB = 1024 * 1024;
const LOG_BYTES = 50 * MB;
const LAYERS = 5;
const LAYER_BYTES = 20 * MB;
const PULL_SETTLE_MS = 3_000;

const { values: flags } = parseArgs({ options: { reference: { type: 'boolean', default: false }, quick: { type: 'boolean', default: false }, only: { type: 'string' } } });
/** The figures asked for with --only; null: all of them. */
const ONLY = flags.only ? new Set(flags.only.split(',').map((k) => k.trim()).filter(Boolean)) : null;
const wanted = (...keys: string[]) => !ONLY || keys.some((k) => ONLY.has(k));
const QUICK = !!flags.quick;
const SIZES = QUICK
  ? { warmups: 1, cycles: 5, cliRuns: 3, parallelMs: 3_000, parallelMin: 16, listContainers: 50, listMs: 2_000, logRuns: 1, pullRuns: 1, buildRuns: 1, load: { containers: 200, clients: 20, ms: 2_000 } }
  : { warmups: 3, cycles: 30, cliRuns: 10, parallelMs: 10_000, parallelMin: 64, listContainers: 200, listMs: 5_000, logRuns: 3, pullRuns: 3, buildRuns: 3, load: { containers: 1000, clients: 100, ms: 5_000 } };
const WORKERS = 16;
/** How long a freshly started daemon is left alone before its idle memory is read. */
const IDLE_SETTLE_MS = 15_000;
const LIST_CLIENTS = 4;
const LOG_WRITERS = 4;

// ---------------------------------------------------------------------------------------------
// What is measured, the reference daemon's figures and the targets.

type MetricKey = 'cycleNone' | 'cycleNonePaired' | 'cycleBridgePaired' | 'cycleDirect' | 'cycleOverDirect' | 'cycleDirectSpec' | 'cycleOverDirectSpec' | 'cycleBridge' | 'cycleUser' | 'cyclePort' | 'deleteNone' | 'deletePort' | 'cliRun' | 'parallel' | 'list' | 'logWrite' | 'logCeiling' | 'logRead' | 'logLoadP99' | 'pull' | 'buildCold' | 'buildCached' | 'loadRate' | 'loadP99' | 'loadWedgedP99' | 'loadFrozenP99' | 'stormRun' | 'stormStops' | 'crashRun' | 'idleMemory' | 'memory';

interface Metric {
  key: MetricKey;
  title: string;
  unit: string;
  /** dockerd 20.10 on this machine; null when only informational. */
  reference: number | null;
  /** ratio = ours / reference; 'le': ratio must be at most factor, 'ge': at least. */
  target: { op: 'le' | 'ge'; factor: number } | null;
  /** The live reference's figure this one is compared with, when not its own key. */
  liveKey?: MetricKey;
}

const METRICS: readonly Metric[] = [
  { key: 'cycleNone', title: 'run cycle, network none (median)', unit: 'ms', reference: 177, target: { op: 'le', factor: 0.3 } },
  { key: 'cycleNonePaired', title: 'the none cycle again, by turns with dockerd (both live, fresh daemons; median)', unit: 'ms', reference: null, target: { op: 'le', factor: 0.3 } },
  { key: 'cycleDirect', title: 'the same cycle straight on containerd, minimal OCI spec (hack/bench-direct.ts; before/after, faster)', unit: 'ms', reference: null, target: null },
  { key: 'cycleOverDirect', title: 'run cycle none / the direct cycle (ref: 1)', unit: 'x', reference: 1, target: { op: 'le', factor: 1.15 } },
  { key: 'cycleDirectSpec', title: "the direct cycle with the daemon's OCI spec (seccomp, cgroups, /sys, net+cgroup ns)", unit: 'ms', reference: null, target: null },
  { key: 'cycleOverDirectSpec', title: "run cycle none / the direct cycle with the daemon's spec (ref: 1)", unit: 'x', reference: 1, target: { op: 'le', factor: 1.15 } },
  { key: 'cycleBridge', title: 'run cycle, default bridge (median)', unit: 'ms', reference: 235, target: { op: 'le', factor: 0.3 } },
  { key: 'cycleBridgePaired', title: 'the bridge cycle again, by turns with dockerd (both live, fresh daemons; median)', unit: 'ms', reference: null, target: { op: 'le', factor: 0.3 } },
  { key: 'cycleUser', title: 'run cycle, user-defined network (median)', unit: 'ms', reference: null, target: null },
  { key: 'cyclePort', title: 'run cycle, default bridge, one published port (median)', unit: 'ms', reference: null, target: { op: 'le', factor: 0.4 } },
  { key: 'deleteNone', title: 'DELETE /containers/{id} in the none cycle (median)', unit: 'ms', reference: null, target: { op: 'le', factor: 1 } },
  { key: 'deletePort', title: 'DELETE /containers/{id} in the port cycle (median)', unit: 'ms', reference: null, target: { op: 'le', factor: 1 } },
  { key: 'cliRun', title: 'docker run --rm true, bridge (median)', unit: 'ms', reference: null, target: null },
  { key: 'parallel', title: `parallel cycles (none), ${WORKERS} workers`, unit: 'ctr/s', reference: 9.9, target: { op: 'ge', factor: 2 } },
  { key: 'list', title: `GET /containers/json?all=1, ${SIZES.listContainers} ctrs`, unit: 'req/s', reference: 129, target: { op: 'ge', factor: 5 } },
  { key: 'logWrite', title: 'logs: write 50 MB to stdout', unit: 'MB/s', reference: 74, target: { op: 'ge', factor: 2 } },
  { key: 'logCeiling', title: 'logs: the same writer through the FIFO, read and dropped (no daemon; live: dockerd\'s write)', unit: 'MB/s', reference: null, target: null, liveKey: 'logWrite' },
  { key: 'logRead', title: 'logs: read 50 MB back', unit: 'MB/s', reference: 94, target: null },
  { key: 'logLoadP99', title: `logs: p99 of GET /containers/json while ${LOG_WRITERS} containers log (yes)`, unit: 'ms', reference: null, target: { op: 'le', factor: 1 } },
  { key: 'pull', title: `pull ${LAYERS}x${LAYER_BYTES / MB} MB layers, local registry`, unit: 's', reference: 0.8, target: { op: 'le', factor: 0.7 } },
  { key: 'buildCold', title: 'docker build, 10 steps (3 RUN, 2 COPY), no cache (median)', unit: 's', reference: null, target: null },
  { key: 'buildCached', title: 'docker build, the same 10 steps from the cache (median)', unit: 's', reference: null, target: null },
  { key: 'loadRate', title: `load: ${SIZES.load.clients} clients list+inspect, ${SIZES.load.containers} ctrs`, unit: 'req/s', reference: null, target: null },
  { key: 'loadP99', title: 'load: p99 latency of those requests', unit: 'ms', reference: null, target: null },
  { key: 'loadWedgedP99', title: 'load: p99 latency while a stop waits out its grace', unit: 'ms', reference: null, target: null },
  { key: 'loadFrozenP99', title: 'load: p99 latency while the supervisor is frozen (SIGSTOP)', unit: 'ms', reference: null, target: null },
  { key: 'stormRun', title: `stop storm: docker run --rm true during ${STORM_CONTAINERS} stops`, unit: 's', reference: 0.3, target: null },
  { key: 'stormStops', title: `stop storm: all ${STORM_CONTAINERS} stops (10 s grace) answered`, unit: 's', reference: 11.2, target: null },
  { key: 'crashRun', title: `kill -9 + restart, ${CRASH_CONTAINERS} ctrs: ping -> docker run`, unit: 's', reference: null, target: { op: 'le', factor: 0.5 } },
  { key: 'idleMemory', title: `RSS daemon + supervisor, idle ${IDLE_SETTLE_MS / 1000} s after start-up`, unit: 'MiB', reference: null, target: { op: 'le', factor: 1.1 } },
  { key: 'memory', title: `RSS daemon + supervisor, ${IDLE_SETTLE_MS / 1000} s after the session (all but the crash)`, unit: 'MiB', reference: 150, target: { op: 'le', factor: 1 } },
];

type Figures = Partial<Record<MetricKey, number | Error>>;

// ---------------------------------------------------------------------------------------------
// A daemon under test, as a client sees it.

interface Target {
  name: string;
  socket: string;
  dockerHost: string;
  daemonPid(): number;
  supervisorPid(): number;
  /** kill -9 the daemon alone, start it again with the same arguments, resolve once it answers /_ping. */
  crashRestart?(): Promise<void>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const now = () => performance.now();
const log = (msg: string) => process.stderr.write(`bench: ${msg}\n`);
const errMsg = (e: unknown) => (e instanceof Error ? e.message : String(e));

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

interface Reply {
  status: number;
  body: Buffer;
}

/** One Engine API call over the unix socket, as a client makes it; the body is read fully. */
function call(t: Target, agent: Agent, method: string, path: string, body?: unknown, opts: { discard?: boolean; timeoutMs?: number } = {}): Promise<Reply & { bytes: number }> {
  const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
  return new Promise((resolve, reject) => {
    const req = request(
      {
        socketPath: t.socket,
        agent,
        method,
        path: `${API}${path}`,
        headers: { Host: 'docker', ...(payload ? { 'Content-Type': 'application/json', 'Content-Length': payload.length } : method === 'GET' ? {} : { 'Content-Length': 0 }) },
        timeout: opts.timeoutMs ?? 300_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        let bytes = 0;
        res.on('data', (c: Buffer) => {
          bytes += c.length;
          if (!opts.discard) chunks.push(c);
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks), bytes }));
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`${method} ${path}: timed out`)));
    req.on('error', reject);
    req.end(payload);
  });
}

async function expect(t: Target, agent: Agent, method: string, path: string, status: number, body?: unknown): Promise<Buffer> {
  const r = await call(t, agent, method, path, body);
  if (r.status !== status) throw new Error(`${t.name}: ${method} ${path}: ${r.status} ${r.body.toString().slice(0, 300)}`);
  return r.body;
}

const keepAlive = (maxSockets = Infinity) => new Agent({ keepAlive: true, maxSockets });

// ---------------------------------------------------------------------------------------------
// 1-3. The run cycle: create -> start -> wait -> logs -> delete of `echo hi`.

const STEPS = ['create', 'start', 'wait', 'logs', 'delete'] as const;
type StepTimes = Record<(typeof STEPS)[number], number[]>;
const emptySteps = (): StepTimes => ({ create: [], start: [], wait: [], logs: [], delete: [] });

/** `-p 127.0.0.1::80`: one published port on an ephemeral host port. */
const ONE_PORT = { ExposedPorts: { '80/tcp': {} }, PortBindings: { '80/tcp': [{ HostIp: '127.0.0.1', HostPort: '' }] } };

async function cycle(t: Target, agent: Agent, image: string, networkMode: string, steps?: StepTimes): Promise<number> {
  const t0 = now();
  const mark: number[] = [t0];
  const port = networkMode === 'default+port';
  const mode = port ? 'default' : networkMode;
  const body = { Image: image, Cmd: ['echo', 'hi'], ...(port ? { ExposedPorts: ONE_PORT.ExposedPorts } : {}), HostConfig: { NetworkMode: mode, ...(port ? { PortBindings: ONE_PORT.PortBindings } : {}) } };
  const created = JSON.parse((await expect(t, agent, 'POST', '/containers/create', 201, body)).toString()) as { Id: string };
  mark.push(now());
  const id = created.Id;
  await expect(t, agent, 'POST', `/containers/${id}/start`, 204);
  mark.push(now());
  const waited = JSON.parse((await expect(t, agent, 'POST', `/containers/${id}/wait`, 200)).toString()) as { StatusCode: number };
  mark.push(now());
  if (waited.StatusCode !== 0) throw new Error(`${t.name}: echo hi exited ${waited.StatusCode}`);
  const logs = await expect(t, agent, 'GET', `/containers/${id}/logs?stdout=1&stderr=1`, 200);
  mark.push(now());
  if (!logs.includes('hi\n')) throw new Error(`${t.name}: logs of echo hi: ${JSON.stringify(logs.toString())}`);
  await expect(t, agent, 'DELETE', `/containers/${id}`, 204);
  mark.push(now());
  if (steps) STEPS.forEach((s, i) => steps[s].push(mark[i + 1] - mark[i]));
  return mark[mark.length - 1] - t0;
}

/** The run cycle on a user-defined bridge network made for it (10.123.0.0/24), removed after. */
async function userNetworkCycle(t: Target, image: string, breakdown: Map<string, StepTimes>): Promise<number> {
  const agent = keepAlive();
  const name = 'benchnet';
  try {
    await call(t, agent, 'DELETE', `/networks/${name}`);
    await expect(t, agent, 'POST', '/networks/create', 201, { Name: name, Driver: 'bridge', IPAM: { Config: [{ Subnet: '10.123.0.0/24' }] } });
    return await cycleMedian(t, image, name, breakdown);
  } finally {
    await call(t, agent, 'DELETE', `/networks/${name}`).catch(() => undefined);
    agent.destroy();
  }
}

async function cycleMedian(t: Target, image: string, networkMode: string, breakdown: Map<string, StepTimes>): Promise<number> {
  const agent = keepAlive();
  try {
    for (let i = 0; i < SIZES.warmups; i++) await cycle(t, agent, image, networkMode);
    const steps = emptySteps();
    const times: number[] = [];
    for (let i = 0; i < SIZES.cycles; i++) times.push(await cycle(t, agent, image, networkMode, steps));
    breakdown.set(`${t.name} ${networkMode}`, steps);
    return median(times);
  } finally {
    agent.destroy();
  }
}

/** Cycles per turn in pairedCycleMedians, after one that is not counted. */
const TURN_CYCLES = 5;

/**
 * The cycle on two daemons by turns, medians of each: the machine's speed drifts over the minutes
 * between the two sessions (the same direct containerd cycle took 54-70 ms within one run), and
 * by turns the drift falls on both alike. A turn is one cycle that is not counted (what the other
 * daemon left to finish in the background falls on it) and TURN_CYCLES that are; which daemon
 * goes first alternates.
 */
async function pairedCycleMedians(a: Target, b: Target, image: string, networkMode: string): Promise<[number, number]> {
  const targets = [a, b] as const;
  const agents = [keepAlive(), keepAlive()] as const;
  try {
    for (let i = 0; i < SIZES.warmups; i++) for (const k of [0, 1] as const) await cycle(targets[k], agents[k], image, networkMode);
    const times: [number[], number[]] = [[], []];
    for (let i = 0; times[1].length < SIZES.cycles; i++) {
      for (const k of i % 2 ? ([1, 0] as const) : ([0, 1] as const)) {
        await cycle(targets[k], agents[k], image, networkMode);
        for (let c = 0; c < TURN_CYCLES; c++) times[k].push(await cycle(targets[k], agents[k], image, networkMode));
      }
    }
    return [median(times[0]), median(times[1])];
  } finally {
    for (const agent of agents) agent.destroy();
  }
}

async function parallelRate(t: Target, image: string): Promise<number> {
  const agent = keepAlive();
  let started = 0;
  let done = 0;
  const t0 = now();
  try {
    const worker = async () => {
      while (now() - t0 < SIZES.parallelMs || started < SIZES.parallelMin) {
        started++;
        await cycle(t, agent, image, 'none');
        done++;
      }
    };
    await Promise.all(Array.from({ length: WORKERS }, worker));
    return done / ((now() - t0) / 1000);
  } finally {
    agent.destroy();
  }
}

/** The docker CLI's `docker run --rm IMG true`, wall time of the whole process. */
async function cliRunMedian(t: Target, image: string, configDir: string): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < SIZES.cliRuns + 1; i++) {
    const t0 = now();
    await dockerCli(t, configDir, ['run', '--rm', image, 'true']);
    if (i > 0) times.push(now() - t0);
  }
  return median(times);
}

// ---------------------------------------------------------------------------------------------
// 4. List.

async function pool<T>(items: readonly T[], width: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(width, items.length) }, async () => {
    while (next < items.length) await fn(items[next++]);
  }));
}

async function listRate(t: Target, image: string): Promise<number> {
  const agent = keepAlive();
  const ids: string[] = [];
  try {
    const t0 = now();
    await pool(Array.from({ length: SIZES.listContainers }, (_, i) => i), 8, async () => {
      const r = JSON.parse((await expect(t, agent, 'POST', '/containers/create', 201, { Image: image, Cmd: ['true'], Labels: { 'engine.bench': 'list' }, HostConfig: { NetworkMode: 'none' } })).toString()) as { Id: string };
      ids.push(r.Id);
    });
    log(`${t.name}: created ${ids.length} containers in ${((now() - t0) / 1000).toFixed(1)} s`);
    const first = JSON.parse((await expect(t, agent, 'GET', '/containers/json?all=1', 200)).toString()) as unknown[];
    if (first.length < SIZES.listContainers) throw new Error(`${t.name}: list returned ${first.length} containers, expected >= ${SIZES.listContainers}`);
    const listAgent = keepAlive(LIST_CLIENTS);
    let count = 0;
    const t1 = now();
    try {
      await Promise.all(Array.from({ length: LIST_CLIENTS }, async () => {
        while (now() - t1 < SIZES.listMs) {
          const r = await call(t, listAgent, 'GET', '/containers/json?all=1', undefined, { discard: true });
          if (r.status !== 200) throw new Error(`${t.name}: list: ${r.status}`);
          count++;
        }
      }));
    } finally {
      listAgent.destroy();
    }
    return count / ((now() - t1) / 1000);
  } finally {
    await pool(ids, 8, async (id) => {
      await call(t, agent, 'DELETE', `/containers/${id}?force=1`).catch(() => undefined);
    });
    agent.destroy();
  }
}

// ---------------------------------------------------------------------------------------------
// 5. Logs: 50 MB written by the container, then read back through the API.

async function logRates(t: Target, image: string): Promise<{ write: number; read: number }> {
  const agent = keepAlive();
  const writes: number[] = [];
  const reads: number[] = [];
  try {
    for (let i = 0; i < SIZES.logRuns; i++) {
      const { Id: id } = JSON.parse((await expect(t, agent, 'POST', '/containers/create', 201, {
        Image: image,
        Cmd: ['sh', '-c', `head -c ${LOG_BYTES} /dev/zero | tr '\\0' x`],
        HostConfig: { NetworkMode: 'none' },
      })).toString()) as { Id: string };
      try {
        const t0 = now();
        await expect(t, agent, 'POST', `/containers/${id}/start`, 204);
        const waited = JSON.parse((await expect(t, agent, 'POST', `/containers/${id}/wait`, 200)).toString()) as { StatusCode: number };
        const t1 = now();
        if (waited.StatusCode !== 0) throw new Error(`${t.name}: log writer exited ${waited.StatusCode}`);
        const r = await call(t, agent, 'GET', `/containers/${id}/logs?stdout=1`, undefined, { discard: true });
        const t2 = now();
        if (r.status !== 200) throw new Error(`${t.name}: logs: ${r.status}`);
        // Multiplexed frames add 8 bytes each; fewer bytes than written means lost output.
        if (r.bytes < LOG_BYTES) throw new Error(`${t.name}: logs returned ${r.bytes} bytes, expected >= ${LOG_BYTES}`);
        writes.push(LOG_BYTES / MB / ((t1 - t0) / 1000));
        reads.push(LOG_BYTES / MB / ((t2 - t1) / 1000));
      } finally {
        await call(t, agent, 'DELETE', `/containers/${id}?force=1`).catch(() => undefined);
      }
    }
    return { write: median(writes), read: median(reads) };
  } finally {
    agent.destroy();
  }
}

// ---------------------------------------------------------------------------------------------
// 6. Pull of a generated image from a local registry.

/** A docker-archive of LAYERS layers, each one file of random bytes (gzip cannot shrink them). */
async function writeBigImage(path: string, ref: string): Promise<void> {
  const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
  const layers: { hex: string; tar: Buffer }[] = [];
  for (let i = 0; i < LAYERS; i++) {
    const tar = await tarOf([{ name: 'data/', type: 'directory', mode: 0o755 }, { name: `data/blob-${i}`, type: 'file', mode: 0o644, data: randomBytes(LAYER_BYTES) }]);
    layers.push({ hex: sha(tar), tar });
  }
  const created = new Date().toISOString();
  const config = Buffer.from(JSON.stringify({
    architecture: process.arch === 'x64' ? 'amd64' : process.arch,
    os: 'linux',
    created,
    config: { Env: ['PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'], Cmd: ['/bin/sh'] },
    rootfs: { type: 'layers', diff_ids: layers.map((l) => `sha256:${l.hex}`) },
    history: layers.map((_, i) => ({ created, created_by: `hack/bench.ts: random layer ${i}` })),
  }));
  const configHex = sha(config);
  const archive = await tarOf([
    { name: `${configHex}.json`, type: 'file', mode: 0o644, data: config },
    ...layers.flatMap((l) => [{ name: `${l.hex}/`, type: 'directory' as const, mode: 0o755 }, { name: `${l.hex}/layer.tar`, type: 'file' as const, mode: 0o644, data: l.tar }]),
    { name: 'manifest.json', type: 'file', mode: 0o644, data: Buffer.from(JSON.stringify([{ Config: `${configHex}.json`, RepoTags: [ref], Layers: layers.map((l) => `${l.hex}/layer.tar`) }])) },
  ]);
  await new Promise<void>((resolve, reject) => {
    const out = createWriteStream(path);
    out.on('error', reject);
    out.end(archive, () => resolve());
  });
}

async function pushBigImage(tmp: string, registry: TestRegistry): Promise<string> {
  const repo = `${registry.hostPort}/bench/big`;
  const archive = join(tmp, 'big.docker.tar');
  const t0 = now();
  await writeBigImage(archive, `${repo}:latest`);
  await run('skopeo', ['copy', '--insecure-policy', '--dest-tls-verify=false', `docker-archive:${archive}`, `docker://${repo}:latest`], {}, 600_000);
  rmSync(archive, { force: true });
  const manifest = JSON.parse(await run('skopeo', ['inspect', '--raw', '--tls-verify=false', `docker://${repo}:latest`])) as { layers: { mediaType: string; size: number }[] };
  const bytes = manifest.layers.reduce((n, l) => n + l.size, 0);
  log(`pushed ${repo}:latest in ${((now() - t0) / 1000).toFixed(1)} s: ${manifest.layers.length} layers, ${(bytes / MB).toFixed(1)} MiB as ${[...new Set(manifest.layers.map((l) => l.mediaType))].join(', ')}`);
  return repo;
}

async function pullMedian(t: Target, repo: string): Promise<number> {
  const agent = keepAlive();
  const times: number[] = [];
  const remove = async () => {
    const r = await call(t, agent, 'DELETE', `/images/${repo}:latest?force=1`);
    if (r.status !== 200 && r.status !== 404) throw new Error(`${t.name}: remove ${repo}: ${r.status} ${r.body.toString()}`);
  };
  try {
    for (let i = 0; i < SIZES.pullRuns; i++) {
      if (i > 0) {
        await remove();
        // engined answers DELETE /images before its image reconciler has removed the layers; a
        // pull in that window reuses layers that are then removed under it ("parent layer ...
        // does not exist"). Give the removal time to finish so each run is a full pull.
        await sleep(PULL_SETTLE_MS);
      }
      const t0 = now();
      const r = await call(t, agent, 'POST', `/images/create?fromImage=${encodeURIComponent(repo)}&tag=latest`);
      const secs = (now() - t0) / 1000;
      const text = r.body.toString();
      if (r.status !== 200 || /"error(Detail)?"\s*:/.test(text)) throw new Error(`${t.name}: pull ${repo}: ${r.status} ${text.slice(-500)}`);
      if (text.includes('Already exists')) throw new Error(`${t.name}: pull ${repo} run ${i + 1} reused layers of the removed image: not a full pull`);
      times.push(secs);
    }
    await remove();
    return median(times);
  } finally {
    agent.destroy();
  }
}

// ---------------------------------------------------------------------------------------------
// 7. Memory.

function rssKiB(pid: number): number {
  if (!pid) return 0;
  try {
    return Number(/^VmRSS:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
  } catch {
    return 0;
  }
}

function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const p of readdirSync('/proc')) {
    if (!/^\d+$/.test(p)) continue;
    try {
      const stat = readFileSync(`/proc/${p}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid) out.push(Number(p));
    } catch {
      // gone
    }
  }
  return out;
}

function readPid(path: string): number {
  try {
    return Number.parseInt(readFileSync(path, 'utf8').trim(), 10) || 0;
  } catch {
    return 0;
  }
}

function comm(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  } catch {
    return '';
  }
}

function memory(t: Target): { total: number; daemon: number; supervisor: number } {
  const daemon = rssKiB(t.daemonPid()) / 1024;
  const supervisor = rssKiB(t.supervisorPid()) / 1024;
  if (!daemon) throw new Error(`${t.name}: daemon pid ${t.daemonPid()} has no VmRSS`);
  if (!supervisor) throw new Error(`${t.name}: supervisor pid ${t.supervisorPid()} has no VmRSS`);
  return { total: daemon + supervisor, daemon, supervisor };
}

// ---------------------------------------------------------------------------------------------
// Processes.

function run(cmd: string, args: readonly string[], env: NodeJS.ProcessEnv = {}, timeoutMs = 120_000): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err = (err + d.toString()).slice(-4000)));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve(out);
      else reject(new Error(`${cmd} ${args.join(' ')}: exit ${code ?? signal}\n${err}`));
    });
  });
}

function dockerCli(t: Target, configDir: string, args: readonly string[], env: Record<string, string> = {}): Promise<string> {
  return run(DOCKER_CLI, args, { DOCKER_HOST: t.dockerHost, DOCKER_CONFIG: configDir, DOCKER_CLI_HINTS: 'false', DOCKER_CONTEXT: '', DOCKER_API_VERSION: '', DOCKER_TLS_VERIFY: '', DOCKER_CERT_PATH: '', ...env });
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !/^\d+ \(.*\) [ZX] /.test(stat);
  } catch {
    return false;
  }
}

async function stopPid(pid: number, timeoutMs: number): Promise<void> {
  if (!pid || !alive(pid)) return;
  try {
    process.kill(pid, 'SIGTERM');
  } catch {
    return;
  }
  const deadline = Date.now() + timeoutMs;
  while (alive(pid) && Date.now() < deadline) await sleep(100);
  if (alive(pid)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
}

function pingOk(socket: string): Promise<boolean> {
  return new Promise((resolve) => {
    const req = request({ socketPath: socket, path: '/_ping', timeout: 2000 }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode === 200));
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(false));
    req.end();
  });
}

// ---------------------------------------------------------------------------------------------
// The reference dockerd, with its own roots, socket, bridge and containerd.

interface Reference {
  /** Its crashRestart() is restart(). */
  target: Target;
  /** kill -9 dockerd alone (its containerd and containers stay), respawn it with the same argv, wait for /_ping. */
  restart(): Promise<void>;
  /** Synchronous, so it also runs from a signal handler. Safe to call twice. */
  cleanupSync(): void;
  cleanup(): Promise<void>;
}

function onPath(bin: string): string | null {
  for (const dir of (process.env.PATH ?? '').split(':')) {
    if (dir && existsSync(join(dir, bin))) return join(dir, bin);
  }
  return null;
}

/** A /24 in 10.251.0.0/16 that no interface or route uses yet. */
function freeSubnet(): string {
  const used = execFileSync('ip', ['-4', 'route', 'show'], { encoding: 'utf8' }) + execFileSync('ip', ['-4', 'addr', 'show'], { encoding: 'utf8' });
  for (let i = 0; i < 250; i++) {
    const third = 1 + Math.floor(Math.random() * 250);
    if (!used.includes(`10.251.${third}.`)) return `10.251.${third}`;
  }
  throw new Error('no free 10.251.x.0/24 subnet for the reference bridge');
}

async function startReference(dockerd: string): Promise<Reference> {
  // Under /tmp/engine-e2e-* so the harness's reaper and reapRoot (kill everything naming the root,
  // unmount, remove the bridge, remove the root) apply to it as to a test daemon.
  const root = mkdtempSync('/tmp/engine-e2e-ref-');
  const tag = root.slice(-6).replace(/[^A-Za-z0-9]/g, 'x');
  const bridge = `brf${tag}`;
  // dockerd adds no rules with --iptables=false; the prefix only keeps removeNetwork off others' chains.
  const state: RootState = { ownsNetwork: true, bridge, chainPrefix: `BENCHREF${tag}` };
  const reaperPid = startReaper(root, state, NODE);
  const keyJson = '/etc/docker/key.json';
  const hadEtcDocker = existsSync('/etc/docker');
  const hadKeyJson = existsSync(keyJson);
  let dockerdPid = 0;
  let containerdPid = 0;
  let cleaned = false;
  const cleanupSync = () => {
    if (cleaned) return;
    cleaned = true;
    for (const pid of [dockerdPid, containerdPid]) {
      try {
        if (pid && alive(pid)) process.kill(pid, 'SIGKILL');
      } catch {
        // gone
      }
    }
    reapRoot(root, state);
    if (linkExists(bridge)) execFileSync('ip', ['link', 'del', bridge], { stdio: 'ignore' });
    // dockerd 20.10 writes its trust key beside /etc/docker/daemon.json whatever --config-file says.
    if (!hadKeyJson) rmSync(keyJson, { force: true });
    if (!hadEtcDocker) {
      try {
        rmdirSync('/etc/docker');
      } catch {
        // not empty or gone
      }
    }
    try {
      if (reaperPid) process.kill(reaperPid, 'SIGKILL');
    } catch {
      // gone
    }
  };
  const cleanup = async () => {
    if (cleaned) return;
    // dockerd first (it stops its containers), then its containerd, then whatever is left.
    await stopPid(dockerdPid, 30_000);
    await stopPid(containerdPid, 15_000);
    cleanupSync();
  };
  try {
    if (linkExists(bridge)) throw new Error(`bridge ${bridge} exists already`);
    const subnet = freeSubnet();
    // dockerd refuses a non-default --bridge it did not find, and --bip with --bridge: make it here.
    execFileSync('ip', ['link', 'add', 'name', bridge, 'type', 'bridge']);
    execFileSync('ip', ['addr', 'add', `${subnet}.1/24`, 'dev', bridge]);
    execFileSync('ip', ['link', 'set', bridge, 'up']);

    // Its own containerd: without --containerd, dockerd would use the system's
    // /run/containerd/containerd.sock whenever that exists.
    const ctrd = join(root, 'ctrd');
    mkdirSync(ctrd, { recursive: true });
    const ctrdSock = join(ctrd, 'containerd.sock');
    const q = JSON.stringify;
    writeFileSync(join(ctrd, 'config.toml'), [
      'version = 2',
      `root = ${q(join(ctrd, 'root'))}`,
      `state = ${q(join(ctrd, 'state'))}`,
      'disabled_plugins = ["io.containerd.grpc.v1.cri"]',
      '[grpc]',
      `  address = ${q(ctrdSock)}`,
      '[ttrpc]',
      `  address = ${q(`${ctrdSock}.ttrpc`)}`,
      '[debug]',
      '  address = ""',
      '[metrics]',
      '  address = ""',
      '',
    ].join('\n'));
    const spawnLogged = (cmd: string, args: string[]): ChildProcess => {
      const logFd = openSync(join(root, 'daemon.log'), 'a');
      try {
        const child = spawn(cmd, args, { stdio: ['ignore', logFd, logFd] });
        child.unref();
        child.on('error', () => undefined);
        return child;
      } finally {
        closeSync(logFd);
      }
    };
    const containerd = spawnLogged('containerd', ['--config', join(ctrd, 'config.toml')]);
    containerdPid = containerd.pid ?? 0;
    // Where reapRoot looks for a supervisor pid.
    mkdirSync(join(root, 'exec', 'containerd'), { recursive: true });
    writeFileSync(join(root, 'exec', 'containerd', 'containerd.pid'), String(containerdPid));
    for (let i = 0; i < 150 && !existsSync(ctrdSock); i++) {
      if (!alive(containerdPid)) break;
      await sleep(100);
    }
    if (!existsSync(ctrdSock)) throw new Error(`reference containerd did not start:\n${readFileSync(join(root, 'daemon.log'), 'utf8').slice(-3000)}`);

    const socket = join(root, 'docker.sock');
    writeFileSync(join(root, 'daemon.json'), '{}\n');
    const dockerdArgs = [
      '-H', `unix://${socket}`,
      '--data-root', join(root, 'data'),
      '--exec-root', join(root, 'exec'),
      '-p', join(root, 'engine.pid'),
      '--config-file', join(root, 'daemon.json'),
      '--containerd', ctrdSock,
      '--containerd-namespace', `benchref${tag}`,
      '--containerd-plugins-namespace', `benchref${tag}-plugins`,
      '--bridge', bridge,
      '--iptables=false',
      '--ip-forward=false',
      '--ip-masq=false',
      '--log-level', 'info',
    ];
    const startDockerd = async (pollMs: number) => {
      dockerdPid = spawnLogged(dockerd, dockerdArgs).pid ?? 0;
      const deadline = Date.now() + 60_000;
      while (!(existsSync(socket) && (await pingOk(socket)))) {
        if (!alive(dockerdPid) || Date.now() > deadline) {
          throw new Error(`reference dockerd did not start:\n${readFileSync(join(root, 'daemon.log'), 'utf8').slice(-3000)}`);
        }
        await sleep(pollMs);
      }
    };
    await startDockerd(200);
    const restart = async () => {
      const old = dockerdPid;
      if (!old || !alive(old)) throw new Error('reference dockerd is not running');
      process.kill(old, 'SIGKILL');
      const deadline = Date.now() + 10_000;
      while (alive(old)) {
        if (Date.now() > deadline) throw new Error(`reference dockerd pid ${old} did not die on SIGKILL`);
        await sleep(20);
      }
      // Polled as often as the e2e harness polls engined's restart, so both are timed alike.
      const t0 = now();
      await startDockerd(100);
      log(`dockerd: killed pid ${old}, restarted as pid ${dockerdPid}; its first ping answered ${((now() - t0) / 1000).toFixed(2)} s after the start`);
    };
    return {
      target: { name: 'dockerd', socket, dockerHost: `unix://${socket}`, daemonPid: () => dockerdPid, supervisorPid: () => containerdPid, crashRestart: restart },
      restart,
      cleanupSync,
      cleanup,
    };
  } catch (err) {
    await cleanup();
    throw err;
  }
}

// ---------------------------------------------------------------------------------------------
// One full pass over a daemon.

/**
 * Daemons a request of which timed out (5 min): their remaining figures are skipped instead of
 * each waiting out its own timeout. Seen once with dockerd 20.10: 16 parallel starts left it
 * answering /_ping but no container request.
 */
const wedged = new Map<string, Error>();

async function measure(t: Target, tmp: string, repo: string | Error, breakdown: Map<string, StepTimes>): Promise<Figures> {
  const figures: Figures = {};
  const configDir = join(tmp, `docker-config-${t.name}`);
  mkdirSync(configDir, { recursive: true });
  /** `derived`: computed from figures already measured, so taken whatever --only says. */
  const step = async (key: MetricKey | MetricKey[], what: string, fn: () => Promise<number | number[]>, derived = false) => {
    const keys = Array.isArray(key) ? key : [key];
    if (!derived && !wanted(...keys)) return;
    const stuck = wedged.get(t.name);
    if (stuck) {
      for (const k of keys) figures[k] = stuck;
      log(`${t.name}: ${what}: skipped: ${stuck.message}`);
      return;
    }
    const t0 = now();
    try {
      const v = await fn();
      const vs = Array.isArray(v) ? v : [v];
      keys.forEach((k, i) => (figures[k] = vs[i]));
      const rss = `rss daemon ${(rssKiB(t.daemonPid()) / 1024).toFixed(0)} MiB, supervisor ${(rssKiB(t.supervisorPid()) / 1024).toFixed(0)} MiB`;
      log(`${t.name}: ${what}: ${keys.map((k, i) => `${fmt(vs[i])} ${METRICS.find((m) => m.key === k)!.unit}`).join(', ')} (${((now() - t0) / 1000).toFixed(1)} s; ${rss})`);
    } catch (err) {
      for (const k of keys) figures[k] = err instanceof Error ? err : new Error(String(err));
      log(`${t.name}: ${what}: FAILED: ${errMsg(err)}`);
      if (/timed out/.test(errMsg(err))) wedged.set(t.name, new Error(`the daemon stopped answering (${what}: ${errMsg(err)})`));
    }
  };
  const images = await testImages();
  const agent4 = keepAlive(LIST_CLIENTS);
  // Before any work: what the daemon needs to exist.
  await step('idleMemory', 'idle memory', async () => {
    await sleep(IDLE_SETTLE_MS);
    const m = memory(t);
    log(`${t.name}: idle RSS daemon ${m.daemon.toFixed(1)} MiB, supervisor ${m.supervisor.toFixed(1)} MiB`);
    return m.total;
  });
  await dockerCli(t, configDir, ['load', '-i', images.dockerArchive]);
  log(`${t.name}: loaded ${images.tag}; rss daemon ${(rssKiB(t.daemonPid()) / 1024).toFixed(0)} MiB, supervisor ${(rssKiB(t.supervisorPid()) / 1024).toFixed(0)} MiB`);
  const image = images.tag;
  await step('cycleNone', 'run cycle, network none', () => cycleMedian(t, image, 'none', breakdown));
  const deleteOf = (mode: string) => async () => {
    const steps = breakdown.get(`${t.name} ${mode}`);
    if (!steps) throw new Error(`no ${mode} cycle measured`);
    return median(steps.delete);
  };
  await step('cycleBridge', 'run cycle, default bridge', () => cycleMedian(t, image, 'default', breakdown));
  await step('cycleUser', 'run cycle, user-defined network', () => userNetworkCycle(t, image, breakdown));
  await step('cyclePort', 'run cycle, one published port', () => cycleMedian(t, image, 'default+port', breakdown));
  if (breakdown.has(`${t.name} none`)) await step('deleteNone', 'delete, none cycle', deleteOf('none'), true);
  if (breakdown.has(`${t.name} default+port`)) await step('deletePort', 'delete, port cycle', deleteOf('default+port'), true);
  await step('cliRun', 'docker run --rm true', () => cliRunMedian(t, image, configDir));
  await step('parallel', `${WORKERS} parallel workers`, () => parallelRate(t, image));
  await step('list', 'list', () => listRate(t, image));
  await step(['logWrite', 'logRead'], 'logs', async () => {
    const r = await logRates(t, image);
    return [r.write, r.read];
  });
  await step('logLoadP99', 'list under log load', () =>
    listP99UnderLogLoad({ name: t.name, call: (method, path, body) => call(t, agent4, method, path, body), log }, image, { writers: LOG_WRITERS, clients: LIST_CLIENTS, ms: SIZES.listMs }));
  await step('pull', 'pull', async () => {
    if (repo instanceof Error) throw repo;
    return pullMedian(t, repo);
  });
  await step(['buildCold', 'buildCached'], 'build', async () => {
    const r = await buildTimes({ name: t.name, cli: (args, env) => dockerCli(t, configDir, args, env), log }, tmp, image, SIZES.buildRuns);
    return [r.cold, r.cached];
  });
  await step(['loadRate', 'loadP99', 'loadWedgedP99', 'loadFrozenP99'], 'load', async () => {
    const agent = keepAlive(SIZES.load.clients);
    const freezeSupervisor = () => {
      const pid = t.supervisorPid();
      process.kill(pid, 'SIGSTOP');
      return () => process.kill(pid, 'SIGCONT');
    };
    try {
      const r = await loadFigures({ name: t.name, call: (method, path, body) => call(t, agent, method, path, body), freezeSupervisor, log }, image, SIZES.load);
      return [r.rate, r.p99, r.wedgedP99, r.frozenP99];
    } finally {
      agent.destroy();
    }
  });
  // No keep-alive: connections must not outlive the daemon killed in the crash phase.
  const lifecycleAgent = new Agent({ keepAlive: false });
  const lifecycle: LifecycleClient = {
    name: t.name,
    call: (method, path, body, opts) => call(t, lifecycleAgent, method, path, body, opts),
    cli: (args) => dockerCli(t, configDir, args),
    crashRestart: t.crashRestart && (() => t.crashRestart!()),
    log,
  };
  await step(['stormRun', 'stormStops'], 'stop storm', () => stopStorm(lifecycle, image));
  // Memory before the crash phase: afterwards it would measure a freshly restarted daemon.
  await step('memory', 'memory', async () => {
    // Once the session's last request is done, as long as the idle figure: both daemons give
    // memory back in the background (Go's scavenger; engined's reclaimer once it is quiet).
    await sleep(IDLE_SETTLE_MS);
    const m = memory(t);
    log(`${t.name}: RSS daemon ${m.daemon.toFixed(1)} MiB (pid ${t.daemonPid()}), supervisor ${m.supervisor.toFixed(1)} MiB (pid ${t.supervisorPid()})`);
    return m.total;
  });
  await step('crashRun', 'crash restart', () => crashRestart(lifecycle, image));
  lifecycleAgent.destroy();
  agent4.destroy();
  return figures;
}

// ---------------------------------------------------------------------------------------------
// The table.

function fmt(v: number | Error | undefined | null): string {
  if (v === undefined || v === null) return '-';
  if (v instanceof Error) return 'error';
  if (v >= 100) return v.toFixed(0);
  if (v >= 10) return v.toFixed(1);
  return v.toFixed(2);
}

function ratioOf(ours: number | Error | undefined, ref: number | Error | null | undefined): number | null {
  return typeof ours === 'number' && typeof ref === 'number' && ref > 0 ? ours / ref : null;
}

function verdict(m: Metric, ratio: number | null): string {
  if (!m.target || ratio === null) return '';
  return (m.target.op === 'le' ? ratio <= m.target.factor : ratio >= m.target.factor) ? 'ok' : 'MISSED';
}

function printTable(ours: Figures, live: Figures | null): void {
  const header = ['metric', 'unit', 'engined', 'ref 20.10', 'ratio', 'target', ''];
  if (live) header.push('dockerd live', 'ratio live', '');
  const rows: string[][] = [header];
  for (const m of METRICS) {
    if (ONLY && ours[m.key] === undefined) continue;
    const r = ratioOf(ours[m.key], m.reference);
    const row = [m.title, m.unit, fmt(ours[m.key]), fmt(m.reference), r === null ? '-' : `${r.toFixed(2)}x`, m.target ? `${m.target.op === 'le' ? '<=' : '>='} ${m.target.factor}x` : '-', verdict(m, r)];
    if (live) {
      const lv = live[m.liveKey ?? m.key];
      const rl = ratioOf(ours[m.key], lv);
      row.push(fmt(lv), rl === null ? '-' : `${rl.toFixed(2)}x`, verdict(m, rl));
    }
    rows.push(row);
  }
  const widths = header.map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  const line = (r: string[]) => r.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ').trimEnd();
  process.stdout.write(`\n${line(rows[0])}\n${widths.map((w) => '-'.repeat(w)).join('  ')}\n${rows.slice(1).map(line).join('\n')}\n`);
  const errors = [...Object.entries(ours).map(([k, v]) => ['engined', k, v] as const), ...Object.entries(live ?? {}).map(([k, v]) => ['dockerd', k, v] as const)]
    .filter(([, , v]) => v instanceof Error);
  for (const [who, k, v] of errors) process.stdout.write(`${who} ${k}: ${(v as Error).message.split('\n')[0]}\n`);
}

function printBreakdown(breakdown: Map<string, StepTimes>): void {
  process.stdout.write('\nrun cycle, median ms per API call:\n');
  for (const [name, steps] of breakdown) {
    process.stdout.write(`  ${name.padEnd(16)} ${STEPS.map((s) => `${s} ${median(steps[s]).toFixed(1)}`).join('  ')}\n`);
  }
}

/** engined as the benchmark drives it: its pids, and kill -9 + restart for the crash phase. */
function engineTarget(d: DaemonHandle): Target {
  return {
    name: 'engined',
    socket: d.socket,
    dockerHost: d.dockerHost,
    daemonPid: () => d.pid,
    supervisorPid: () => {
      const pid = readPid(join(d.execRoot, 'containerd', 'containerd.pid'));
      return pid || (childrenOf(d.pid).find((c) => comm(c) === 'containerd') ?? 0);
    },
    // d.pid follows the restarted daemon, so daemonPid() stays right.
    crashRestart: async () => {
      const old = d.pid;
      if (!old) throw new Error('engined is not running');
      await d.stop({ signal: 'SIGKILL', timeoutMs: 10_000 });
      const t0 = now();
      await d.restart();
      if (!d.pid) throw new Error('engined did not come back after kill -9');
      log(`engined: killed pid ${old}, restarted as pid ${d.pid}; its first ping answered ${((now() - t0) / 1000).toFixed(2)} s after the start`);
    },
  };
}

/**
 * The none and bridge cycles once more with both daemons live, by turns (pairedCycleMedians): a
 * fresh engined beside the reference at the end of its session. Into `ours` and `live`.
 */
async function pairedCycles(ours: Figures, live: Figures, ref: Target, tmp: string): Promise<void> {
  const stuck = wedged.get(ref.name);
  if (stuck) {
    log(`paired cycles: skipped: ${ref.name}: ${stuck.message}`);
    return;
  }
  const d = await startDaemon({ bridge: true, args: ['--log-level', 'info'] });
  try {
    const t = engineTarget(d);
    const images = await testImages();
    await dockerCli(t, join(tmp, `docker-config-${t.name}`), ['load', '-i', images.dockerArchive]);
    for (const [key, mode] of [['cycleNonePaired', 'none'], ['cycleBridgePaired', 'default']] as const) {
      if (!wanted(key)) continue;
      try {
        [ours[key], live[key]] = await pairedCycleMedians(t, ref, images.tag, mode);
        log(`paired ${mode} cycle: engined ${fmt(ours[key])} ms, dockerd ${fmt(live[key])} ms`);
      } catch (err) {
        ours[key] = err instanceof Error ? err : new Error(String(err));
        log(`paired ${mode} cycle: FAILED: ${errMsg(err)}`);
      }
    }
  } finally {
    await d.cleanup();
  }
}

// ---------------------------------------------------------------------------------------------

async function main(): Promise<number> {
  if (process.getuid?.() !== 0) {
    log('must run as root (it starts daemons, bridges and containers)');
    return 1;
  }
  const dockerd = flags.reference ? onPath('dockerd') : null;
  if (flags.reference && !dockerd) log('--reference: no dockerd on PATH; only the constant reference figures are shown');

  const tmp = mkdtempSync('/tmp/engine-bench-');
  let registry = null as TestRegistry | null;
  let daemon = null as DaemonHandle | null;
  let reference = null as Reference | null;
  // Ours run before the harness's own handlers (registered by startDaemon), which then stop the
  // daemon and re-raise the signal.
  const onSignal = (sig: NodeJS.Signals) => {
    reference?.cleanupSync();
    try {
      if (registry?.process.pid) process.kill(registry.process.pid, 'SIGKILL');
    } catch {
      // gone
    }
    rmSync(tmp, { recursive: true, force: true });
    if (registry) rmSync(registry.dataDir, { recursive: true, force: true });
    // Before any daemon started no harness handler follows to re-raise the signal.
    if (process.listenerCount(sig) === 0) process.kill(process.pid, sig);
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);

  try {
    log(`${QUICK ? 'quick' : 'full'} run; building the test image and starting a local registry`);
    await testImages();
    registry = await startRegistry();
    const repo = await pushBigImage(tmp, registry).catch((err: unknown) => new Error(`pushing the pull image: ${errMsg(err)}`));
    const breakdown = new Map<string, StepTimes>();

    // The direct cycle with no daemon running, before engined starts and again after it stopped:
    // the faster of the two is the floor (the machine's speed drifts over a session of minutes).
    const wantDirect = wanted('cycleDirect', 'cycleOverDirect', 'cycleDirectSpec', 'cycleOverDirectSpec', 'cycleNone');
    const directRuns: Array<{ minimal: number; daemonSpec: number }> = [];
    const directCycle = async (when: string) => {
      try {
        const r = await directCycleMedian(SIZES.cycles);
        directRuns.push(r);
        log(`direct containerd cycle ${when}: ${fmt(r.minimal)} ms (minimal spec), ${fmt(r.daemonSpec)} ms (the daemon's spec)`);
      } catch (err) {
        log(`direct containerd cycle ${when}: FAILED: ${errMsg(err)}`);
      }
    };
    if (wantDirect) await directCycle('before engined');

    // One daemon at a time, so that the other's idle work does not count against it.
    daemon = await startDaemon({ bridge: true, args: ['--log-level', 'info'] });
    const d = daemon;
    log(`engined pid ${d.pid}, socket ${d.socket}, bridge ${d.bridge} ${d.bip}`);
    const oursTarget = engineTarget(d);
    const ours = await measure(oursTarget, tmp, repo, breakdown);
    await daemon.cleanup();
    daemon = null;
    // With no daemon running: the same cycle straight on a private containerd.
    if (wantDirect) {
      await directCycle('after engined');
      if (directRuns.length) {
        ours.cycleDirect = Math.min(...directRuns.map((r) => r.minimal));
        ours.cycleDirectSpec = Math.min(...directRuns.map((r) => r.daemonSpec));
        if (typeof ours.cycleNone === 'number') {
          ours.cycleOverDirect = ours.cycleNone / ours.cycleDirect;
          ours.cycleOverDirectSpec = ours.cycleNone / ours.cycleDirectSpec;
        }
      } else ours.cycleDirect = new Error('the direct cycle failed');
    }
    if (wanted('logCeiling', 'logWrite')) {
      try {
        ours.logCeiling = await directLogCeiling(LOG_BYTES, SIZES.logRuns);
        log(`log write ceiling: ${fmt(ours.logCeiling)} MB/s`);
      } catch (err) {
        ours.logCeiling = err instanceof Error ? err : new Error(String(err));
        log(`log write ceiling: FAILED: ${errMsg(err)}`);
      }
    }

    let live: Figures | null = null;
    if (dockerd) {
      try {
        reference = await startReference(dockerd);
        log(`reference dockerd pid ${reference.target.daemonPid()}, containerd pid ${reference.target.supervisorPid()}, socket ${reference.target.socket}`);
        live = await measure(reference.target, tmp, repo, breakdown);
        if (wanted('cycleNonePaired', 'cycleBridgePaired')) await pairedCycles(ours, live, reference.target, tmp);
      } catch (err) {
        log(`reference dockerd: ${errMsg(err)}`);
      } finally {
        await reference?.cleanup();
        reference = null;
      }
    }

    process.stdout.write(`\nengine bench (${QUICK ? 'quick' : 'full'}): ${SIZES.cycles} cycles after ${SIZES.warmups} warm-ups; ${WORKERS} workers >= ${SIZES.parallelMs / 1000} s; ${SIZES.listContainers} containers listed by ${LIST_CLIENTS} clients for ${SIZES.listMs / 1000} s; logs and pull: median of ${SIZES.logRuns}/${SIZES.pullRuns}\n`);
    process.stdout.write('ratio = engined / reference; "ref 20.10" are dockerd 20.10 figures on this machine (2 cores)\n');
    printTable(ours, live);
    printBreakdown(breakdown);
    const failed = [...Object.values(ours), ...Object.values(live ?? {})].some((v) => v instanceof Error);
    return failed ? 1 : 0;
  } finally {
    await daemon?.cleanup();
    await reference?.cleanup();
    await registry?.stop();
    rmSync(tmp, { recursive: true, force: true });
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`bench: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);

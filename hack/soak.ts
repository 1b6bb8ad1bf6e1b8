// Soak (issue "Reliability", 1): does a daemon under a steady mixed workload stay flat? It starts
// its own engined with the e2e harness (temp roots, private socket and bridge, its own iptables
// chain prefix) and a local docker-registry, then runs --clients loops (default 8) until --minutes
// have passed. Each loop owns its objects (names `soak-<n>-…`) and picks weighted actions: runs,
// execs, attach (`docker run -i`), `docker logs -f`, classic builds, pulls from the registry and
// removes, network and volume churn, stats streams, events streams and plain reads. One more loop
// applies, scales and deletes a local stack. Engine API requests go over the socket with
// node:http and are timed one by one; the docker CLI runs the attach, logs -f and build actions.
//
// Every minute (every 5 minutes from --minutes 15 on, or --interval-s) it prints a row: requests/s,
// p50/p99 latency of the interval, daemon and supervisor RSS (medians of 5-second samples), the
// shims (count and RSS), daemon and supervisor open fds, mounts under the daemon's root, veths on
// its bridges, iptables rules naming its chain prefix, and the size of the store (engine.db*).
//
// Pass: no failed action (each loop owns what it touches, so no error is provoked), no uncaught
// exception in the daemon log, the last minute's p99 within 1.2× minute 2's, daemon and supervisor
// RSS and fds of every minute from 2 on within 10 % of minute 2's, and once the loops stopped and
// everything is removed, mounts, veths, rules and the daemon's fds back to what they were at the
// start (after one warm-up round of every action). Last line `soak: ok` or `soak: FAIL <why>`.
//
//   node hack/soak.ts [--minutes 10] [--clients 8] [--interval-s S] [--keep]
//
// --keep copies the daemon's root (its log, data and exec roots) to /tmp/engine-soak-<time> before
// the cleanup. Needs root, the docker CLI, docker-registry and the test images. Not in hack/test.sh.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { apiRequest, docker, testImages, type TestImages } from '../test/e2e/harness/clients.ts';
import { rssKiB } from '../test/e2e/harness/processes.ts';
import { startDaemon, type DaemonHandle } from '../test/e2e/harness/daemon.ts';
import { shimsOf, supervisorPid } from '../test/e2e/harness/supervisor-procs.ts';
import { layerOf, noise, writeImage } from '../test/e2e/registry/images.ts';
import { startRegistry, type TestRegistry } from '../test/e2e/registry/registry.ts';

const { values } = parseArgs({
  options: {
    minutes: { type: 'string', default: '10' },
    clients: { type: 'string', default: '8' },
    'interval-s': { type: 'string' },
    keep: { type: 'boolean', default: false },
  },
});
const MINUTES = Math.max(1, Math.round(Number(values.minutes)));
const CLIENTS = Math.max(1, Math.round(Number(values.clients)));
const INTERVAL_S = values['interval-s'] ? Math.max(5, Number(values['interval-s'])) : MINUTES < 15 ? 60 : 300;
const SAMPLE_MS = 5000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const log = (s: string) => process.stdout.write(`${s}\n`);

// ---------------------------------------------------------------------------------------------
// Timed Engine API requests

interface Answer {
  status: number;
  text: string;
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

/** Latencies (ms) of the timed requests, by the minute of the run they ended in. */
const latencies: number[][] = [];
let t0 = 0;
let stopping = false;
let deadline = 0;
/** Latencies of the whole run by route (ids left out), for the slowest-routes summary. */
const byRoute = new Map<string, number[]>();
function record(ms: number, method: string, path: string): void {
  if (!t0 || Date.now() > deadline) return;
  const m = Math.floor((Date.now() - t0) / 60_000);
  (latencies[m] ??= []).push(ms);
  const route = `${method} ${path.split('?')[0]!.replace(/^\/(containers|exec|images|networks|volumes|stacks)\/(?!create$|json$|prune$)[^/]+/, '/$1/{x}')}`;
  let xs = byRoute.get(route);
  if (!xs) byRoute.set(route, (xs = []));
  xs.push(ms);
}

let D = undefined as unknown as DaemonHandle;

/** One request, the whole answer read; timed unless `untimed`. Rejects on a transport error or timeout. */
async function api(method: string, path: string, body?: unknown, o: { untimed?: boolean; timeoutMs?: number; contentType?: string } = {}): Promise<Answer> {
  const data = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
  const start = performance.now();
  const a = await apiRequest(D, method, path, data, o.contentType ?? 'application/json', o.timeoutMs ?? 120_000);
  if (!o.untimed) record(performance.now() - start, method, path);
  return a;
}

/** A request that must answer one of `ok` (default 2xx); returns the answer. */
async function must(method: string, path: string, body?: unknown, ok: number[] = [], o: { timeoutMs?: number; contentType?: string; untimed?: boolean } = {}): Promise<Answer> {
  const a = await api(method, path, body, o);
  if (ok.length ? !ok.includes(a.status) : a.status < 200 || a.status > 299) throw new Error(`${method} ${path}: ${a.status} ${a.text.slice(0, 300).trim()}`);
  return a;
}

/**
 * A streaming GET, timed to its response head: `until(textSoFar)` ends it (true) or it ends after
 * `maxMs` (an error unless `endOk`). Resolves to the text read.
 */
function stream(path: string, until: (text: string) => boolean, maxMs: number, started?: () => void): Promise<string> {
  return new Promise((resolve, reject) => {
    const start = performance.now();
    let text = '';
    let done = false;
    const finish = (err?: Error) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      req.destroy();
      if (err) reject(err);
      else resolve(text);
    };
    const timer = setTimeout(() => finish(new Error(`GET ${path}: not done in ${maxMs} ms; got ${JSON.stringify(text.slice(-300))}`)), maxMs);
    const req = request({ socketPath: D.socket, method: 'GET', path, agent: false }, (res) => {
      record(performance.now() - start, 'GET', path);
      if ((res.statusCode ?? 0) !== 200) {
        res.on('data', (c: Buffer) => (text += c.toString()));
        res.on('end', () => finish(new Error(`GET ${path}: ${res.statusCode} ${text.slice(0, 300)}`)));
        return;
      }
      started?.();
      res.on('data', (c: Buffer) => {
        text += c.toString();
        if (until(text)) finish();
      });
      res.on('error', (e) => finish(e));
      res.on('end', () => (until(text) ? finish() : finish(new Error(`GET ${path}: ended early: ${JSON.stringify(text.slice(-300))}`))));
    });
    req.on('error', (e) => finish(e));
    req.end();
  });
}

/** The docker CLI; rejects on a non-zero exit. */
async function cli(args: string[], o: { input?: string; env?: Record<string, string>; timeoutMs?: number } = {}): Promise<string> {
  const r = await docker(D, args, { timeoutMs: o.timeoutMs ?? 180_000, ...(o.input === undefined ? {} : { input: o.input }), ...(o.env ? { env: o.env } : {}) });
  if (r.code !== 0) throw new Error(`docker ${args.join(' ')}: exit ${r.code}: ${(r.stderr || r.stdout).trim().slice(0, 400)}`);
  return r.stdout;
}

// ---------------------------------------------------------------------------------------------
// The workload

interface Stat {
  ok: number;
  failed: number;
  errors: string[];
}
const stats = new Map<string, Stat>();
function note(action: string, err?: unknown): void {
  const s = stats.get(action) ?? { ok: 0, failed: 0, errors: [] };
  stats.set(action, s);
  if (err === undefined) s.ok++;
  else {
    s.failed++;
    const msg = `${new Date().toISOString()} ${err instanceof Error ? err.message : String(err)}`;
    if (s.errors.length < 5) s.errors.push(msg);
    log(`  ! ${action}: ${msg}`);
  }
}

interface Ctx {
  n: number;
  imgs: TestImages;
  reg: TestRegistry;
  home: string;
  seq: number;
  ctxDir: string;
}
const name = (c: Ctx, what: string) => `soak-${c.n}-${what}-${++c.seq}`;
const create = async (cname: string, spec: Record<string, unknown>) => (await must('POST', `/containers/create?name=${cname}`, spec, [201])).body.Id as string;

async function runOnce(c: Ctx, spec: Record<string, unknown>, expect: string): Promise<void> {
  const id = await create(name(c, 'run'), { Image: c.imgs.tag, ...spec });
  try {
    await must('POST', `/containers/${id}/start`, undefined, [204]);
    const w = await must('POST', `/containers/${id}/wait`, undefined, [200], { timeoutMs: 60_000, untimed: true });
    if (w.body?.StatusCode !== 0) throw new Error(`container exited ${w.body?.StatusCode}`);
    const logs = await must('GET', `/containers/${id}/logs?stdout=1&stderr=1`);
    if (!logs.text.includes(expect)) throw new Error(`logs lack ${expect}: ${JSON.stringify(logs.text.slice(0, 200))}`);
  } finally {
    await must('DELETE', `/containers/${id}?v=1&force=1`, undefined, [204]);
  }
}

async function execIn(c: Ctx, cmd: string[], expect: string): Promise<void> {
  const e = await must('POST', `/containers/${c.home}/exec`, { Cmd: cmd, AttachStdout: true, AttachStderr: true }, [201]);
  const out = await must('POST', `/exec/${e.body.Id}/start`, { Detach: false, Tty: false }, [200, 101]);
  if (!out.text.includes(expect)) throw new Error(`exec output lacks ${expect}: ${JSON.stringify(out.text.slice(0, 200))}`);
  const ins = await must('GET', `/exec/${e.body.Id}/json`);
  if (ins.body?.ExitCode !== 0 || ins.body?.Running) throw new Error(`exec inspect: ${ins.text.slice(0, 200)}`);
}

const ACTIONS: Array<[string, number, (c: Ctx) => Promise<void>]> = [
  ['run', 3, async (c) => {
    const k = c.seq;
    await runOnce(c, { Cmd: ['sh', '-c', `echo soak-run-${k}`] }, `soak-run-${k}`);
  }],
  ['exec', 3, async (c) => {
    await execIn(c, ['echo', `soak-exec-${c.seq}`], `soak-exec-${c.seq}`);
    await execIn(c, ['sh', '-c', 'cat /proc/self/status | head -1'], 'Name:');
  }],
  ['attach', 1, async (c) => {
    const text = `soak-attach-${c.n}-${c.seq}\n`;
    const out = await cli(['run', '-i', '--rm', '--name', name(c, 'att'), c.imgs.tag, 'cat'], { input: text });
    if (out !== text) throw new Error(`attach echoed ${JSON.stringify(out.slice(0, 200))}`);
  }],
  ['logs-f', 1, async (c) => {
    const id = await create(name(c, 'logs'), { Image: c.imgs.tag, Cmd: ['sh', '-c', 'for i in 1 2 3 4 5 6 7 8 9 10; do echo line$i; sleep 0.1; done'] });
    try {
      await must('POST', `/containers/${id}/start`, undefined, [204]);
      const out = await cli(['logs', '-f', id], { timeoutMs: 60_000 });
      const lines = out.split('\n').filter(Boolean);
      if (lines.length !== 10 || lines[9] !== 'line10') throw new Error(`logs -f gave ${JSON.stringify(out.slice(0, 200))}`);
    } finally {
      await must('DELETE', `/containers/${id}?v=1&force=1`, undefined, [204]);
    }
  }],
  ['build', 1, async (c) => {
    const tag = `soak-${c.n}-build:${++c.seq}`;
    writeFileSync(join(c.ctxDir, 'f'), `soak ${c.n} ${c.seq}\n`);
    await cli(['build', '-q', '--build-arg', `N=${c.seq}`, '-t', tag, c.ctxDir], { env: { DOCKER_BUILDKIT: '0' } });
    await must('DELETE', `/images/${tag}`);
  }],
  ['pull', 1, async (c) => {
    const ref = `${c.reg.hostPort}/soak/c${c.n}`;
    const r = await must('POST', `/images/create?fromImage=${encodeURIComponent(ref)}&tag=v1`, undefined, [200], { timeoutMs: 120_000 });
    const bad = r.text.split('\n').filter((l) => /"error(Detail)?"/.test(l));
    if (bad.length) throw new Error(`pull: ${bad[0]!.slice(0, 300)}`);
    await must('DELETE', `/images/${encodeURIComponent(`${ref}:v1`)}`);
  }],
  ['network', 1, async (c) => {
    const net = name(c, 'net');
    const created = await must('POST', '/networks/create', { Name: net, Driver: 'bridge', CheckDuplicate: true }, [201]);
    try {
      await runOnce(c, { Cmd: ['sh', '-c', 'echo soak-net-$(hostname -i)'], HostConfig: { NetworkMode: net } }, 'soak-net-');
    } finally {
      await must('DELETE', `/networks/${created.body.Id}`, undefined, [204]);
    }
  }],
  ['volume', 1, async (c) => {
    const vol = name(c, 'vol');
    await must('POST', '/volumes/create', { Name: vol }, [201]);
    try {
      await runOnce(c, { Cmd: ['sh', '-c', `echo soak-vol-${c.seq} > /data/f && cat /data/f`], HostConfig: { Binds: [`${vol}:/data`] } }, 'soak-vol-');
    } finally {
      await must('DELETE', `/volumes/${vol}`, undefined, [204]);
    }
  }],
  ['stats', 2, async (c) => {
    const one = await must('GET', `/containers/${c.home}/stats?stream=false`);
    if (typeof one.body?.memory_stats !== 'object') throw new Error(`stats: ${one.text.slice(0, 200)}`);
    // Two samples of the stream (the daemon sends one a second), then the client goes away.
    await stream(`/containers/${c.home}/stats?stream=true`, (t) => t.split('\n').filter((l) => l.startsWith('{')).length >= 2, 15_000);
  }],
  ['events', 1, async (c) => {
    // A container event stream filtered by a label of this loop's own: a container run under it is
    // seen started, dying and destroyed. (Not exec events: the daemon emits none, see the docs.)
    const label = `soak.events=${c.n}-${++c.seq}`;
    const filters = encodeURIComponent(JSON.stringify({ type: ['container'], label: [label] }));
    let run: Promise<void> | undefined;
    const seen = await stream(`/events?filters=${filters}`, (t) => t.includes('"Action":"destroy"'), 60_000, () => {
      run = runOnce(c, { Cmd: ['true'], Labels: { 'soak.events': `${c.n}-${c.seq}` } }, '');
      run.catch(() => {}); // awaited below; a failed stream must not leave it unhandled
    });
    await run;
    for (const action of ['create', 'start', 'die', 'destroy']) {
      if (!seen.includes(`"Action":"${action}"`)) throw new Error(`events: no ${action} in ${JSON.stringify(seen.slice(0, 300))}`);
    }
  }],
  ['read', 3, async (c) => {
    await must('GET', '/_ping');
    await must('GET', '/version');
    await must('GET', `/containers/${c.home}/json`);
    await must('GET', `/containers/json?all=1&filters=${encodeURIComponent(JSON.stringify({ name: [`soak-${c.n}-`] }))}`);
    await must('GET', '/images/json');
    await must('GET', '/networks');
    await must('GET', '/volumes');
    if (Math.random() < 0.3) await must('GET', '/info');
  }],
];
const TOTAL_WEIGHT = ACTIONS.reduce((s, a) => s + a[1], 0);
function pick(): (typeof ACTIONS)[number] {
  let r = Math.random() * TOTAL_WEIGHT;
  for (const a of ACTIONS) if ((r -= a[1]) < 0) return a;
  return ACTIONS[0]!;
}

async function clientSetup(n: number, imgs: TestImages, reg: TestRegistry): Promise<Ctx> {
  const ctxDir = mkdtempSync(join(tmpdir(), `engine-soak-ctx-${n}-`));
  writeFileSync(join(ctxDir, 'Dockerfile'), `FROM ${imgs.tag}\nARG N\nRUN echo "$N" > /n\nCOPY f /f\n`);
  writeFileSync(join(ctxDir, 'f'), 'soak\n');
  const c: Ctx = { n, imgs, reg, home: '', seq: 0, ctxDir };
  c.home = `soak-${n}-home`;
  await create(c.home, { Image: imgs.tag, Cmd: ['sleep', '86400'], StopSignal: 'SIGKILL' });
  await must('POST', `/containers/${c.home}/start`, undefined, [204]);
  return c;
}

async function clientTeardown(c: Ctx): Promise<void> {
  try {
    await must('DELETE', `/containers/${c.home}?v=1&force=1`, undefined, [204]);
  } catch (e) {
    note('teardown', e);
  }
  rmSync(c.ctxDir, { recursive: true, force: true });
}

async function clientLoop(c: Ctx): Promise<void> {
  while (!stopping && Date.now() < deadline) {
    const [action, , fn] = pick();
    try {
      await fn(c);
      note(action);
    } catch (e) {
      note(action, e);
    }
    await sleep(100 + Math.random() * 200);
  }
}

// The stack loop: apply, scale up and down, now and then delete (with its volumes) and apply again.
const STACK = 'soak-stack';
const stackDoc = (image: string, replicas: number) => `
services:
  web:
    image: ${image}
    command: ["sleep", "86400"]
    stop_signal: SIGKILL
    deploy:
      replicas: ${replicas}
    volumes: ["data:/data"]
volumes:
  data: {}
`;

async function stackReady(replicas: number): Promise<void> {
  const end = Date.now() + 90_000;
  let last: any; // eslint-disable-line @typescript-eslint/no-explicit-any
  while (Date.now() < end) {
    last = (await must('GET', `/stacks/${STACK}`)).body;
    const ready = last?.Status?.Conditions?.find((x: { type: string }) => x.type === 'Ready');
    if (last?.Status?.ObservedGeneration === last?.Generation && ready?.status === 'True' && last?.Status?.Services?.web?.ready === replicas) return;
    await sleep(500);
  }
  throw new Error(`stack not Ready with ${replicas} replicas in 90 s: ${JSON.stringify(last?.Status)?.slice(0, 400)}`);
}

async function stackGone(): Promise<void> {
  const filters = encodeURIComponent(JSON.stringify({ label: [`com.docker.compose.project=${STACK}`] }));
  const end = Date.now() + 60_000;
  while (Date.now() < end) {
    const ctrs = (await must('GET', `/containers/json?all=1&filters=${filters}`)).body as unknown[];
    if ((await api('GET', `/stacks/${STACK}`)).status === 404 && ctrs.length === 0) return;
    await sleep(500);
  }
  throw new Error('stack containers still there 60 s after DELETE');
}

async function stackStep(imgs: TestImages, i: number): Promise<string> {
  const step = i % 5;
  if (step === 4) {
    await must('DELETE', `/stacks/${STACK}?volumes=1`, undefined, [204]);
    await stackGone();
    return 'stack-delete';
  }
  const replicas = [1, 3, 2, 1][step]!;
  await must('PUT', `/stacks/${STACK}`, stackDoc(imgs.tag, replicas), [200, 201], { contentType: 'application/yaml' });
  await stackReady(replicas);
  return step === 0 ? 'stack-apply' : 'stack-scale';
}

async function stackLoop(imgs: TestImages): Promise<void> {
  for (let i = 0; !stopping && Date.now() < deadline; i++) {
    try {
      note(await stackStep(imgs, i));
    } catch (e) {
      note('stack', e);
    }
    await sleep(500);
  }
}

async function stackTeardown(): Promise<void> {
  try {
    const a = await api('DELETE', `/stacks/${STACK}?volumes=1`);
    if (a.status !== 204 && a.status !== 404) throw new Error(`DELETE /stacks/${STACK}: ${a.status} ${a.text}`);
    await stackGone();
  } catch (e) {
    note('teardown', e);
  }
}

// ---------------------------------------------------------------------------------------------
// Samples

function fds(pid: number): number {
  try {
    return readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return 0;
  }
}
function mountsUnder(root: string): number {
  return readFileSync('/proc/self/mountinfo', 'utf8').split('\n').filter((l) => {
    const mp = l.split(' ')[4];
    return mp !== undefined && (mp === root || mp.startsWith(`${root}/`));
  }).length;
}
function chainPrefix(pid: number): string {
  try {
    const env = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
    return env.find((e) => e.startsWith('ENGINE_IPTABLES_CHAIN_PREFIX='))?.split('=')[1] ?? '';
  } catch {
    return '';
  }
}
let PREFIX = '';
function iptablesRules(): number {
  if (!PREFIX) return -1;
  try {
    return execFileSync('iptables-save', { encoding: 'utf8', timeout: 20_000, maxBuffer: 64 << 20 }).split('\n').filter((l) => l.includes(PREFIX)).length;
  } catch {
    return -1;
  }
}
/** veths whose master is the daemon's bridge or one of its networks' bridges. */
async function veths(): Promise<number> {
  const bridges = new Set([D.bridge]);
  try {
    const nets = (await api('GET', '/networks', undefined, { untimed: true })).body as Array<{ Id: string; Driver: string; Options?: Record<string, string> }>;
    for (const n of nets ?? []) {
      if (n.Driver !== 'bridge') continue;
      bridges.add(`br-${n.Id.slice(0, 12)}`);
      const named = n.Options?.['com.docker.network.bridge.name'];
      if (named) bridges.add(named);
    }
  } catch {
    // the daemon gone: its bridge is enough
  }
  try {
    const out = execFileSync('ip', ['-o', 'link', 'show', 'type', 'veth'], { encoding: 'utf8', timeout: 10_000 });
    return out.split('\n').filter((l) => bridges.has(/ master (\S+)/.exec(l)?.[1] ?? '')).length;
  } catch {
    return -1;
  }
}
function storeBytes(): number {
  let sum = 0;
  try {
    for (const f of readdirSync(D.dataRoot)) if (f.startsWith('engine.db')) sum += statSync(join(D.dataRoot, f)).size;
  } catch {
    // gone
  }
  return sum;
}

interface Procs {
  dRss: number;
  sRss: number;
  shims: number;
  shimRss: number;
  dFds: number;
  sFds: number;
}
function procs(): Procs {
  const sup = supervisorPid(D);
  const shims = shimsOf(D);
  return {
    dRss: rssKiB(D.pid),
    sRss: sup ? rssKiB(sup) : 0,
    shims: shims.length,
    shimRss: shims.reduce((s, p) => s + rssKiB(p), 0),
    dFds: fds(D.pid),
    sFds: sup ? fds(sup) : 0,
  };
}
/** Process samples (every SAMPLE_MS) by minute of the run. */
const samples: Procs[][] = [];
const median = (xs: number[]) => {
  if (!xs.length) return 0;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor((s.length - 1) / 2)]!;
};
const pct = (xs: number[], p: number) => {
  if (!xs.length) return 0;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]!;
};
function medianProcs(rows: Procs[]): Procs {
  const keys = ['dRss', 'sRss', 'shims', 'shimRss', 'dFds', 'sFds'] as const;
  return Object.fromEntries(keys.map((k) => [k, median(rows.map((r) => r[k]))])) as unknown as Procs;
}
const mb = (kb: number) => (kb / 1024).toFixed(0);

interface Host {
  mounts: number;
  veths: number;
  rules: number;
  fds: number;
}
async function hostState(): Promise<Host> {
  return { mounts: mountsUnder(D.root), veths: await veths(), rules: iptablesRules(), fds: fds(D.pid) };
}

function header(): void {
  log('');
  log(' min   req/s  p50ms  p99ms  daemonMB  supMB  shims(n/MB)  dFds  sFds  mounts  veths  rules  storeKB');
}
async function row(fromMin: number, toMin: number): Promise<void> {
  const lat = latencies.slice(fromMin, toMin).flat();
  const p = medianProcs(samples.slice(fromMin, toMin).flat());
  const h = await hostState();
  const cols = [
    String(toMin).padStart(4),
    (lat.length / ((toMin - fromMin) * 60)).toFixed(1).padStart(7),
    pct(lat, 50).toFixed(0).padStart(6),
    pct(lat, 99).toFixed(0).padStart(6),
    mb(p.dRss).padStart(9),
    mb(p.sRss).padStart(6),
    `${p.shims}/${mb(p.shimRss)}`.padStart(12),
    String(p.dFds).padStart(5),
    String(p.sFds).padStart(5),
    String(h.mounts).padStart(7),
    String(h.veths).padStart(6),
    String(h.rules).padStart(6),
    (storeBytes() / 1024).toFixed(0).padStart(8),
  ];
  log(cols.join(' '));
}

// ---------------------------------------------------------------------------------------------

async function seedRegistry(reg: TestRegistry): Promise<void> {
  const base = await layerOf({ 'soak/base.bin': noise('soak-base', 256 << 10) });
  for (let n = 0; n < CLIENTS; n++) {
    const own = await layerOf({ [`soak/c${n}.bin`]: noise(`soak-c${n}`, 64 << 10) });
    await writeImage(reg.url, `soak/c${n}`, 'v1', { layers: [base, own], architecture: 'amd64', cmd: ['sh'] });
  }
}

/** What a loop that failed mid-action may have left: removed, and counted. */
async function sweep(imgs: TestImages): Promise<string[]> {
  const left: string[] = [];
  const ctrs = (await must('GET', '/containers/json?all=1')).body as Array<{ Id: string; Names: string[] }>;
  for (const x of ctrs) {
    left.push(`container ${x.Names[0]}`);
    await api('DELETE', `/containers/${x.Id}?v=1&force=1`, undefined, { untimed: true });
  }
  const nets = (await must('GET', '/networks')).body as Array<{ Id: string; Name: string }>;
  for (const x of nets.filter((x) => x.Name.startsWith('soak-'))) {
    left.push(`network ${x.Name}`);
    await api('DELETE', `/networks/${x.Id}`, undefined, { untimed: true });
  }
  const vols = ((await must('GET', '/volumes')).body?.Volumes ?? []) as Array<{ Name: string }>;
  for (const x of vols) {
    left.push(`volume ${x.Name}`);
    await api('DELETE', `/volumes/${x.Name}`, undefined, { untimed: true });
  }
  const images = (await must('GET', '/images/json?all=1')).body as Array<{ Id: string; RepoTags: string[] | null }>;
  for (const x of images.filter((x) => !(x.RepoTags ?? []).includes(imgs.tag))) {
    left.push(`image ${(x.RepoTags ?? [])[0] ?? x.Id.slice(0, 19)}`);
    await api('DELETE', `/images/${x.Id}?force=1`, undefined, { untimed: true });
  }
  return left;
}

async function main(): Promise<string> {
  const failures: string[] = [];
  const imgs = await testImages();
  const reg = await startRegistry();
  let sampler: NodeJS.Timeout | undefined;
  const clients: Ctx[] = [];
  try {
    await seedRegistry(reg);
    D = await startDaemon({ bridge: true });
    // The harness's own SIGINT hook kills at once; here a first ^C stops the loops and cleans up.
    process.removeAllListeners('SIGINT');
    process.on('SIGINT', () => {
      if (stopping) process.exit(130);
      log('soak: interrupted, stopping the loops and cleaning up (^C again to abandon)');
      stopping = true;
      failures.push('interrupted');
    });
    PREFIX = chainPrefix(D.pid);
    await cli(['load', '-i', imgs.dockerArchive]);
    log(`soak: engined pid ${D.pid} on ${D.socket} (bridge ${D.bridge}, chains ${PREFIX}*), registry ${reg.hostPort}; ${CLIENTS} clients + a stack loop for ${MINUTES} min, a row every ${INTERVAL_S} s`);

    for (let n = 0; n < CLIENTS; n++) clients.push(await clientSetup(n, imgs, reg));
    // Warm-up: every action once per client, the stack once through, then all removed again, so
    // that "the start" is a daemon that has done everything once.
    deadline = Date.now() + 3_600_000;
    await Promise.all(clients.map(async (c) => {
      for (const [action, , fn] of ACTIONS) {
        try {
          await fn(c);
          note(`warmup-${action}`);
        } catch (e) {
          note(`warmup-${action}`, e);
        }
      }
    }));
    for (let i = 0; i < 5; i++) {
      try {
        note(`warmup-${await stackStep(imgs, i)}`);
      } catch (e) {
        note('warmup-stack', e);
      }
    }
    for (const c of clients) await clientTeardown(c);
    await sleep(3000);
    const start = await hostState();
    log(`soak: start (after warm-up, all removed): mounts ${start.mounts}, veths ${start.veths}, rules ${start.rules}, daemon fds ${start.fds}`);
    for (let n = 0; n < CLIENTS; n++) clients[n] = await clientSetup(n, imgs, reg);

    t0 = Date.now();
    deadline = t0 + MINUTES * 60_000;
    sampler = setInterval(() => {
      const m = Math.floor((Date.now() - t0) / 60_000);
      if (D.pid && m < MINUTES) (samples[m] ??= []).push(procs());
    }, SAMPLE_MS);
    const loops = [...clients.map((c) => clientLoop(c)), stackLoop(imgs)];
    header();
    const step = INTERVAL_S * 1000;
    for (let at = step, prev = 0; at <= MINUTES * 60_000 + 1 && !stopping; at += step) {
      await sleep(Math.max(0, t0 + at - Date.now()));
      if (stopping) break;
      if (!D.pid) {
        failures.push('the daemon exited');
        stopping = true;
        break;
      }
      // Rows cover whole minutes when the interval is a whole number of minutes; else the minutes begun.
      const toMin = Math.max(prev + 1, Math.min(MINUTES, Math.round(at / 60_000)));
      if (INTERVAL_S % 60 === 0) {
        await row(prev, toMin);
        prev = toMin;
      } else {
        await row(Math.floor((at - step) / 60_000), Math.min(MINUTES, Math.ceil(at / 60_000)));
      }
    }
    const ran = Math.min(MINUTES, Math.max(1, Math.floor((Date.now() - t0) / 60_000)));
    stopping = true;
    log('soak: stopping the loops');
    await Promise.all(loops);
    clearInterval(sampler);
    sampler = undefined;

    // Latency and flatness, minute 2 (the second minute: index 1) against the rest.
    {
      const base = Math.min(1, ran - 1);
      const last = ran - 1;
      const p99b = pct(latencies[base] ?? [], 99);
      const p99e = pct(latencies[last] ?? [], 99);
      log(`soak: p99 minute ${base + 1} ${p99b.toFixed(0)} ms, minute ${last + 1} ${p99e.toFixed(0)} ms`);
      if (p99e > 1.2 * p99b) failures.push(`p99 ${p99e.toFixed(0)} ms in minute ${last + 1} > 1.2× minute ${base + 1}'s ${p99b.toFixed(0)} ms`);
      const b = medianProcs(samples[base] ?? []);
      for (const [k, what, unit] of [['dRss', 'daemon RSS', ' kB'], ['sRss', 'supervisor RSS', ' kB'], ['dFds', 'daemon fds', ''], ['sFds', 'supervisor fds', '']] as const) {
        const off: string[] = [];
        for (let m = base + 1; m <= last; m++) {
          const x = medianProcs(samples[m] ?? [])[k];
          if (b[k] > 0 && Math.abs(x - b[k]) > 0.1 * b[k]) off.push(`${x}${unit} in minute ${m + 1}`);
        }
        if (off.length) failures.push(`${what} not within 10 % of minute ${base + 1}'s ${b[k]}${unit}: ${off.join(', ')}`);
      }
    }

    for (const c of clients) await clientTeardown(c);
    await stackTeardown();
    const left = await sweep(imgs);
    const errors = [...stats.values()].reduce((s, x) => s + x.failed, 0);
    if (left.length && errors === 0) failures.push(`left behind by the loops: ${left.slice(0, 8).join(', ')}${left.length > 8 ? ` (+${left.length - 8})` : ''}`);

    // Back to the start: give the daemon 60 s to settle.
    let end = await hostState();
    for (const until = Date.now() + 60_000; Date.now() < until; await sleep(2000)) {
      end = await hostState();
      if (end.mounts <= start.mounts && end.veths <= start.veths && end.rules <= start.rules && end.fds <= start.fds) break;
    }
    log(`soak: end (all removed): mounts ${end.mounts}, veths ${end.veths}, rules ${end.rules}, daemon fds ${end.fds}`);
    for (const k of ['mounts', 'veths', 'rules', 'fds'] as const) {
      if (end[k] > start[k]) failures.push(`${k} ${end[k]} after the cleanup, ${start[k]} at the start`);
    }

    log('');
    log('soak: slowest routes (p99 over the run)');
    const routes = [...byRoute.entries()].map(([r, xs]) => ({ r, n: xs.length, p50: pct(xs, 50), p99: pct(xs, 99) })).sort((a, b) => b.p99 - a.p99);
    for (const x of routes.slice(0, 8)) log(`  ${x.r.padEnd(36)} n ${String(x.n).padStart(6)}  p50 ${x.p50.toFixed(0).padStart(5)} ms  p99 ${x.p99.toFixed(0).padStart(5)} ms`);
    log('');
    log('soak: actions (ok/failed)');
    for (const [action, s] of [...stats.entries()].sort()) {
      log(`  ${action.padEnd(20)} ${String(s.ok).padStart(6)} ${String(s.failed).padStart(4)}`);
      for (const e of s.errors) log(`      ${e}`);
      if (s.failed) failures.push(`${s.failed} failed ${action} (${s.errors[0]?.replace(/^\S+ /, '').slice(0, 160)})`);
    }
    const logs = D.logs();
    const uncaught = logs.split('\n').filter((l) => /msg="(uncaught exception|unhandled rejection)/.test(l));
    if (uncaught.length) failures.push(`${uncaught.length} uncaught exception(s) in the daemon log: ${uncaught[0]!.slice(0, 200)}`);
    const errLines = logs.split('\n').filter((l) => /level=error/.test(l)).length;
    log(`soak: daemon log: ${errLines} level=error lines, ${uncaught.length} uncaught`);
  } catch (e) {
    failures.push(`harness: ${e instanceof Error ? e.message : String(e)}`);
  } finally {
    stopping = true;
    if (sampler) clearInterval(sampler);
    for (const c of clients) rmSync(c.ctxDir, { recursive: true, force: true });
    if (D) {
      if (values.keep) {
        const keep = `/tmp/engine-soak-${new Date().toISOString().replace(/[:.]/g, '-')}`;
        await D.stop({ timeoutMs: 30_000 });
        try {
          execFileSync('cp', ['-a', '--one-file-system', D.root, keep], { stdio: 'pipe', timeout: 300_000 });
          log(`soak: kept the daemon's root in ${keep}`);
        } catch (e) {
          log(`soak: could not keep the root: ${e instanceof Error ? e.message : String(e)}`);
        }
      }
      await D.cleanup();
    }
    await reg.stop();
  }
  return failures.length ? `FAIL ${failures.join('; ')}` : 'ok';
}

const verdict = await main().catch((e: unknown) => `FAIL ${e instanceof Error ? e.message : String(e)}`);
log(`soak: ${verdict}`);
process.exit(verdict === 'ok' ? 0 : 1);

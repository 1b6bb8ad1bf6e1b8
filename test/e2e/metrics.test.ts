// --metrics-addr: GET /metrics in the text format through one prom-client registry; every
// controller's controller-runtime and workqueue families move as work happens; without
// --experimental, or on a port in use, the daemon refuses to start and says why.
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { docker, dockerOk, type TestImages } from './harness/clients.ts';
import { REPO, type DaemonHandle } from './harness/daemon.ts';
import { removeAllAndCleanup, startWithImages } from './harness/setup.ts';
import { freePort } from './harness/free-port.ts';
import { sample } from './harness/metrics-text.ts';

const ENGINED = join(REPO, 'bin', 'engined');

async function engined(args: string[]): Promise<{ code: number; stderr: string }> {
  try {
    await promisify(execFile)(ENGINED, args, { timeout: 60_000 });
    return { code: 0, stderr: '' };
  } catch (err) {
    const e = err as { code?: number; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : -1, stderr: e.stderr ?? '' };
  }
}

describe('metrics', () => {
  let d: DaemonHandle;
  let imgs: TestImages;
  let port: number;
  const dk = dockerOk(() => d);
  before(async () => {
    port = await freePort();
    ({ d, imgs } = await startWithImages({ args: ['--experimental', '--metrics-addr', `127.0.0.1:${port}`] }));
  });
  after(() => removeAllAndCleanup(d));

  const scrape = async () => {
    const res = await fetch(`http://127.0.0.1:${port}/metrics`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
    return res.text();
  };

  test('GET /metrics: controller-runtime and workqueue families for every controller, and the process collectors; they move as containers run', async () => {
    const before = await scrape();
    // Every loop the manager runs, those wired once the API serves (stack, config-reload) included.
    for (const controller of ['container', 'image', 'network', 'volume', 'endpoint', 'pull', 'runtime', 'exec', 'stack', 'config-reload']) {
      assert.notEqual(sample(before, 'controller_runtime_reconcile_total', { controller, result: 'success' }), undefined, `${controller} reconcile_total`);
      assert.notEqual(sample(before, 'controller_runtime_max_concurrent_reconciles', { controller }), undefined, `${controller} max_concurrent_reconciles`);
      assert.notEqual(sample(before, 'workqueue_adds_total', { name: controller }), undefined, `${controller} workqueue_adds_total`);
      assert.notEqual(sample(before, 'workqueue_depth', { name: controller }), undefined, `${controller} workqueue_depth`);
    }
    for (const family of ['controller_runtime_reconcile_errors_total', 'controller_runtime_reconcile_time_seconds_count', 'controller_runtime_active_workers', 'workqueue_retries_total', 'workqueue_queue_duration_seconds_count', 'workqueue_work_duration_seconds_count', 'workqueue_unfinished_work_seconds', 'workqueue_longest_running_processor_seconds', 'process_cpu_seconds_total', 'process_resident_memory_bytes', 'nodejs_eventloop_lag_seconds']) {
      assert.match(before, new RegExp(`^${family}[{ ]`, 'm'), family);
    }
    const reconciled = sample(before, 'controller_runtime_reconcile_total', { controller: 'container', result: 'success' }) ?? 0;
    const adds = sample(before, 'workqueue_adds_total', { name: 'container' }) ?? 0;
    await dk('run', '--rm', imgs.tag, 'true');
    const afterRun = await scrape();
    assert.ok((sample(afterRun, 'controller_runtime_reconcile_total', { controller: 'container', result: 'success' }) ?? 0) > reconciled, 'the container reconciler ran');
    assert.ok((sample(afterRun, 'workqueue_adds_total', { name: 'container' }) ?? 0) > adds, 'its queue took adds');
    assert.ok((sample(afterRun, 'controller_runtime_reconcile_time_seconds_count', { controller: 'container' }) ?? 0) > 0);
    assert.equal((await fetch(`http://127.0.0.1:${port}/other`)).status, 404);
  });

  test('the reference families: engine info, CPUs, memory, container states as docker ps -a counts them, events, action timings that grow', async () => {
    const before = await scrape();
    assert.equal(sample(before, 'engine_daemon_engine_info', { graphdriver: 'overlay2', os_type: 'linux' }), 1);
    assert.match(before, /^engine_daemon_engine_info\{version="[^"]+",commit="[^"]*",architecture="x86_64",graphdriver="overlay2",kernel="[^"]+",os="[^"]+",os_type="linux",os_version="[^"]*",daemon_id="[^"]+"\} 1$/m);
    assert.ok((sample(before, 'engine_daemon_engine_cpus_cpus') ?? 0) >= 1);
    assert.ok((sample(before, 'engine_daemon_engine_memory_bytes') ?? 0) > 1 << 20);
    const starts = sample(before, 'engine_daemon_container_actions_seconds_count', { action: 'start' }) ?? 0;
    const events = sample(before, 'engine_daemon_events_total') ?? 0;
    await dk('run', '-d', '--name', 'm-running', imgs.tag, 'sleep', '300');
    await dk('run', '-d', '--name', 'm-paused', imgs.tag, 'sleep', '300');
    await dk('pause', 'm-paused');
    await dk('create', '--name', 'm-created', imgs.tag, 'true');
    const after = await scrape();
    assert.ok((sample(after, 'engine_daemon_container_actions_seconds_count', { action: 'start' }) ?? 0) >= starts + 2, 'two starts timed');
    assert.ok((sample(after, 'engine_daemon_container_actions_seconds_count', { action: 'create' }) ?? 0) >= 3);
    assert.ok((sample(after, 'engine_daemon_events_total') ?? 0) > events);
    assert.notEqual(sample(after, 'engine_daemon_events_subscribers_total'), undefined);
    for (const family of ['engine_daemon_network_actions_seconds_count', 'engine_daemon_image_actions_seconds_count']) assert.match(after, new RegExp(`^${family}\\{action="[a-z]+"\\} \\d+$`, 'm'), family);
    const states = (await dk('ps', '-a', '--format', '{{.State}}')).split('\n');
    const count = (pred: (s: string) => boolean) => states.filter(pred).length;
    assert.equal(sample(after, 'engine_daemon_container_states_containers', { state: 'running' }), count((s) => s === 'running' || s === 'restarting'));
    assert.equal(sample(after, 'engine_daemon_container_states_containers', { state: 'paused' }), count((s) => s === 'paused'));
    assert.equal(sample(after, 'engine_daemon_container_states_containers', { state: 'stopped' }), count((s) => !['running', 'restarting', 'paused'].includes(s)));
  });

  test('health checks and builds are counted: engine_daemon_health_checks_total, builder_builds_triggered_total, builder_builds_failed_total{reason}', async () => {
    const before = await scrape();
    const checks = sample(before, 'engine_daemon_health_checks_total') ?? -1;
    assert.ok(checks >= 0, 'engine_daemon_health_checks_total is exported');
    assert.equal(sample(before, 'engine_daemon_health_checks_failed_total'), 0);
    const triggered = sample(before, 'builder_builds_triggered_total') ?? -1;
    assert.ok(triggered >= 0, 'builder_builds_triggered_total is exported');
    for (const reason of ['build_canceled', 'dockerfile_syntax_error', 'dockerfile_empty_error', 'unknown_instruction_error', 'build_target_not_reachable_error', 'error_processing_commands_error']) {
      assert.notEqual(sample(before, 'builder_builds_failed_total', { reason }), undefined, reason);
    }
    const unknown = sample(before, 'builder_builds_failed_total', { reason: 'unknown_instruction_error' }) ?? 0;
    await dk('run', '-d', '--name', 'm-health', '--health-cmd', 'true', '--health-interval', '1s', imgs.tag, 'sleep', '300');
    const deadline = Date.now() + 30_000;
    while ((await dk('inspect', '-f', '{{.State.Health.Status}}', 'm-health')) !== 'healthy') {
      assert.ok(Date.now() < deadline, 'the container became healthy');
      await new Promise((r) => setTimeout(r, 200));
    }
    const ctx = mkdtempSync(join(tmpdir(), 'engine-metrics-build-'));
    try {
      writeFileSync(join(ctx, 'Dockerfile'), `FROM ${imgs.tag}\nFROBNICATE everything\n`);
      const r = await docker(d, ['build', ctx], { env: { DOCKER_BUILDKIT: '0' } });
      assert.notEqual(r.code, 0);
      assert.match(r.stderr, /unknown instruction: FROBNICATE/i);
    } finally {
      rmSync(ctx, { recursive: true, force: true });
    }
    const after = await scrape();
    assert.ok((sample(after, 'engine_daemon_health_checks_total') ?? 0) > checks, 'the probes were counted');
    assert.equal(sample(after, 'engine_daemon_health_checks_failed_total'), 0, 'a probe that ran is not a failed check');
    assert.equal(sample(after, 'builder_builds_triggered_total'), triggered + 1);
    assert.equal(sample(after, 'builder_builds_failed_total', { reason: 'unknown_instruction_error' }), unknown + 1);
  });

  test('promtool check metrics finds only the names the reference and prom-client define; a real Prometheus scrapes the daemon with the target up', async () => {
    const text = await scrape();
    const lint = await new Promise<{ code: number | null; out: string }>((resolve, reject) => {
      const p = spawn('promtool', ['check', 'metrics'], { stdio: ['pipe', 'pipe', 'pipe'] });
      let out = '';
      p.stdout.on('data', (c: Buffer) => (out += c.toString()));
      p.stderr.on('data', (c: Buffer) => (out += c.toString()));
      p.once('error', reject);
      p.once('close', (code) => resolve({ code, out }));
      p.stdin.end(text);
    });
    // The reference names a gauge engine_daemon_events_subscribers_total; prom-client's collectors are its own.
    const allowed = (line: string) => /^(engine_daemon_events_subscribers_total|process_|nodejs_)/.test(line);
    const complaints = lint.out.split('\n').filter((l) => l.trim() && !allowed(l.trim()));
    assert.deepEqual(complaints, [], `promtool: ${lint.out}`);

    const dir = mkdtempSync(join(tmpdir(), 'engine-prometheus-'));
    const webPort = await freePort();
    writeFileSync(join(dir, 'prometheus.yml'), `global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: engined\n    static_configs:\n      - targets: ['127.0.0.1:${port}']\n`);
    const prom = spawn('prometheus', [`--config.file=${join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${webPort}`], { stdio: 'ignore' });
    try {
      let health = '';
      const deadline = Date.now() + 60_000;
      while (health !== 'up') {
        assert.ok(Date.now() < deadline, `Prometheus saw the target up (last health: ${health || 'none'})`);
        await new Promise((r) => setTimeout(r, 500));
        const res = await fetch(`http://127.0.0.1:${webPort}/api/v1/targets`).catch(() => null);
        if (!res?.ok) continue;
        const body = (await res.json()) as { data: { activeTargets: { scrapeUrl: string; health: string; lastError: string }[] } };
        const t = body.data.activeTargets.find((x) => x.scrapeUrl === `http://127.0.0.1:${port}/metrics`);
        health = t?.health ?? '';
        assert.equal(t?.lastError ?? '', '', 'the scrape had no error');
      }
      const q = await fetch(`http://127.0.0.1:${webPort}/api/v1/query?query=${encodeURIComponent('engine_daemon_engine_cpus_cpus')}`);
      const result = ((await q.json()) as { data: { result: { value: [number, string] }[] } }).data.result;
      assert.ok(result.length === 0 || Number(result[0]!.value[1]) >= 1);
    } finally {
      const exited = new Promise((r) => prom.once('exit', r));
      prom.kill('SIGTERM');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
      if (prom.exitCode === null && prom.signalCode === null) prom.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('--metrics-addr without --experimental, a malformed address, or a port in use: the daemon does not start and says why', async () => {
    const root = mkdtempSync(join(tmpdir(), 'engine-metrics-'));
    const held: Server = createServer();
    await new Promise<void>((r) => held.listen(0, '127.0.0.1', () => r()));
    const busy = (held.address() as { port: number }).port;
    const base = (n: string) => ['-H', `unix://${join(root, `${n}.sock`)}`, '--data-root', join(root, n, 'data'), '--exec-root', join(root, n, 'exec'), '-p', join(root, `${n}.pid`), '--bridge', 'none'];
    try {
      const noExp = await engined([...base('a'), '--metrics-addr', '127.0.0.1:0']);
      assert.notEqual(noExp.code, 0);
      assert.match(noExp.stderr, /metrics-addr is only supported when experimental is enabled/);
      const bad = await engined([...base('b'), '--experimental', '--metrics-addr', 'nonsense']);
      assert.notEqual(bad.code, 0);
      assert.match(bad.stderr, /invalid metrics address "nonsense"/);
      const inUse = await engined([...base('c'), '--experimental', '--metrics-addr', `127.0.0.1:${busy}`]);
      assert.notEqual(inUse.code, 0);
      assert.match(inUse.stderr, /failed to start metrics server: .*EADDRINUSE/);
    } finally {
      held.close();
      rmSync(root, { recursive: true, force: true });
    }
  });
});

// Owns the daemon's private supervisor (containerd): writes its config, spawns it in its own
// process group (so it and the containers' shims outlive a daemon crash or ^C), adopts one left
// running by a previous daemon, restarts it with backoff if it dies, and stops it on request.
import type { ChildProcess } from 'node:child_process';
import { execa } from 'execa';
import { closeSync, fstatSync, openSync, readSync, statSync } from 'node:fs';
import { mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import type { Logger } from 'pino';
import { unavailable } from '../../lib/errors.ts';
import { EXECA_DEFAULTS } from '../sys/exec.ts';
import { isAlive } from '../sys/alive.ts';
import { createSupervisorClient } from './client.ts';

export interface SupervisorProcess {
  /** gRPC socket path. */
  address: string;
  /** Current process id (changes after a restart). */
  readonly pid: number;
  stop(): Promise<void>;
}

export interface StartSupervisorOptions {
  root: string;
  state: string;
  configDir: string;
  binary?: string;
  log: Logger;
  debug?: boolean;
  /** Keep the CRI plugin enabled (--cri-supervisor). */
  cri?: boolean;
  /** Keep the content, lease, snapshot, diff and image services (the feature supervisor-snapshotter). */
  storage?: boolean;
  /** Readiness deadline in ms (default 15 s). */
  startTimeoutMs?: number;
}

const STOP_TIMEOUT_MS = 10_000;
const MAX_BACKOFF_MS = 10_000;
const HEALTHY_AFTER_MS = 30_000;
const LOG_MAX_BYTES = 16 * 1024 * 1024;

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * Plugins engined never calls (it keeps images, layers and mounts itself and asks the supervisor only
 * for containers, tasks, events and its version), which the CRI plugin needs; with the feature
 * supervisor-snapshotter the storage ones (STORAGE_PLUGINS) stay on: layers are its snapshots. Without them the
 * supervisor holds less: no image, lease, snapshot or diff services, no metadata collector, no
 * per-task cgroup metrics (the shims report OOMs themselves), no restart monitor. The metadata store
 * still needs a content store and one snapshotter (native, the simplest), and the task service the
 * v1 runtime type.
 */
const STORAGE_PLUGINS = [
  'io.containerd.grpc.v1.images', 'io.containerd.service.v1.images-service',
  'io.containerd.grpc.v1.content',
  'io.containerd.grpc.v1.diff', 'io.containerd.service.v1.diff-service', 'io.containerd.differ.v1.walking',
  'io.containerd.grpc.v1.leases', 'io.containerd.service.v1.leases-service',
  'io.containerd.grpc.v1.snapshots', 'io.containerd.service.v1.snapshots-service', 'io.containerd.snapshotter.v1.overlayfs',
  'io.containerd.gc.v1.scheduler',
];
const UNUSED_WITHOUT_CRI = [...STORAGE_PLUGINS, 'io.containerd.monitor.v1.cgroups', 'io.containerd.internal.v1.restart'];

/** containerd's generated config (version 2). */
export function supervisorConfig(o: { root: string; state: string; address: string; debug?: boolean; cri?: boolean; storage?: boolean }): string {
  const q = (s: string) => JSON.stringify(s);
  const disabled = [
    ...(o.cri ? [] : ['io.containerd.grpc.v1.cri', ...UNUSED_WITHOUT_CRI.filter((p) => !o.storage || !STORAGE_PLUGINS.includes(p))]),
    // We mount container filesystems ourselves; these only log "skip plugin" lines.
    'io.containerd.snapshotter.v1.aufs',
    'io.containerd.snapshotter.v1.btrfs',
    'io.containerd.snapshotter.v1.zfs',
    'io.containerd.snapshotter.v1.devmapper',
  ];
  return [
    'version = 2',
    `root = ${q(o.root)}`,
    `state = ${q(o.state)}`,
    `disabled_plugins = [${disabled.map(q).join(', ')}]`,
    '',
    '[grpc]',
    `  address = ${q(o.address)}`,
    '  max_recv_message_size = 16777216',
    '  max_send_message_size = 16777216',
    '',
    '[debug]',
    `  level = ${q(o.debug ? 'debug' : 'info')}`,
    '  format = "json"',
    '',
    '[plugins]',
    '  [plugins."io.containerd.internal.v1.opt"]',
    `    path = ${q(join(o.root, 'opt'))}`,
    // A removed blob or snapshot is freed on disk at the next collection: one after every deletion
    // (the default waits for 100 changes), so an image prune shows its space at once.
    ...(o.storage ? ['  [plugins."io.containerd.gc.v1.scheduler"]', '    deletion_threshold = 1'] : []),
    '',
  ].join('\n');
}

export { isAlive };

async function cmdline(pid: number): Promise<string[]> {
  try {
    return (await readFile(`/proc/${pid}/cmdline`, 'utf8')).split('\0').filter(Boolean);
  } catch {
    return [];
  }
}

async function versionAnswers(address: string, log: Logger, timeoutMs: number): Promise<boolean> {
  // A fresh client per probe: a channel that failed to connect backs off before retrying.
  const c = createSupervisorClient({ address, namespace: 'engine', log, timeoutMs });
  try {
    await c.version();
    return true;
  } catch {
    return false;
  } finally {
    c.close();
  }
}

export async function startSupervisor(opts: StartSupervisorOptions): Promise<SupervisorProcess> {
  const log = opts.log;
  const binary = opts.binary ?? 'containerd';
  const address = join(opts.configDir, 'containerd.sock');
  const pidFile = join(opts.configDir, 'containerd.pid');
  const configFile = join(opts.configDir, 'config.toml');
  const logFile = join(opts.configDir, 'containerd.log');
  const startTimeout = opts.startTimeoutMs ?? 15_000;

  await mkdir(opts.root, { recursive: true, mode: 0o711 });
  await mkdir(opts.state, { recursive: true, mode: 0o711 });
  await mkdir(opts.configDir, { recursive: true, mode: 0o700 });
  await writeFile(configFile, supervisorConfig({ root: opts.root, state: opts.state, address, debug: opts.debug, cri: opts.cri, storage: opts.storage }), { mode: 0o600 });

  let pid = 0;
  let child: ChildProcess | null = null;
  let stopping = false;
  let startedAt = 0;
  let failures = 0;
  let pollTimer: NodeJS.Timeout | null = null;
  let restartTimer: NodeJS.Timeout | null = null;
  let restarting: Promise<void> | null = null;
  let monitoring = false;
  const tail = logTail(logFile, log, !!opts.debug);

  const readPidFile = async (): Promise<number> => {
    try {
      return Number.parseInt((await readFile(pidFile, 'utf8')).trim(), 10) || 0;
    } catch {
      return 0;
    }
  };

  /** A live containerd from a previous daemon run that serves our socket: reuse it. */
  const tryAdopt = async (): Promise<boolean> => {
    const old = await readPidFile();
    if (!old || !(await isAlive(old))) return false;
    const argv = await cmdline(old);
    if (basename(argv[0] ?? '') !== basename(binary) && !argv.includes(configFile)) return false;
    if (await versionAnswers(address, log, 2_000)) {
      pid = old;
      startedAt = Date.now();
      log.info({ pid }, 'adopted running supervisor');
      return true;
    }
    // Ours (it runs our config) but not answering: replace it.
    if (argv.includes(configFile)) {
      log.warn({ pid: old }, 'supervisor from a previous run does not answer; killing it');
      try {
        process.kill(old, 'SIGKILL');
      } catch {
        // already gone
      }
      for (let i = 0; i < 50 && (await isAlive(old)); i++) await sleep(100);
    }
    return false;
  };

  const spawnOnce = async (): Promise<void> => {
    await rm(address, { force: true });
    await rm(`${address}.ttrpc`, { force: true });
    await rotateLog(logFile);
    const fd = openSync(logFile, 'a', 0o600);
    const env = { ...process.env };
    delete env.NOTIFY_SOCKET;
    const args = ['--config', configFile, '--log-level', opts.debug ? 'debug' : 'info'];
    // `startAbort` ends it only when it misses the start-up deadline below (SIGKILL); stop()
    // signals the pid itself, as it does an adopted supervisor.
    const startAbort = new AbortController();
    let c: ReturnType<typeof spawnSupervisor>;
    try {
      c = spawnSupervisor(binary, args, fd, env, startAbort.signal);
    } finally {
      closeSync(fd);
    }
    const spawnError = new Promise<never>((_, reject) => {
      c.once('error', (err) => reject(unavailable(`cannot start supervisor ${binary}: ${err.message}`, err)));
      // A spawn that throws at once (execa answers with a pid-less stand-in that emits nothing).
      void c.then((r) => {
        if (c.pid === undefined && r.failed) {
          const msg = r.cause instanceof Error ? r.cause.message : (r.shortMessage ?? 'spawn failed');
          reject(unavailable(`cannot start supervisor ${binary}: ${msg}`, r.cause));
        }
      });
    });
    spawnError.catch(() => {});
    c.unref();
    child = c;
    pid = c.pid ?? 0;
    startedAt = Date.now();
    let exited = false;
    c.once('exit', (code, signal) => {
      exited = true;
      if (child === c) child = null;
      if (stopping || !monitoring) return;
      log.warn({ pid: c.pid, code, signal }, 'supervisor exited unexpectedly');
      scheduleRestart();
    });
    if (pid) await writeFile(pidFile, `${pid}\n`);
    const deadline = Date.now() + startTimeout;
    for (;;) {
      await Promise.race([sleep(30), spawnError]);
      if (exited) throw unavailable(`supervisor exited during start-up; see ${logFile}: ${lastLines(logFile)}`);
      if ((await stat(address).catch(() => null)) && (await versionAnswers(address, log, 1_000))) break;
      if (Date.now() > deadline) {
        startAbort.abort(); // SIGKILL, should it still run
        throw unavailable(`supervisor did not answer within ${startTimeout} ms; see ${logFile}`);
      }
    }
    log.info({ pid, address, ms: Date.now() - startedAt }, 'supervisor started');
  };

  const scheduleRestart = () => {
    if (stopping || restartTimer || restarting) return;
    if (Date.now() - startedAt > HEALTHY_AFTER_MS) failures = 0;
    const delay = Math.min(100 * 2 ** failures, MAX_BACKOFF_MS);
    failures++;
    log.warn({ delayMs: delay, attempt: failures }, 'restarting supervisor');
    restartTimer = setTimeout(() => {
      restartTimer = null;
      restarting = spawnOnce()
        .catch((err) => {
          log.error({ err }, 'supervisor restart failed');
          restarting = null;
          scheduleRestart();
        })
        .finally(() => {
          restarting = null;
        });
    }, delay);
  };

  /** An adopted process is not our child: notice its death by polling. */
  const watchAdopted = () => {
    pollTimer = setInterval(() => {
      if (stopping || child || restarting || restartTimer) return;
      void isAlive(pid).then((alive) => {
        if (!alive && !stopping && !child && !restarting && !restartTimer) {
          log.warn({ pid }, 'adopted supervisor exited');
          scheduleRestart();
        }
      });
    }, 1_000);
    pollTimer.unref();
  };

  try {
    if (!(await tryAdopt())) await spawnOnce();
  } catch (err) {
    tail.close();
    throw err;
  }
  monitoring = true;
  watchAdopted();

  return {
    address,
    get pid() {
      return pid;
    },
    async stop() {
      if (stopping) return;
      stopping = true;
      if (pollTimer) clearInterval(pollTimer);
      if (restartTimer) clearTimeout(restartTimer);
      await restarting?.catch(() => {});
      const target = pid;
      if (target && (await isAlive(target))) {
        try {
          process.kill(target, 'SIGTERM');
        } catch {
          // gone
        }
        const deadline = Date.now() + STOP_TIMEOUT_MS;
        while ((await isAlive(target)) && Date.now() < deadline) await sleep(25);
        if (await isAlive(target)) {
          log.warn({ pid: target }, 'supervisor did not stop in time; killing it');
          try {
            process.kill(target, 'SIGKILL');
          } catch {
            // gone
          }
          for (let i = 0; i < 100 && (await isAlive(target)); i++) await sleep(20);
        }
      }
      tail.close();
      await rm(pidFile, { force: true });
      log.info({ pid: target }, 'supervisor stopped');
    },
  };
}

/**
 * containerd through execa. Long-lived and meant to outlive the daemon: detached (its own process
 * group and session, so a ^C to the daemon's group does not reach it), never killed by execa when
 * the daemon exits (cleanup off; execa skips it for detached children anyway), its output written
 * straight to the log file `fd` (nothing piped or buffered here), no deadline; `signal` SIGKILLs it.
 * extendEnv off: `env` is process.env without NOTIFY_SOCKET, which execa would otherwise add back.
 * The result is not awaited for its exit (the 'exit' event is), so reject: false.
 */
function spawnSupervisor(binary: string, args: string[], fd: number, env: NodeJS.ProcessEnv, signal: AbortSignal) {
  // execa's types list only descriptors 3-9 here; at run time any descriptor number is handed to
  // spawn as it is (a "native" stdio value), as child_process.spawn took it.
  const logFd = fd as 3;
  return execa(binary, args, {
    ...EXECA_DEFAULTS,
    detached: true,
    stdio: ['ignore', logFd, logFd],
    env,
    extendEnv: false,
    buffer: false,
    cancelSignal: signal,
    killSignal: 'SIGKILL',
    reject: false,
  });
}

async function rotateLog(file: string): Promise<void> {
  const st = await stat(file).catch(() => null);
  if (st && st.size > LOG_MAX_BYTES) await rm(file, { force: true });
}

function lastLines(file: string, max = 2048): string {
  try {
    const fd = openSync(file, 'r');
    try {
      const size = fstatSync(fd).size;
      const len = Math.min(size, max);
      const buf = Buffer.alloc(len);
      readSync(fd, buf, 0, len, size - len);
      return buf.toString('utf8').trim().split('\n').slice(-3).join(' | ');
    } finally {
      closeSync(fd);
    }
  } catch {
    return '';
  }
}

/** Forward containerd's log file into ours (warnings and errors; everything with debug). */
function logTail(file: string, log: Logger, debug: boolean): { close(): void } {
  let offset = 0;
  try {
    offset = statSync(file).size;
  } catch {
    // not written yet
  }
  let rest = '';
  const poll = () => {
    try {
      const fd = openSync(file, 'r');
      try {
        const size = fstatSync(fd).size;
        if (size < offset) offset = 0;
        const len = Math.min(size - offset, 1024 * 1024);
        if (len <= 0) return;
        const buf = Buffer.alloc(len);
        readSync(fd, buf, 0, len, offset);
        offset += len;
        const lines = (rest + buf.toString('utf8')).split('\n');
        rest = lines.pop() ?? '';
        for (const line of lines) forward(line);
      } finally {
        closeSync(fd);
      }
    } catch {
      // no log yet
    }
  };
  const forward = (line: string) => {
    if (!line.trim()) return;
    let level = 'info';
    let msg = line;
    let fields: Record<string, unknown> = {};
    if (line.startsWith('{')) {
      try {
        const j = JSON.parse(line) as Record<string, unknown>;
        level = String(j.level ?? 'info');
        msg = String(j.msg ?? '');
        const { level: _l, msg: _m, time: _t, ...others } = j;
        fields = others;
      } catch {
        // not JSON (shim lines are logfmt)
      }
    } else if (/level=(error|fatal|panic)/.test(line)) level = 'error';
    else if (/level=warn/.test(line)) level = 'warning';
    const l = log.child({ source: 'containerd' });
    if (level === 'error' || level === 'fatal' || level === 'panic') l.error(fields, msg);
    else if (level === 'warning' || level === 'warn') l.warn(fields, msg);
    else if (debug) l.debug(fields, msg);
  };
  poll();
  const timer = setInterval(poll, 1_000);
  timer.unref();
  return {
    close() {
      clearInterval(timer);
      poll();
    },
  };
}

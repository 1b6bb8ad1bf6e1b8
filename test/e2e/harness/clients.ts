// Real clients pointed at a test daemon: the docker CLI, dockerode, docker-py, and the test images.
import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import Docker from 'dockerode';
import { buildBusyboxImages, type TestImages } from '../../../hack/images/build-busybox.ts';
import { ociManifest } from '../../../lib/image-target.ts';
import type { DaemonHandle } from './daemon.ts';

export const DOCKER_CLI = '/usr/local/bin/docker';

/** A raw Engine API request over the daemon's socket (what no SDK sends: the stack extension). */
export interface ApiAnswer {
  status: number;
  text: string;
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

/** One request on the daemon's socket, the whole answer read; with `timeoutMs`, one not answered by then fails. */
export function apiRequest(d: DaemonHandle, method: string, path: string, body?: string, contentType = 'application/json', timeoutMs?: number): Promise<ApiAnswer> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = body === undefined ? {} : { 'Content-Type': contentType, 'Content-Length': String(Buffer.byteLength(body)) };
    const req = request({ socketPath: d.socket, method, path, headers }, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => {
        let parsed: unknown;
        try {
          parsed = text ? JSON.parse(text) : undefined;
        } catch {
          parsed = undefined;
        }
        resolve({ status: res.statusCode ?? 0, text, body: parsed });
      });
    });
    if (timeoutMs) req.setTimeout(timeoutMs, () => req.destroy(new Error(`${method} ${path}: no answer in ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end(body);
  });
}
/** Debian's python3, where python3-docker is installed (not a pyenv or venv python on PATH). */
export const PYTHON = '/usr/bin/python3';

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

let dockerConfigDir: string | null = null;
const CONFIG_PREFIX = '/tmp/engine-e2e-dockercfg-';
/**
 * An empty DOCKER_CONFIG per test process: no user contexts, credentials or plugins leak in.
 * Named by pid so that one left by a killed process is removed by the next.
 */
function dockerConfig(): string {
  if (dockerConfigDir) return dockerConfigDir;
  for (const name of readdirSync('/tmp')) {
    const pid = Number(/^engine-e2e-dockercfg-(\d+)$/.exec(name)?.[1]);
    if (!pid || pid === process.pid) continue;
    let alive = true;
    try {
      process.kill(pid, 0);
    } catch {
      alive = false;
    }
    if (!alive) rmSync(`/tmp/${name}`, { recursive: true, force: true });
  }
  const dir = `${CONFIG_PREFIX}${process.pid}`;
  mkdirSync(dir, { recursive: true });
  dockerConfigDir = dir;
  process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function clientEnv(d: DaemonHandle, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, DOCKER_HOST: d.dockerHost, DOCKER_CONFIG: dockerConfig(), DOCKER_CLI_HINTS: 'false', ...extra };
  for (const k of ['DOCKER_CONTEXT', 'DOCKER_TLS_VERIFY', 'DOCKER_CERT_PATH', 'DOCKER_API_VERSION']) if (!(k in extra)) delete env[k];
  return env;
}

interface SpawnOptions {
  env: NodeJS.ProcessEnv;
  input?: string | Buffer;
  timeoutMs: number;
}

/** Runs a command to its end (killed after `timeoutMs`, default 60 s), with `input` on its stdin. */
export function runProcess(cmd: string, args: readonly string[], o: Partial<SpawnOptions> = {}): Promise<RunResult> {
  const opts: SpawnOptions = { env: process.env, timeoutMs: 60_000, ...o };
  return new Promise((resolveRun, rejectRun) => {
    const child = spawn(cmd, args, { env: opts.env, stdio: ['pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (c: Buffer) => out.push(c));
    child.stderr.on('data', (c: Buffer) => err.push(c));
    const timer = setTimeout(() => {
      err.push(Buffer.from(`\n[harness] ${cmd} timed out after ${opts.timeoutMs} ms, killed\n`));
      child.kill('SIGKILL');
    }, opts.timeoutMs);
    child.on('error', (e) => {
      clearTimeout(timer);
      rejectRun(e);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolveRun({ code: code ?? (signal ? 128 : 1), stdout: Buffer.concat(out).toString(), stderr: Buffer.concat(err).toString() });
    });
    child.stdin.on('error', () => {});
    child.stdin.end(opts.input ?? '');
  });
}

export interface DockerOptions {
  input?: string | Buffer;
  timeoutMs?: number;
  env?: Record<string, string>;
}

/** Runs the stock docker CLI against the daemon. Never rejects on a non-zero exit. */
export function docker(d: DaemonHandle, args: readonly string[], opts: DockerOptions = {}): Promise<RunResult> {
  return runProcess(DOCKER_CLI, args, { env: clientEnv(d, opts.env), input: opts.input, timeoutMs: opts.timeoutMs ?? 120_000 });
}

/** A dockerode client on the daemon's socket. */
/** `dk(...args)` for one daemon: runs the docker CLI, asserts exit 0, returns trimmed stdout. */
export function dockerOk(getDaemon: () => DaemonHandle): (...args: string[]) => Promise<string> {
  return async (...args) => {
    const r = await docker(getDaemon(), args);
    if (r.code !== 0) throw new Error(`docker ${args.join(' ')}: exit ${r.code}: ${r.stderr}`);
    return r.stdout.trim();
  };
}

export function dockerode(d: DaemonHandle): Docker {
  return new Docker({ socketPath: d.socket });
}

function dedent(s: string): string {
  const lines = s.replace(/^\n/, '').split('\n');
  const indents = lines.filter((l) => l.trim()).map((l) => /^ */.exec(l)![0].length);
  const cut = indents.length ? Math.min(...indents) : 0;
  return lines.map((l) => l.slice(cut)).join('\n');
}

/**
 * Runs a Python snippet with docker-py. In scope: `docker`, `json`, `api` (docker.APIClient) and
 * `client` (docker.DockerClient), both on the daemon's socket. Resolves to stdout; rejects with
 * the exit code and stderr when the script fails.
 */
export async function pythonDocker(d: DaemonHandle, script: string, opts: { timeoutMs?: number } = {}): Promise<string> {
  const prelude = [
    'import json, sys',
    'import docker',
    `api = docker.APIClient(base_url=${JSON.stringify(d.dockerHost)}, version='auto', timeout=120)`,
    `client = docker.DockerClient(base_url=${JSON.stringify(d.dockerHost)}, version='auto', timeout=120)`,
    '',
  ].join('\n');
  const r = await runProcess(PYTHON, ['-'], { env: clientEnv(d), input: prelude + dedent(script) + '\n', timeoutMs: opts.timeoutMs ?? 120_000 });
  if (r.code !== 0) throw new Error(`python docker script exited ${r.code}:\n${r.stderr}\nstdout:\n${r.stdout}`);
  return r.stdout;
}

let images: Promise<TestImages> | null = null;
/**
 * The busybox test images (built once, cached on disk across runs). `id` is the Id a daemon shows
 * for it: its config digest, or with the supervisor's snapshotter (ENGINE_E2E_STORAGE=snapshotter)
 * the digest of the OCI manifest of its config and layer, as that daemon names images.
 */
export function testImages(): Promise<TestImages> {
  images ??= buildBusyboxImages()
    .then((imgs) => (process.env.ENGINE_E2E_STORAGE === 'snapshotter' ? { ...imgs, id: targetIdOf(imgs.dockerArchive) } : imgs))
    .catch((err: unknown) => {
      images = null;
      throw err;
    });
  return images;
}

/** The target digest (lib/image-target.ts) of the image in a docker-archive tarball: its config and plain-tar layers. */
function targetIdOf(archive: string): string {
  const read = (name: string) => execFileSync('tar', ['-xOf', archive, name], { maxBuffer: 256 << 20 });
  const sha = (b: Buffer | string) => `sha256:${createHash('sha256').update(b).digest('hex')}`;
  const m = JSON.parse(read('manifest.json').toString())[0] as { Config: string; Layers: string[] };
  const raw = read(m.Config).toString();
  const layers = m.Layers.map((l) => read(l)).map((b) => ({ media: 'none' as const, digest: sha(b), size: b.length }));
  return sha(ociManifest(raw, sha(raw), layers));
}

export type { TestImages };

/** Run a docker command under a pseudo-terminal, feeding `input` slowly; returns the transcript. */
export async function dockerTty(d: DaemonHandle, args: string[], input: string, timeoutMs = 20_000): Promise<{ code: number | null; out: string }> {
  const cmd = ['docker', ...args].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ');
  const child = spawn('script', ['-qfec', cmd, '/dev/null'], {
    env: { ...process.env, DOCKER_HOST: d.dockerHost, TERM: 'xterm' },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (c) => (out += c));
  child.stderr.on('data', (c) => (out += c));
  // Listen before feeding input: the command may be done before the last line is written.
  const closed = new Promise<number | null>((r) => child.on('close', r));
  child.stdin.on('error', () => {});
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  await new Promise((r) => setTimeout(r, 1500));
  for (const line of input.split('\n').filter(Boolean)) {
    child.stdin.write(line + '\r');
    await new Promise((r) => setTimeout(r, 400));
  }
  const code = await closed;
  clearTimeout(timer);
  return { code, out };
}

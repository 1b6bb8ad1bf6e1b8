// Shared fixtures for the supervisor tests: a busybox rootfs, a minimal OCI spec, a quiet logger,
// clean-up of the shims a test's private containerd started, and fake gRPC supervisors (grpc-js).
import { copyFile, mkdir, readdir, readFile, symlink } from 'node:fs/promises';
import { execFileSync } from 'node:child_process';
import * as grpc from '@grpc/grpc-js';
import { join } from 'node:path';
import pino from 'pino';
import type { Logger } from 'pino';

export const NS = 'enginetest';

export function testLogger(): Logger {
  return pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });
}

export function haveBinaries(): string | null {
  for (const b of ['containerd', 'containerd-shim-runc-v2', 'runc', 'busybox']) {
    try {
      execFileSync('sh', ['-c', `command -v ${b}`], { stdio: 'ignore' });
    } catch {
      return `${b} not installed`;
    }
  }
  if (process.getuid?.() !== 0) return 'needs root';
  return null;
}

/** A tiny rootfs: static busybox plus the applets the tests call. */
export async function makeRootfs(dir: string): Promise<string> {
  const rootfs = join(dir, 'rootfs');
  for (const d of ['bin', 'proc', 'dev', 'sys', 'tmp', 'etc']) await mkdir(join(rootfs, d), { recursive: true });
  const busybox = execFileSync('sh', ['-c', 'command -v busybox'], { encoding: 'utf8' }).trim();
  await copyFile(busybox, join(rootfs, 'bin', 'busybox'));
  for (const applet of ['sh', 'echo', 'sleep', 'cat', 'stty', 'true']) await symlink('busybox', join(rootfs, 'bin', applet));
  return rootfs;
}

export function processSpec(args: string[], o: { terminal?: boolean } = {}): Record<string, unknown> {
  return {
    terminal: !!o.terminal,
    ...(o.terminal ? { consoleSize: { height: 24, width: 80 } } : {}),
    user: { uid: 0, gid: 0 },
    args,
    env: ['PATH=/bin', 'TERM=xterm'],
    cwd: '/',
    capabilities: {
      bounding: ['CAP_KILL', 'CAP_SETUID', 'CAP_SETGID'],
      effective: ['CAP_KILL', 'CAP_SETUID', 'CAP_SETGID'],
      permitted: ['CAP_KILL', 'CAP_SETUID', 'CAP_SETGID'],
    },
    noNewPrivileges: true,
  };
}

export function ociSpec(rootfs: string, args: string[], o: { terminal?: boolean } = {}): Record<string, unknown> {
  return {
    ociVersion: '1.0.2',
    process: processSpec(args, o),
    root: { path: rootfs, readonly: false },
    hostname: 'enginetest',
    mounts: [
      { destination: '/proc', type: 'proc', source: 'proc', options: ['nosuid', 'noexec', 'nodev'] },
      { destination: '/dev', type: 'tmpfs', source: 'tmpfs', options: ['nosuid', 'strictatime', 'mode=755', 'size=65536k'] },
      { destination: '/dev/pts', type: 'devpts', source: 'devpts', options: ['nosuid', 'noexec', 'newinstance', 'ptmxmode=0666', 'mode=0620'] },
    ],
    linux: {
      namespaces: [{ type: 'pid' }, { type: 'ipc' }, { type: 'uts' }, { type: 'mount' }],
      maskedPaths: ['/proc/kcore', '/proc/keys'],
      readonlyPaths: ['/proc/sys', '/proc/sysrq-trigger'],
    },
  };
}

/** PIDs of shims started by the containerd serving `address` (their cmdline names it). */
export async function shimsOf(address: string): Promise<number[]> {
  const out: number[] = [];
  for (const e of await readdir('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const argv = (await readFile(`/proc/${e}/cmdline`, 'utf8')).split('\0');
      if (argv[0]?.includes('containerd-shim') && argv.includes(address)) out.push(Number(e));
    } catch {
      // exited
    }
  }
  return out;
}

/** Kill, by PID, shims our own containerd left behind (a failed test), so none outlive the run. */
export async function killShims(address: string): Promise<number> {
  const pids = await shimsOf(address);
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
  return pids.length;
}

export function collect(): { chunks: Array<[string, Buffer]>; text(stream?: string): string; fn: (s: 'stdout' | 'stderr', c: Buffer) => void } {
  const chunks: Array<[string, Buffer]> = [];
  return {
    chunks,
    fn: (s, c) => {
      chunks.push([s, c]);
    },
    text: (stream) => Buffer.concat(chunks.filter(([s]) => !stream || s === stream).map(([, c]) => c)).toString(),
  };
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export async function until<T>(fn: () => T | Promise<T>, timeoutMs = 5000, stepMs = 20): Promise<NonNullable<T>> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error('timed out waiting for condition');
    await sleep(stepMs);
  }
}

/** A grpc-js server with the given services (generated definitions and handlers), listening on a unix socket. */
export async function fakeGrpcServer(socket: string, services: Array<[grpc.ServiceDefinition, grpc.UntypedServiceImplementation]>): Promise<grpc.Server> {
  const server = new grpc.Server();
  for (const [def, impl] of services) server.addService(def, impl);
  await new Promise<void>((resolve, reject) => server.bindAsync(`unix://${socket}`, grpc.ServerCredentials.createInsecure(), (err) => (err ? reject(err) : resolve())));
  return server;
}

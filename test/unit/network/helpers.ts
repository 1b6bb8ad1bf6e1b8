// Shared bits for the network tests: a unique suffix, shell helpers, a "container" (a process in
// a fresh network namespace), and best-effort cleanup of what a test made.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readlink } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { execa } from 'execa';
import pino from 'pino';

export const silentLog = pino({ level: 'silent' });

export function suffix(): string {
  return randomBytes(2).toString('hex');
}

/** Run a command; returns stdout, or throws with stderr. */
export async function sh(file: string, args: string[]): Promise<string> {
  const r = await execa(file, args, { reject: false });
  if (r.exitCode !== 0) throw new Error(`${file} ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

export async function ok(file: string, args: string[]): Promise<boolean> {
  return (await execa(file, args, { reject: false })).exitCode === 0;
}

export async function quiet(file: string, args: string[]): Promise<void> {
  await execa(file, args, { reject: false });
}

export interface Sleeper {
  pid: number;
  child: ChildProcess;
  kill(): void;
}

/** A process alone in a new network namespace: what a container looks like to the network code. */
export async function startSleeper(): Promise<Sleeper> {
  const child = spawn('unshare', ['-n', 'sleep', '60'], { stdio: 'ignore' });
  const pid = child.pid!;
  const own = await readlink('/proc/self/ns/net');
  for (let i = 0; i < 200; i++) {
    const ns = await readlink(`/proc/${pid}/ns/net`).catch(() => own);
    if (ns !== own) break;
    await sleep(5);
  }
  return {
    pid,
    child,
    kill: () => {
      try {
        child.kill('SIGKILL');
      } catch {
        /* already gone */
      }
    },
  };
}

/** Remove every rule that mentions one of `needles` from both tables, then our chains. Last-resort cleanup. */
export async function purgeIptables(needles: string[], chains: string[], bin = 'iptables'): Promise<void> {
  for (const table of ['filter', 'nat']) {
    const out = await execa(bin, ['-w', '-t', table, '-S'], { reject: false });
    for (const line of out.stdout.split('\n')) {
      if (!line.startsWith('-A ') || !needles.some((n) => line.includes(n))) continue;
      await execa('sh', ['-c', `${bin} -w -t ${table} ${line.replace(/^-A /, '-D ')}`], { reject: false });
    }
    for (const c of chains) {
      await quiet(bin, ['-w', '-t', table, '-F', c]);
      await quiet(bin, ['-w', '-t', table, '-X', c]);
    }
  }
}

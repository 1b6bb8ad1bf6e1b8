// A local IPv4 address outside 127.0.0.0/8, so a test registry can be one the daemon treats as
// secure. An address the host has already is used as it is; without one, a /32 is added to `lo`
// and removed again by release(), when the test process exits, or by a watchdog if it is killed.
import { execFileSync } from 'node:child_process';
import { networkInterfaces } from 'node:os';
import { watchdog } from './watchdog.ts';

export interface LocalAddress {
  address: string;
  /** True when the test added it (and release() removes it). */
  added: boolean;
  release(): void;
}

function existing(): string | undefined {
  for (const list of Object.values(networkInterfaces())) {
    for (const a of list ?? []) {
      if (a.family === 'IPv4' && !a.internal && !a.address.startsWith('127.') && !a.address.startsWith('169.254.')) return a.address;
    }
  }
  return undefined;
}

export function nonLoopbackAddress(opts: { reuse?: boolean } = {}): LocalAddress {
  const have = opts.reuse === false ? undefined : existing();
  if (have) return { address: have, added: false, release: () => {} };
  const address = `10.253.${process.pid % 250}.${1 + (Math.floor(process.pid / 250) % 250)}`;
  execFileSync('ip', ['addr', 'add', `${address}/32`, 'dev', 'lo'], { stdio: 'pipe' });
  const dog = watchdog(`ip addr del ${address}/32 dev lo`);
  let released = false;
  const release = () => {
    if (released) return;
    released = true;
    process.off('exit', release);
    dog.cancel();
    try {
      execFileSync('ip', ['addr', 'del', `${address}/32`, 'dev', 'lo'], { stdio: 'pipe' });
    } catch {
      // already gone
    }
  };
  process.on('exit', release);
  return { address, added: true, release };
}

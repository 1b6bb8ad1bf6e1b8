// Linux capabilities: the reference daemon's default set and the CapAdd/CapDrop/Privileged rules.
import { readFileSync } from 'node:fs';
import { invalidArgument } from '../../lib/errors.ts';

/** Every capability name, indexed by its number (see capability.h). */
const CAP_BY_NUMBER = [
  'CAP_CHOWN', 'CAP_DAC_OVERRIDE', 'CAP_DAC_READ_SEARCH', 'CAP_FOWNER', 'CAP_FSETID', 'CAP_KILL', 'CAP_SETGID',
  'CAP_SETUID', 'CAP_SETPCAP', 'CAP_LINUX_IMMUTABLE', 'CAP_NET_BIND_SERVICE', 'CAP_NET_BROADCAST', 'CAP_NET_ADMIN',
  'CAP_NET_RAW', 'CAP_IPC_LOCK', 'CAP_IPC_OWNER', 'CAP_SYS_MODULE', 'CAP_SYS_RAWIO', 'CAP_SYS_CHROOT', 'CAP_SYS_PTRACE',
  'CAP_SYS_PACCT', 'CAP_SYS_ADMIN', 'CAP_SYS_BOOT', 'CAP_SYS_NICE', 'CAP_SYS_RESOURCE', 'CAP_SYS_TIME',
  'CAP_SYS_TTY_CONFIG', 'CAP_MKNOD', 'CAP_LEASE', 'CAP_AUDIT_WRITE', 'CAP_AUDIT_CONTROL', 'CAP_SETFCAP',
  'CAP_MAC_OVERRIDE', 'CAP_MAC_ADMIN', 'CAP_SYSLOG', 'CAP_WAKE_ALARM', 'CAP_BLOCK_SUSPEND', 'CAP_AUDIT_READ',
  'CAP_PERFMON', 'CAP_BPF', 'CAP_CHECKPOINT_RESTORE',
];
const KNOWN = new Set(CAP_BY_NUMBER);

/** The 14 capabilities a non-privileged container gets, in the reference daemon's order. */
export const DEFAULT_CAPABILITIES: readonly string[] = Object.freeze([
  'CAP_CHOWN', 'CAP_DAC_OVERRIDE', 'CAP_FSETID', 'CAP_FOWNER', 'CAP_MKNOD', 'CAP_NET_RAW', 'CAP_SETGID', 'CAP_SETUID',
  'CAP_SETFCAP', 'CAP_SETPCAP', 'CAP_NET_BIND_SERVICE', 'CAP_SYS_CHROOT', 'CAP_KILL', 'CAP_AUDIT_WRITE',
]);

let allCaps: string[] | undefined;

/** All capabilities this kernel knows (up to /proc/sys/kernel/cap_last_cap) that the daemon holds in its bounding set. */
export function allCapabilities(): string[] {
  if (!allCaps) {
    let last = CAP_BY_NUMBER.length - 1;
    try {
      const n = Number.parseInt(readFileSync('/proc/sys/kernel/cap_last_cap', 'utf8'), 10);
      if (Number.isInteger(n) && n >= 0) last = Math.min(n, last);
    } catch {
      // not Linux or /proc unavailable: assume everything we know
    }
    allCaps = CAP_BY_NUMBER.slice(0, last + 1);
    // Only what the daemon itself may hand out: a runtime cannot raise a cap outside its own
    // bounding set (the daemon may run somewhere that lacks a few).
    try {
      const m = /^CapBnd:\s*([0-9a-f]+)$/m.exec(readFileSync('/proc/self/status', 'utf8'));
      if (m) {
        const bnd = BigInt(`0x${m[1]}`);
        allCaps = allCaps.filter((_, i) => (bnd >> BigInt(i)) & 1n);
      }
    } catch {
      // keep the kernel's list
    }
  }
  return allCaps;
}

function normalize(list: readonly string[] | null | undefined): string[] {
  const out: string[] = [];
  for (const raw of list ?? []) {
    const c = raw.trim().toUpperCase();
    if (c === 'ALL') {
      out.push('ALL');
      continue;
    }
    const name = c.startsWith('CAP_') ? c : `CAP_${c}`;
    if (!KNOWN.has(name)) throw invalidArgument(`unknown capability: "${name}"`);
    out.push(name);
  }
  return out;
}

/** The effective capability list for CapAdd/CapDrop (with or without the CAP_ prefix, or ALL). */
export function tweakCapabilities(capAdd: readonly string[] | null | undefined, capDrop: readonly string[] | null | undefined, privileged: boolean): string[] {
  if (privileged) return allCapabilities().slice();
  const adds = normalize(capAdd);
  const drops = normalize(capDrop);
  let caps: string[];
  if (adds.includes('ALL')) {
    caps = allCapabilities().filter((c) => !drops.includes(c));
  } else if (drops.includes('ALL')) {
    caps = adds;
  } else {
    caps = DEFAULT_CAPABILITIES.filter((c) => !drops.includes(c));
    caps.push(...adds);
  }
  return [...new Set(caps)];
}

// Machine facts for GET /info and GET /version: read once (or cached briefly), never slow.
import { readFileSync } from 'node:fs';
import { cpus, hostname, totalmem, release, arch as nodeArch } from 'node:os';

export interface MachineFacts {
  kernelVersion: string;
  operatingSystem: string;
  osVersion: string;
  osType: 'linux';
  architecture: string;
  ncpu: number;
  memTotal: number;
  name: string;
  cgroupVersion: '1' | '2';
  cgroupDriver: 'cgroupfs' | 'none';
  swapLimit: boolean;
  kernelMemory: boolean;
}

function osRelease(): Record<string, string> {
  const out: Record<string, string> = {};
  try {
    for (const line of readFileSync('/etc/os-release', 'utf8').split('\n')) {
      const m = /^([A-Z_]+)=(.*)$/.exec(line);
      if (m) out[m[1]] = m[2].replace(/^"(.*)"$/, '$1');
    }
  } catch {
    // unknown distribution
  }
  return out;
}

const GO_ARCH: Record<string, string> = { x64: 'x86_64', arm64: 'aarch64', arm: 'armv7l', ia32: 'i686', s390x: 's390x', ppc64: 'ppc64le' };

function cgroupVersion(): '1' | '2' {
  try {
    const mounts = readFileSync('/proc/self/mountinfo', 'utf8');
    return / \/sys\/fs\/cgroup .* - cgroup2 /.test(mounts) ? '2' : '1';
  } catch {
    return '1';
  }
}

export function machineFacts(): MachineFacts {
  const os = osRelease();
  let swap = false;
  try {
    readFileSync('/sys/fs/cgroup/memory/memory.memsw.limit_in_bytes');
    swap = true;
  } catch {
    // no swap accounting
  }
  return {
    kernelVersion: release(),
    operatingSystem: os.PRETTY_NAME ?? 'Linux',
    osVersion: os.VERSION_ID ?? '',
    osType: 'linux',
    architecture: GO_ARCH[nodeArch()] ?? nodeArch(),
    ncpu: cpus().length,
    memTotal: totalmem(),
    name: hostname(),
    cgroupVersion: cgroupVersion(),
    cgroupDriver: 'cgroupfs',
    swapLimit: swap,
    kernelMemory: false,
  };
}

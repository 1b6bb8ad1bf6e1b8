// linux.resources and linux.devices from HostConfig.
import { hostDevicesOnly } from '../../lib/device-requests.ts';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { posix } from 'node:path';
import { invalidArgument } from '../../lib/errors.ts';
import { defaultDeviceRules, defaultDevices } from './defaults.ts';
import { numField, objList, strField, listField } from './types.ts';
import type { OciDevice, OciDeviceRule } from './types.ts';

let swapAccounting: boolean | undefined;
/** cgroup v1 memory.memsw.* exists only with swap accounting; v2 always has memory.swap.max. */
function swapSupported(): boolean {
  swapAccounting ??= existsSync('/sys/fs/cgroup/memory/memory.memsw.limit_in_bytes') || existsSync('/sys/fs/cgroup/cgroup.controllers');
  return swapAccounting;
}

function major(rdev: bigint): number {
  return Number(((rdev >> 8n) & 0xfffn) | ((rdev >> 32n) & ~0xfffn));
}
function minor(rdev: bigint): number {
  return Number((rdev & 0xffn) | ((rdev >> 12n) & ~0xffn));
}

/** One host device node as an OCI device, or null when `p` is not a device. */
function deviceAt(p: string, inContainer: string): OciDevice | null {
  const st = statSync(p, { bigint: true });
  let type: string;
  if (st.isCharacterDevice()) type = 'c';
  else if (st.isBlockDevice()) type = 'b';
  else if (st.isFIFO()) type = 'p';
  else return null;
  return { path: inContainer, type, major: major(st.rdev), minor: minor(st.rdev), fileMode: Number(st.mode & 0o777n), uid: Number(st.uid), gid: Number(st.gid) };
}

/** Device nodes under a host directory (recursively), skipping what the runtime mounts itself. */
function devicesUnder(dir: string, inContainer: string, out: OciDevice[], skip: Set<string>): void {
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return;
  }
  for (const e of entries) {
    const hostPath = posix.join(dir, e.name);
    if (skip.has(hostPath)) continue;
    const ctrPath = posix.join(inContainer, e.name);
    if (e.isDirectory()) devicesUnder(hostPath, ctrPath, out, skip);
    else if (e.isCharacterDevice() || e.isBlockDevice() || e.isFIFO()) {
      try {
        const d = deviceAt(hostPath, ctrPath);
        if (d) out.push(d);
      } catch {
        // vanished or unreadable: skip
      }
    }
  }
}

const HOST_DEV_SKIP = new Set(['/dev/pts', '/dev/shm', '/dev/fd', '/dev/mqueue', '/dev/.lxc', '/dev/.lxd-mounts', '/dev/.udev', '/dev/console']);

const RULE = /^([acb]) ([0-9]+|\*):([0-9]+|\*) ([rwm]{1,3})$/;

export function parseDeviceCgroupRule(rule: string): OciDeviceRule {
  const m = RULE.exec(rule.trim());
  if (!m) throw invalidArgument(`invalid device cgroup format '${rule}'`);
  const r: OciDeviceRule = { allow: true, type: m[1]!, access: m[4]! };
  if (m[2] !== '*') r.major = Number(m[2]);
  if (m[3] !== '*') r.minor = Number(m[3]);
  return r;
}

export interface DeviceSetup {
  devices: OciDevice[];
  rules: OciDeviceRule[];
}

export function deviceSetup(h: Record<string, unknown>, privileged: boolean): DeviceSetup {
  if (privileged) {
    const devices: OciDevice[] = [];
    devicesUnder('/dev', '/dev', devices, HOST_DEV_SKIP);
    return { devices, rules: [{ allow: true, access: 'rwm' }] };
  }
  const devices = defaultDevices();
  const rules = defaultDeviceRules();
  // CDI-named devices (vendor.com/class=name) are injected from their specs, not looked up here.
  for (const d of hostDevicesOnly(objList(h, 'Devices'))) {
    const onHost = strField(d, 'PathOnHost');
    const inCtr = strField(d, 'PathInContainer') || onHost;
    const perms = strField(d, 'CgroupPermissions') || 'rwm';
    if (!onHost) throw invalidArgument('device path on host cannot be empty');
    if (!/^[rwm]{1,3}$/.test(perms)) throw invalidArgument(`invalid device cgroup permissions: ${perms}`);
    let found: OciDevice[];
    try {
      const single = deviceAt(onHost, inCtr);
      if (single) found = [single];
      else if (statSync(onHost).isDirectory()) {
        found = [];
        devicesUnder(onHost, inCtr, found, new Set());
      } else throw invalidArgument(`error gathering device information while adding custom device "${onHost}": not a device node`);
    } catch (err) {
      if (err instanceof Error && 'code' in err && err.code === 'ENOENT') {
        throw invalidArgument(`error gathering device information while adding custom device "${onHost}": no such file or directory`);
      }
      throw err;
    }
    for (const dev of found) {
      const i = devices.findIndex((x) => x.path === dev.path);
      if (i >= 0) devices.splice(i, 1);
      devices.push(dev);
      rules.push({ allow: true, type: dev.type, major: dev.major, minor: dev.minor, access: perms });
    }
  }
  for (const r of listField(h, 'DeviceCgroupRules')) rules.push(parseDeviceCgroupRule(r));
  return { devices, rules };
}

export interface OciResources {
  devices: OciDeviceRule[];
  memory?: Record<string, number | boolean>;
  cpu?: Record<string, number | string>;
  pids?: { limit: number };
  blockIO?: Record<string, unknown>;
}

function throttle(h: Record<string, unknown>, key: string, field: 'Rate' | 'Weight') {
  const out: Record<string, number>[] = [];
  for (const e of objList(h, key)) {
    const path = strField(e, 'Path');
    if (!path) continue;
    let st;
    try {
      st = statSync(path, { bigint: true });
    } catch {
      throw invalidArgument(`error getting device ${path}: no such file or directory`);
    }
    const rate = numField(e, field);
    out.push(field === 'Rate' ? { major: major(st.rdev), minor: minor(st.rdev), rate } : { major: major(st.rdev), minor: minor(st.rdev), weight: rate });
  }
  return out;
}

export function resources(h: Record<string, unknown>, rules: OciDeviceRule[]): OciResources {
  const r: OciResources = { devices: rules };

  const memory: Record<string, number | boolean> = {};
  const mem = numField(h, 'Memory');
  const swap = numField(h, 'MemorySwap');
  if (mem > 0) memory.limit = mem;
  const reservation = numField(h, 'MemoryReservation');
  if (reservation > 0) memory.reservation = reservation;
  if (swap !== 0) memory.swap = swap;
  else if (mem > 0 && swapSupported()) memory.swap = mem * 2; // the reference's default: as much swap as memory
  const swappiness = h.MemorySwappiness;
  if (typeof swappiness === 'number' && swappiness >= 0) memory.swappiness = swappiness;
  if (h.OomKillDisable === true) memory.disableOOMKiller = true;
  if (Object.keys(memory).length) r.memory = memory;

  const cpu: Record<string, number | string> = {};
  const shares = numField(h, 'CpuShares');
  if (shares > 0) cpu.shares = shares;
  const nano = numField(h, 'NanoCpus');
  if (nano > 0) {
    cpu.period = 100000;
    cpu.quota = Math.floor((nano * 100000) / 1e9);
  } else {
    const quota = numField(h, 'CpuQuota');
    const period = numField(h, 'CpuPeriod');
    if (quota !== 0) cpu.quota = quota;
    if (period > 0) cpu.period = period;
  }
  const rtPeriod = numField(h, 'CpuRealtimePeriod');
  const rtRuntime = numField(h, 'CpuRealtimeRuntime');
  if (rtPeriod > 0) cpu.realtimePeriod = rtPeriod;
  if (rtRuntime !== 0) cpu.realtimeRuntime = rtRuntime;
  const cpus = strField(h, 'CpusetCpus');
  const mems = strField(h, 'CpusetMems');
  if (cpus) cpu.cpus = cpus;
  if (mems) cpu.mems = mems;
  if (Object.keys(cpu).length) r.cpu = cpu;

  const pids = numField(h, 'PidsLimit');
  if (pids > 0) r.pids = { limit: pids };
  else if (pids < 0) r.pids = { limit: -1 };

  const blkio: Record<string, unknown> = {};
  const weight = numField(h, 'BlkioWeight');
  if (weight > 0) blkio.weight = weight;
  const wd = throttle(h, 'BlkioWeightDevice', 'Weight');
  if (wd.length) blkio.weightDevice = wd;
  for (const [key, field] of [
    ['BlkioDeviceReadBps', 'throttleReadBpsDevice'],
    ['BlkioDeviceWriteBps', 'throttleWriteBpsDevice'],
    ['BlkioDeviceReadIOps', 'throttleReadIOPSDevice'],
    ['BlkioDeviceWriteIOps', 'throttleWriteIOPSDevice'],
  ] as const) {
    const t = throttle(h, key, 'Rate');
    if (t.length) blkio[field] = t;
  }
  if (Object.keys(blkio).length) r.blockIO = blkio;
  return r;
}

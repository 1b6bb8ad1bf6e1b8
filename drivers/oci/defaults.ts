// Fixed parts of the reference daemon's default Linux spec.
import type { OciDevice, OciDeviceRule, OciMount } from './types.ts';

export const OCI_VERSION = '1.0.2-dev';
export const DEFAULT_PATH_ENV = 'PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
export const DEFAULT_SHM_SIZE = 64 * 1024 * 1024;

export const MASKED_PATHS: readonly string[] = [
  '/proc/asound',
  '/proc/acpi',
  '/proc/kcore',
  '/proc/keys',
  '/proc/latency_stats',
  '/proc/timer_list',
  '/proc/timer_stats',
  '/proc/sched_debug',
  '/proc/scsi',
  '/sys/firmware',
  '/sys/devices/virtual/powercap',
];

export const READONLY_PATHS: readonly string[] = ['/proc/bus', '/proc/fs', '/proc/irq', '/proc/sys', '/proc/sysrq-trigger'];

/** Default mounts before /dev/shm (which depends on IpcMode and ShmSize). Fresh objects each call. */
export function baseMounts(privileged: boolean): OciMount[] {
  const ro = privileged ? [] : ['ro'];
  return [
    { destination: '/proc', type: 'proc', source: 'proc', options: ['nosuid', 'noexec', 'nodev'] },
    { destination: '/dev', type: 'tmpfs', source: 'tmpfs', options: ['nosuid', 'strictatime', 'mode=755', 'size=65536k'] },
    { destination: '/dev/pts', type: 'devpts', source: 'devpts', options: ['nosuid', 'noexec', 'newinstance', 'ptmxmode=0666', 'mode=0620', 'gid=5'] },
    { destination: '/sys', type: 'sysfs', source: 'sysfs', options: ['nosuid', 'noexec', 'nodev', ...ro] },
    { destination: '/sys/fs/cgroup', type: 'cgroup', source: 'cgroup', options: [...ro, 'nosuid', 'noexec', 'nodev'] },
    { destination: '/dev/mqueue', type: 'mqueue', source: 'mqueue', options: ['nosuid', 'noexec', 'nodev'] },
  ];
}

/** Device nodes every container gets (the runtime also creates them implicitly; listing them is harmless). */
export function defaultDevices(): OciDevice[] {
  const dev = (path: string, major: number, minor: number): OciDevice => ({ path, type: 'c', major, minor, fileMode: 0o666, uid: 0, gid: 0 });
  return [dev('/dev/null', 1, 3), dev('/dev/zero', 1, 5), dev('/dev/full', 1, 7), dev('/dev/random', 1, 8), dev('/dev/urandom', 1, 9), dev('/dev/tty', 5, 0)];
}

/** Deny everything, then allow mknod of any node and the standard character devices. */
export function defaultDeviceRules(): OciDeviceRule[] {
  const c = (major: number | undefined, minor: number | undefined, access = 'rwm'): OciDeviceRule =>
    major === undefined ? { allow: true, type: 'c', access } : minor === undefined ? { allow: true, type: 'c', major, access } : { allow: true, type: 'c', major, minor, access };
  return [
    { allow: false, access: 'rwm' },
    { allow: true, type: 'c', access: 'm' }, // mknod of any char device (*:*)
    { allow: true, type: 'b', access: 'm' }, // mknod of any block device (*:*)
    c(1, 3), // null
    c(1, 8), // random
    c(1, 7), // full
    c(5, 0), // tty
    c(1, 5), // zero
    c(1, 9), // urandom
    c(5, 1), // console
    c(136, undefined), // pts/*
    c(5, 2), // ptmx
    c(10, 200), // net/tun
  ];
}

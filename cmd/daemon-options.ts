// Daemon options that act on the daemon's own process and host at start (oom_score_adj, the
// containers' parent cgroup's real-time budget, the cgroup driver, SELinux's presence), and the
// refusal of options whose feature this daemon does not have yet (a start with them set fails
// rather than ignoring them).
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, posix } from 'node:path';
import type { Logger } from 'pino';
import type { DaemonConfig } from '../config/load.ts';
import { invalidArgument } from '../lib/errors.ts';
import { driverOptions } from '../drivers/storage/storage-opt.ts';
import { selinuxStartWarning, selinuxEnabled } from '../drivers/oci/selinux.ts';

const NOT_YET = 'not supported by this daemon yet: ';

/** --rootless started without rootlesskit around it: the script that starts it so. */
export const ROOTLESS_OUTSIDE = 'rootless mode needs engined to run inside rootlesskit: start it with engined-rootless.sh (hack/engined-rootless.sh), which does';

/** The storage drivers this daemon has. */
const STORAGE_DRIVERS = new Set(['overlay2', 'vfs', 'btrfs', 'fuse-overlayfs']);

/** The first option set to a value whose feature this daemon does not implement, as its refusal message. */
export function unsupportedOption(c: DaemonConfig): string | undefined {
  // With no driver asked for, the one chosen at start (drivers/storage/select.ts) reads the options then.
  const driver = c.storageDriver;
  const snapshotter = !!c.features?.['supervisor-snapshotter'];
  // With the supervisor's snapshotter, -s names the snapshotter (overlayfs, its default).
  if (snapshotter && driver && driver !== 'overlayfs') return `${NOT_YET}--storage-driver=${driver} with --feature supervisor-snapshotter (its only snapshotter is overlayfs)`;
  if (snapshotter && c.storageOpts?.length) return `${NOT_YET}--storage-opt with --feature supervisor-snapshotter`;
  // zfs without its kernel module (this machine's kernel has none): the reference's refusal.
  if (driver === 'zfs' && !existsSync('/dev/zfs')) return 'error initializing graphdriver: prerequisites for driver not satisfied (wrong filesystem?)';
  if (driver && !snapshotter && !STORAGE_DRIVERS.has(driver)) return `${NOT_YET}--storage-driver=${driver}`;
  try {
    if (driver && !snapshotter) driverOptions(driver, c.storageOpts ?? []);
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
  // User namespaces unpack layers with remapped owners: the supervisor's snapshotter does not.
  if (c.usernsRemap && snapshotter) return `${NOT_YET}--userns-remap with --feature supervisor-snapshotter`;
  // Rootless mode runs inside rootlesskit's namespaces, which hack/engined-rootless.sh makes.
  if (c.rootless && !process.env.ROOTLESSKIT_STATE_DIR) return ROOTLESS_OUTSIDE;
  if (c.rootless && c.usernsRemap) return 'options --userns-remap and --rootless are incompatible';
  return undefined;
}

/** Refuses the start (InvalidArgument) when unsupportedOption names one. */
export function refuseUnsupported(c: DaemonConfig): void {
  const why = unsupportedOption(c);
  if (why) throw invalidArgument(why);
}

/** The value of --exec-opt native.cgroupdriver (the last one given), lower-cased; '' when unset. */
export function cgroupDriverOpt(execOpts: readonly string[]): string {
  let driver = '';
  for (const o of execOpts) {
    const eq = o.indexOf('=');
    if (eq > 0 && o.slice(0, eq).trim().toLowerCase() === 'native.cgroupdriver') driver = o.slice(eq + 1).trim();
  }
  return driver;
}

/** Whether systemd runs the host (PID 1), as go-systemd's IsRunningSystemd asks. */
export function runningSystemd(): boolean {
  return existsSync('/run/systemd/system');
}

/**
 * --exec-opt native.cgroupdriver: cgroupfs is what the daemon drives; systemd is refused where
 * systemd does not manage the host (the reference's wording), and where it does, refused as not
 * implemented yet.
 */
export function checkCgroupDriver(execOpts: readonly string[], systemd = runningSystemd()): void {
  const driver = cgroupDriverOpt(execOpts);
  if (driver !== 'systemd') return;
  if (!systemd) throw invalidArgument('systemd cgroup flag passed, but systemd support for managing cgroups is not available');
  throw invalidArgument(`${NOT_YET}--exec-opt native.cgroupdriver=systemd`);
}

/** The daemon's own cgroup in the v1 hierarchy that has `controller` (from /proc/self/cgroup). */
function ownCgroup(controller: string): string {
  try {
    for (const line of readFileSync('/proc/self/cgroup', 'utf8').split('\n')) {
      const [, ctrls, path] = line.split(':');
      if (ctrls?.split(',').includes(controller)) return path || '/';
    }
  } catch {
    // no /proc: the root
  }
  return '/';
}

/** The cgroup v1 cpu controller's mount point, undefined on a cgroup v2 (unified) host. */
export function cpuCgroupMount(): string | undefined {
  for (const p of ['/sys/fs/cgroup/cpu', '/sys/fs/cgroup/cpu,cpuacct']) if (existsSync(join(p, 'cpu.rt_period_us')) || existsSync(join(p, 'cpu.shares'))) return p;
  return undefined;
}

/**
 * The containers' parent cgroup in the cpu hierarchy: --cgroup-parent (default /engine), under
 * the root with a leading slash, else under the daemon's own cgroup.
 */
export function containersCpuCgroup(cgroupParent: string): string {
  const parent = cgroupParent || '/engine';
  return parent.startsWith('/') ? posix.normalize(parent) : posix.join(ownCgroup('cpu'), parent);
}

/**
 * --cpu-rt-period / --cpu-rt-runtime: written, as the reference's initCPURtController does, into
 * cpu.rt_period_us and cpu.rt_runtime_us of the containers' parent cgroup and of each cgroup above
 * it (a child's budget cannot exceed its parent's), creating them. cgroup v1 only.
 */
export function applyCpuRt(c: DaemonConfig, mount: string | null = cpuCgroupMount() ?? null): string | undefined {
  if (!c.cpuRtPeriod && !c.cpuRtRuntime) return undefined;
  if (!mount) throw invalidArgument('cgroup v2 does not support --cpu-rt-period and --cpu-rt-runtime (cgroup v1 only)');
  if (!existsSync(join(mount, 'cpu.rt_runtime_us'))) throw invalidArgument('CPU real-time period is not supported by the kernel');
  const target = containersCpuCgroup(c.cgroupParent);
  const chain: string[] = [];
  for (let p = target; p !== '/' && p !== '.'; p = dirname(p)) chain.unshift(p);
  for (const p of chain) {
    const dir = join(mount, p);
    mkdirSync(dir, { recursive: true, mode: 0o755 });
    try {
      if (c.cpuRtPeriod) writeFileSync(join(dir, 'cpu.rt_period_us'), String(c.cpuRtPeriod));
      if (c.cpuRtRuntime) writeFileSync(join(dir, 'cpu.rt_runtime_us'), String(c.cpuRtRuntime));
    } catch (err) {
      throw invalidArgument(`unable to init CPU RT controller for ${dir}: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  return join(mount, target);
}

/**
 * --oom-score-adjust: the daemon's own /proc/self/oom_score_adj. As the reference, a value the
 * kernel refuses for want of privilege (a negative one without CAP_SYS_RESOURCE) is logged, not fatal.
 */
export function applyOomScoreAdj(score: number, log: Logger, file = '/proc/self/oom_score_adj'): void {
  if (!score) return;
  if (score < -1000 || score > 1000) throw invalidArgument(`oom-score-adjust ${score} out of range [-1000, 1000]`);
  try {
    writeFileSync(file, String(score));
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EACCES' || code === 'EPERM') {
      log.warn({ err, score }, 'permission denied writing oom_score_adj: left as it is');
      return;
    }
    throw err;
  }
}

/** The reference's minimum control plane MTU: a lower value is raised to it, with a warning. */
export const MIN_CONTROL_PLANE_MTU = 500;

export function controlPlaneMtu(mtu: number, log?: Logger): number {
  if (mtu >= MIN_CONTROL_PLANE_MTU) return mtu;
  log?.warn(`Received a MTU of ${mtu}, this value is very low, the network control plane can misbehave, defaulting to minimum value (${MIN_CONTROL_PLANE_MTU})`);
  return MIN_CONTROL_PLANE_MTU;
}

/**
 * --selinux-enabled on a host without SELinux: the reference starts without labels and says so
 * (its daemon_unix.go configureKernelSecuritySupport). The warning logged, if any, is returned.
 */
export function warnSelinux(c: DaemonConfig, log: Logger, host: () => boolean = selinuxEnabled): string | undefined {
  const warning = selinuxStartWarning(!!c.selinuxEnabled, host);
  if (warning) log.warn(warning);
  return warning;
}

/** Start-time checks and effects of the options above; throws to refuse the start. */
export function applyDaemonOptions(c: DaemonConfig, log: Logger): void {
  refuseUnsupported(c);
  checkCgroupDriver(c.execOpts ?? []);
  warnSelinux(c, log);
  applyOomScoreAdj(c.oomScoreAdjust, log);
  const rt = applyCpuRt(c);
  if (rt) log.info({ cgroup: rt, period: c.cpuRtPeriod, runtime: c.cpuRtRuntime }, 'CPU real-time budget set on the containers\' parent cgroup');
  if (c.networkControlPlaneMtu !== 1500) {
    const mtu = controlPlaneMtu(c.networkControlPlaneMtu, log);
    log.info({ mtu }, 'network control plane MTU set: it takes effect with overlay networks, which this daemon does not have');
  }
  const gc = c.builder?.gc;
  if (gc) log.info({ gc }, 'builder garbage collection policy: the classic builder keeps no build cache besides images, so it has nothing to collect');
}

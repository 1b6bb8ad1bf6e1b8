// Seccomp for non-privileged containers.
//
// Our formulation of the reference default profile: default action SCMP_ACT_ALLOW with a
// denylist (EPERM) of the syscalls the reference profile does not allow for the container's
// capability set. The reference profile is an allowlist; a denylist of the same dangerous
// calls gives the same protection for everything that matters (kernel keyring, namespace
// creation, mounts, module/kexec loading, BPF/perf, clock setting, obsolete calls, io_uring)
// and does not break new harmless syscalls the runtime's libseccomp does not know yet.
// Syscalls gated on a capability are allowed again when the container has that capability,
// as in the reference. Known difference: personality(2) is not restricted to the reference's
// short list of personas. clone3 fails with ENOSYS (so libc falls back to clone, whose flags
// can be inspected), as in the reference.
//
// A profile passed with `--security-opt seccomp=<json>` (reference format) is converted too.
import { arch, release } from 'node:os';
import { invalidArgument } from '../../lib/errors.ts';
import type { OciSeccomp, OciSeccompArg, OciSeccompSyscall } from './types.ts';

const EPERM = 1;
const ENOSYS = 38;

interface DenyRule {
  names: string[];
  /** Allowed after all when the container holds any of these capabilities. */
  unlessCaps?: string[];
}

const DENY: DenyRule[] = [
  // kernel keyring is not namespaced
  { names: ['add_key', 'keyctl', 'request_key'] },
  // obsolete or never needed in containers
  { names: ['create_module', 'get_kernel_syms', 'query_module', 'nfsservctl', 'uselib', 'ustat', 'sysfs', '_sysctl', 'vm86', 'vm86old'] },
  // io_uring bypasses seccomp for the operations it submits
  { names: ['io_uring_setup', 'io_uring_enter', 'io_uring_register'] },
  { names: ['acct'], unlessCaps: ['CAP_SYS_PACCT'] },
  { names: ['bpf'], unlessCaps: ['CAP_SYS_ADMIN', 'CAP_BPF'] },
  { names: ['perf_event_open'], unlessCaps: ['CAP_SYS_ADMIN', 'CAP_PERFMON'] },
  { names: ['clock_adjtime', 'clock_adjtime64', 'clock_settime', 'clock_settime64', 'settimeofday', 'stime'], unlessCaps: ['CAP_SYS_TIME'] },
  { names: ['init_module', 'finit_module', 'delete_module'], unlessCaps: ['CAP_SYS_MODULE'] },
  { names: ['kexec_load', 'kexec_file_load', 'reboot'], unlessCaps: ['CAP_SYS_BOOT'] },
  { names: ['iopl', 'ioperm'], unlessCaps: ['CAP_SYS_RAWIO'] },
  { names: ['kcmp', 'pidfd_getfd'], unlessCaps: ['CAP_SYS_PTRACE'] },
  { names: ['userfaultfd'], unlessCaps: ['CAP_SYS_PTRACE'] },
  { names: ['get_mempolicy', 'mbind', 'set_mempolicy', 'move_pages', 'migrate_pages'], unlessCaps: ['CAP_SYS_NICE'] },
  { names: ['syslog'], unlessCaps: ['CAP_SYSLOG'] },
  { names: ['vhangup'], unlessCaps: ['CAP_SYS_TTY_CONFIG'] },
  { names: ['open_by_handle_at'], unlessCaps: ['CAP_DAC_READ_SEARCH'] },
  { names: ['lookup_dcookie'], unlessCaps: ['CAP_SYS_ADMIN'] },
  {
    names: [
      'mount', 'umount', 'umount2', 'unshare', 'setns', 'pivot_root', 'swapon', 'swapoff', 'quotactl', 'quotactl_fd',
      'name_to_handle_at', 'fanotify_init', 'setdomainname', 'sethostname', 'open_tree', 'move_mount', 'fsopen',
      'fsconfig', 'fsmount', 'fspick', 'mount_setattr',
    ],
    unlessCaps: ['CAP_SYS_ADMIN'],
  },
];

// Namespace flags of clone(2): creating namespaces needs CAP_SYS_ADMIN in the reference profile.
const CLONE_NS_FLAGS = [0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000];

export function nativeArchitectures(): string[] {
  switch (arch()) {
    case 'x64':
      return ['SCMP_ARCH_X86_64', 'SCMP_ARCH_X86', 'SCMP_ARCH_X32'];
    case 'arm64':
      return ['SCMP_ARCH_AARCH64', 'SCMP_ARCH_ARM'];
    case 'ia32':
      return ['SCMP_ARCH_X86'];
    case 'arm':
      return ['SCMP_ARCH_ARM'];
    case 'ppc64':
      return ['SCMP_ARCH_PPC64LE'];
    case 's390x':
      return ['SCMP_ARCH_S390X', 'SCMP_ARCH_S390'];
    default:
      return [];
  }
}

const cache = new Map<string, OciSeccomp>();

/** The default profile for a capability set. Cached and shared: treat the result as read-only. */
export function defaultSeccomp(caps: readonly string[]): OciSeccomp {
  const key = [...caps].sort().join(',');
  const hit = cache.get(key);
  if (hit) return hit;
  const has = (list?: string[]) => !!list && list.some((c) => caps.includes(c));
  const denied: string[] = [];
  for (const r of DENY) if (!has(r.unlessCaps)) denied.push(...r.names);
  const syscalls: OciSeccompSyscall[] = [{ names: denied, action: 'SCMP_ACT_ERRNO', errnoRet: EPERM }];
  if (!caps.includes('CAP_SYS_ADMIN')) {
    // clone's flags are its first argument except on s390, where the first two are swapped.
    const index = arch() === 's390x' ? 1 : 0;
    for (const f of CLONE_NS_FLAGS) {
      syscalls.push({ names: ['clone'], action: 'SCMP_ACT_ERRNO', errnoRet: EPERM, args: [{ index, value: f, valueTwo: f, op: 'SCMP_CMP_MASKED_EQ' }] });
    }
    syscalls.push({ names: ['clone3'], action: 'SCMP_ACT_ERRNO', errnoRet: ENOSYS });
  }
  const profile: OciSeccomp = { defaultAction: 'SCMP_ACT_ALLOW', architectures: nativeArchitectures(), syscalls };
  cache.set(key, profile);
  return profile;
}

// ---- profiles in the reference daemon's JSON format -------------------------------------

interface RefFilter {
  caps?: string[];
  arches?: string[];
  minKernel?: string;
}

interface RefSyscall {
  name?: string;
  names?: string[];
  action: string;
  errnoRet?: number;
  args?: { index: number; value: number; valueTwo?: number; op: string }[] | null;
  includes?: RefFilter;
  excludes?: RefFilter;
}

interface RefProfile {
  defaultAction: string;
  defaultErrnoRet?: number;
  architectures?: string[];
  archMap?: { architecture: string; subArchitectures?: string[] }[];
  syscalls?: RefSyscall[];
  flags?: string[];
}

const GO_ARCH: Record<string, string> = { x64: 'amd64', arm64: 'arm64', ia32: '386', arm: 'arm', ppc64: 'ppc64le', s390x: 's390x' };
const SCMP_ARCH_GO: Record<string, string> = { SCMP_ARCH_X86_64: 'amd64', SCMP_ARCH_X86: '386', SCMP_ARCH_X32: 'amd64', SCMP_ARCH_AARCH64: 'arm64', SCMP_ARCH_ARM: 'arm', SCMP_ARCH_PPC64LE: 'ppc64le', SCMP_ARCH_S390X: 's390x' };

function kernelAtLeast(min: string): boolean {
  const parse = (s: string) => s.split(/[.-]/).slice(0, 2).map((x) => Number.parseInt(x, 10) || 0);
  const [a = 0, b = 0] = parse(release());
  const [c = 0, d = 0] = parse(min);
  return a > c || (a === c && b >= d);
}

/** Convert a reference-format profile (the text of `seccomp=<json>`) for a container's capabilities. */
export function convertProfile(json: string, caps: readonly string[]): OciSeccomp {
  let p: RefProfile;
  try {
    p = JSON.parse(json) as RefProfile;
  } catch (err) {
    throw invalidArgument(`decoding seccomp profile failed: ${(err as Error).message}`);
  }
  if (!p || typeof p.defaultAction !== 'string') throw invalidArgument('decoding seccomp profile failed: missing defaultAction');
  const goArch = GO_ARCH[arch()] ?? arch();
  let architectures = p.architectures ?? [];
  if (p.archMap?.length) {
    architectures = [];
    for (const m of p.archMap) {
      if (SCMP_ARCH_GO[m.architecture] === goArch) architectures.push(m.architecture, ...(m.subArchitectures ?? []));
    }
  }
  // includes: every condition must hold (all listed caps); excludes: any condition drops the rule.
  const included = (f: RefFilter | undefined): boolean =>
    !f ||
    ((!f.arches?.length || f.arches.includes(goArch)) &&
      (!f.caps?.length || f.caps.every((c) => caps.includes(c))) &&
      (!f.minKernel || kernelAtLeast(f.minKernel)));
  const excluded = (f: RefFilter | undefined): boolean =>
    !!f && (!!f.arches?.includes(goArch) || !!f.caps?.some((c) => caps.includes(c)) || (!!f.minKernel && kernelAtLeast(f.minKernel)));
  const syscalls: OciSeccompSyscall[] = [];
  for (const s of p.syscalls ?? []) {
    if (!included(s.includes) || excluded(s.excludes)) continue;
    const names = s.names?.length ? s.names : s.name ? [s.name] : [];
    if (names.length === 0) continue;
    const out: OciSeccompSyscall = { names, action: s.action };
    if (s.errnoRet !== undefined) out.errnoRet = s.errnoRet;
    if (s.args?.length) out.args = s.args.map((a): OciSeccompArg => ({ index: a.index, value: a.value, valueTwo: a.valueTwo ?? 0, op: a.op }));
    syscalls.push(out);
  }
  const res: OciSeccomp = { defaultAction: p.defaultAction, architectures, syscalls };
  if (p.defaultErrnoRet !== undefined) res.defaultErrnoRet = p.defaultErrnoRet;
  if (p.flags?.length) res.flags = p.flags;
  return res;
}

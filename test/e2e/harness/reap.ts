// Synchronous removal of everything one test daemon made: its processes (daemon, supervisor,
// shims and the containers under them), mounts under its root, the default bridge and iptables
// chains when it created them, and the root itself. Used by DaemonHandle.cleanup() and by the
// reaper: a detached watcher, started with each daemon, that runs the same cleanup if the test
// process dies without doing it (killed by a runner timeout, SIGKILL).
//   node reap.ts <test-pid> <root> <json RootState>
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const DEFAULT_BRIDGE = 'engine0';

/** What existed before the daemon started, so cleanup removes only what the test made. */
export interface RootState {
  /** Remove the daemon's bridge at the end (its chains, by chainPrefix, are removed whenever there is one). */
  ownsNetwork: boolean;
  /** This daemon's own bridge name and iptables chain prefix (unique per test daemon). */
  bridge?: string;
  chainPrefix?: string;
}

function readText(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}

function alive(pid: number): boolean {
  if (!pid || pid <= 1) return false;
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  const stat = readText(`/proc/${pid}/stat`);
  return stat !== '' && !/^\d+ \(.*\) Z /.test(stat);
}

function kill(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    // already gone
  }
}

function run(cmd: string, args: readonly string[]): string {
  try {
    return execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], timeout: 10_000 });
  } catch {
    return '';
  }
}

export function linkExists(name: string): boolean {
  return existsSync(`/sys/class/net/${name}`);
}

export function iptablesChainExists(table: string, chain: string): boolean {
  try {
    execFileSync('iptables', ['-t', table, '-S', chain], { stdio: 'ignore', timeout: 10_000 });
    return true;
  } catch {
    return false;
  }
}

/** The daemon (by its pidfile), the supervisor (by its pid file), and every process naming our root, with their descendants. */
export function killTree(root: string): void {
  const procs = (() => {
    try {
      return readdirSync('/proc').filter((p) => /^\d+$/.test(p)).map(Number);
    } catch {
      return [];
    }
  })();
  const victims = new Set<number>();
  const daemonPid = Number(readText(join(root, 'engine.pid')).trim());
  if (daemonPid && readText(`/proc/${daemonPid}/cmdline`).includes(root)) victims.add(daemonPid);
  const supPid = Number(readText(join(root, 'exec', 'containerd', 'containerd.pid')).trim());
  if (supPid && readText(`/proc/${supPid}/cmdline`).includes('containerd')) victims.add(supPid);
  const children = new Map<number, number[]>();
  for (const p of procs) {
    if (p === process.pid) continue;
    const cl = readText(`/proc/${p}/cmdline`).replace(/\0/g, ' ');
    // The reaper names our root too, but it is this process or must outlive the kill.
    if (cl.includes(root) && !cl.includes('reap.ts')) victims.add(p);
    const stat = readText(`/proc/${p}/stat`);
    if (!stat) continue;
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    const list = children.get(ppid) ?? [];
    list.push(p);
    children.set(ppid, list);
  }
  const all = new Set<number>();
  const visit = (pid: number) => {
    if (all.has(pid) || pid === process.pid || pid <= 1) return;
    all.add(pid);
    for (const c of children.get(pid) ?? []) visit(c);
  };
  for (const v of victims) visit(v);
  for (const pid of all) kill(pid, 'SIGKILL');
  const until = Date.now() + 5000;
  for (const pid of all) {
    while (alive(pid) && Date.now() < until) run('sleep', ['0.05']);
  }
}

/** Everything mounted at or under root, deepest first, lazily. */
export function unmountUnder(root: string): void {
  for (let pass = 0; pass < 3; pass++) {
    const mounts = readText('/proc/self/mountinfo')
      .split('\n')
      .map((l) => l.split(' ')[4])
      .filter((m): m is string => !!m)
      .map((m) => m.replace(/\\(\d{3})/g, (_s, o: string) => String.fromCharCode(parseInt(o, 8))))
      .filter((m) => m === root || m.startsWith(`${root}/`));
    if (mounts.length === 0) return;
    mounts.sort((a, b) => b.split('/').length - a.split('/').length || b.length - a.length);
    for (const m of mounts) run('umount', ['-l', m]);
  }
}

/**
 * The daemon's bridge, the bridges of its user networks, and every iptables rule and chain with
 * its chain prefix or one of those bridge names. bridge null: the default bridge is not ours (a
 * daemon run with --bridge none still makes its chains and user networks). A user network's
 * bridge (br-<id>) is known by the rules in the daemon's own chains that name it.
 */
export function removeNetwork(bridge: string | null = DEFAULT_BRIDGE, prefix = 'ENGINE'): void {
  const ownChain = (c: string) => c === prefix || c.startsWith(`${prefix}-`);
  const bins = ['iptables', 'ip6tables'] as const;
  const tables = ['filter', 'nat'] as const;
  const rulesOf = new Map<string, string[]>();
  const userBridges = new Set<string>();
  // ip6tables too: a daemon with --ip6tables programs the same chains there.
  for (const bin of bins) {
    for (const table of tables) {
      const rules = run(bin, ['-t', table, '-S']).split('\n');
      rulesOf.set(`${bin} ${table}`, rules);
      for (const r of rules) {
        const m = /^-A (\S+) (.*)$/.exec(r);
        if (m && ownChain(m[1])) for (const b of m[2].match(/\bbr-[0-9a-f]{12}\b/g) ?? []) userBridges.add(b);
      }
    }
  }
  const names = [...(bridge ? [bridge] : []), ...userBridges];
  const esc = (x: string) => x.replace(/[^A-Za-z0-9]/g, (c) => `\\${c}`);
  const ours = new RegExp([`\\b${esc(prefix)}(-[A-Z0-9-]+)?\\b`, ...names.map((n) => `\\b${esc(n)}\\b`)].join('|'));
  for (const bin of bins) {
    for (const table of tables) {
      const rules = rulesOf.get(`${bin} ${table}`) ?? [];
      for (const r of rules) {
        const m = /^-A (\S+) (.*)$/.exec(r);
        if (!m || ownChain(m[1])) continue;
        if (ours.test(m[2])) run('bash', ['-c', `${bin} -t ${table} -D ${m[1]} ${m[2]}`]);
      }
      const chains = rules.map((r) => /^-N (\S+)$/.exec(r)?.[1]).filter((c): c is string => !!c && ownChain(c));
      for (const c of chains) run(bin, ['-t', table, '-F', c]);
      for (const c of chains) run(bin, ['-t', table, '-X', c]);
    }
  }
  for (const n of names) if (linkExists(n)) run('ip', ['link', 'del', n]);
}

/** Full cleanup of one test root; safe to repeat. */
export function reapRoot(root: string, state: RootState): void {
  if (!root.startsWith('/tmp/engine-e2e-')) throw new Error(`refusing to reap ${root}`);
  killTree(root);
  unmountUnder(root);
  // The chain prefix is this root's own; the bridge only when the harness made it.
  if (state.ownsNetwork) removeNetwork(state.bridge, state.chainPrefix);
  else if (state.chainPrefix) removeNetwork(null, state.chainPrefix);
  try {
    rmSync(root, { recursive: true, force: true, maxRetries: 3 });
  } catch (err) {
    process.stderr.write(`engine e2e: could not remove ${root}: ${(err as Error).message}\n`);
  }
}

/** Starts the detached watcher for one root; returns its pid. */
export function startReaper(root: string, state: RootState, nodeBin: string): number {
  const child = spawn(nodeBin, [fileURLToPath(import.meta.url), String(process.pid), root, JSON.stringify(state)], {
    detached: true,
    stdio: 'ignore',
  });
  child.unref();
  return child.pid ?? 0;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const [watchPid, root, stateJson] = process.argv.slice(2);
  const state = JSON.parse(stateJson ?? '{}') as RootState;
  // Ignore the signals a runner sends to the group we were started from.
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(sig, () => {});
  const timer = setInterval(() => {
    if (!existsSync(root)) {
      clearInterval(timer);
      return;
    }
    if (!alive(Number(watchPid))) {
      clearInterval(timer);
      reapRoot(root, state);
    }
  }, 500);
}

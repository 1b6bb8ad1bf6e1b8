// A small virtual network for cluster tests, made for one test file and removed even on failure:
// one Linux bridge (a unique name) on a private /24 nobody on the host uses, the host holding .1,
// and N network namespaces, each joined to the bridge by a veth pair (.10+i inside, default route
// via .1). Daemons started inside them reach services the host binds on .1 (etcd) and one another
// (one rule first in the host's FORWARD chain names the bridge: with br_netfilter, bridged traffic
// crosses that chain, whose policy may be DROP; removed with the bridge), and nothing else of the
// host's networks. `cut`/`heal` drop and restore a namespace's traffic to the subnet with iptables
// rules inside that namespace: the host's policies stay untouched.
// Removal runs from cleanup(), from the process exit hook, and from a detached reaper if the test
// process is killed outright (a runner's timeout), like the daemon harness's roots.
//   node netns.ts <test-pid> <json NetState>   (the reaper)
import { execFileSync, spawn, spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cleanedUp, cleanupAtExit, signalPid } from './processes.ts';

const NODE = join(resolve(fileURLToPath(new URL('../../../', import.meta.url))), 'node_modules', '.bin', 'node');
/** Every name this harness makes starts with this (the bridge, veths, namespaces): leaks are found by it. */
export const NAME_PREFIX = 'ecl';

/** What cleanup removes: only names this harness made. */
interface NetState {
  bridge: string;
  /** Namespaces, and the host-side veth ends (deleting one end deletes its peer). */
  namespaces: string[];
  hostVeths: string[];
}

export interface NetnsOptions {
  /** Namespaces to make. */
  count: number;
}

export interface NetnsHandle {
  /** The bridge's name (`ecl` + 6 hex characters). */
  readonly bridge: string;
  /** The /24, e.g. '10.123.45.0/24'. */
  readonly subnet: string;
  /** The host's address on the bridge (.1): bind services the namespaces reach here. */
  readonly hostAddr: string;
  /** Namespace names, index i for namespace i. */
  readonly names: readonly string[];
  /** `/var/run/netns/<name>` of namespace i: what `nsenter --net=` takes. */
  nsPath(i: number): string;
  /** The address of namespace i (.10+i). */
  addr(i: number): string;
  /** The argv prefix that runs a program in namespace i: `nsenter --net=<path>`. */
  nsenterArgv(i: number): string[];
  /** Runs argv in namespace i (nsenter, not `ip netns exec`: that remounts /sys, hiding the cgroup mounts from runc). */
  exec(i: number, argv: readonly string[]): SpawnSyncReturns<string>;
  /** Drops namespace i's traffic to and from the subnet (iptables rules inside the namespace). */
  cut(i: number): void;
  /** Removes exactly the rules cut(i) added. */
  heal(i: number): void;
  /** Deletes the namespaces (killing what still runs in them), the veths and the bridge. Safe to call twice. */
  cleanup(): void;
}

function run(cmd: string, args: readonly string[]): string {
  return execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 10_000 });
}

/** Best effort: for cleanup, where a thing already gone is fine. */
function tryRun(cmd: string, args: readonly string[]): void {
  spawnSync(cmd, args, { stdio: 'ignore', timeout: 10_000 });
}

const ipToInt = (ip: string) => ip.split('.').reduce((n, o) => n * 256 + Number(o), 0);

/** Every IPv4 prefix the host has a route or an address in, as [first, last] integer ranges. */
function usedRanges(): Array<[number, number]> {
  const out: Array<[number, number]> = [];
  const prefixes = [
    ...run('ip', ['-4', '-o', 'addr', 'show']).split('\n').map((l) => /\binet (\S+)/.exec(l)?.[1]),
    ...run('ip', ['-4', 'route', 'show', 'table', 'all']).split('\n').map((l) => l.split(' ')[0] === 'local' || l.split(' ')[0] === 'broadcast' ? l.split(' ')[1] : l.split(' ')[0]),
  ];
  for (const p of prefixes) {
    const m = /^(\d+\.\d+\.\d+\.\d+)(?:\/(\d+))?$/.exec(p ?? '');
    if (!m) continue; // 'default' and the like: a default route overlaps everything but claims nothing
    const bits = m[2] === undefined ? 32 : Number(m[2]);
    const size = 2 ** (32 - bits);
    const first = Math.floor(ipToInt(m[1]!) / size) * size;
    out.push([first, first + size - 1]);
  }
  return out;
}

/** A random 10.100-199.x.0/24 that overlaps no route or address of the host (the test daemons' bridges use 10.200-249). */
function pickSubnet(): string {
  const used = usedRanges();
  for (let tries = 0; tries < 200; tries++) {
    const [a, b] = [...randomBytes(2)];
    const base = `10.${100 + (a! % 100)}.${b}`;
    const first = ipToInt(`${base}.0`);
    if (!used.some(([lo, hi]) => lo <= first + 255 && first <= hi)) return base;
  }
  throw new Error('netns: no free private /24 found');
}

/**
 * Traffic between two namespaces crosses the bridge, and with br_netfilter it crosses the host's
 * FORWARD chain too (whose policy may be DROP): this rule, first in the chain, lets it pass.
 */
const forwardRule = (bridge: string) => ['-i', bridge, '-o', bridge, '-j', 'ACCEPT'];

/** Synchronous removal of everything in `s`; used by cleanup(), the exit hook and the reaper. */
function removeNet(s: NetState): void {
  for (const ns of s.namespaces) {
    const path = `/var/run/netns/${ns}`;
    if (!existsSync(path)) continue;
    // A namespace lives on while a process is in it (and with it its veth end): whatever still
    // runs there was started by the test (a daemon whose own cleanup did not run).
    const pids = spawnSync('ip', ['netns', 'pids', ns], { encoding: 'utf8', timeout: 10_000 }).stdout ?? '';
    for (const p of pids.split('\n').map(Number).filter((n) => n > 1 && n !== process.pid)) signalPid(p, 'SIGKILL');
  }
  // The host's rule that lets the namespaces reach one another across the bridge (deleted until none is left).
  for (let i = 0; i < 5 && spawnSync('iptables', ['-w', '5', '-C', 'FORWARD', ...forwardRule(s.bridge)], { stdio: 'ignore', timeout: 10_000 }).status === 0; i++) {
    tryRun('iptables', ['-w', '5', '-D', 'FORWARD', ...forwardRule(s.bridge)]);
  }
  for (const v of s.hostVeths) if (existsSync(`/sys/class/net/${v}`)) tryRun('ip', ['link', 'del', v]);
  if (existsSync(`/sys/class/net/${s.bridge}`)) tryRun('ip', ['link', 'del', s.bridge]);
  for (const ns of s.namespaces) if (existsSync(`/var/run/netns/${ns}`)) tryRun('ip', ['netns', 'del', ns]);
}

class Netns implements NetnsHandle {
  readonly bridge: string;
  readonly subnet: string;
  readonly hostAddr: string;
  readonly names: string[] = [];
  private readonly base: string;
  private readonly state: NetState;
  private readonly cutRules = new Map<number, string[][]>();
  private reaperPid = 0;
  private cleaned = false;

  constructor() {
    const tag = randomBytes(3).toString('hex');
    this.bridge = `${NAME_PREFIX}${tag}`;
    this.base = pickSubnet();
    this.subnet = `${this.base}.0/24`;
    this.hostAddr = `${this.base}.1`;
    this.state = { bridge: this.bridge, namespaces: [], hostVeths: [] };
  }

  nsPath(i: number): string {
    return `/var/run/netns/${this.nameOf(i)}`;
  }

  addr(i: number): string {
    this.nameOf(i);
    return `${this.base}.${10 + i}`;
  }

  nsenterArgv(i: number): string[] {
    return ['nsenter', `--net=${this.nsPath(i)}`];
  }

  exec(i: number, argv: readonly string[]): SpawnSyncReturns<string> {
    const [cmd, ...rest] = [...this.nsenterArgv(i), ...argv];
    return spawnSync(cmd!, rest, { encoding: 'utf8', timeout: 30_000 });
  }

  /** Inserted first in the chains: nothing the daemon adds inside the namespace can ACCEPT ahead of them. */
  cut(i: number): void {
    if (this.cutRules.has(i)) return;
    const rules = [['OUTPUT', '-d', this.subnet, '-j', 'DROP'], ['INPUT', '-s', this.subnet, '-j', 'DROP']];
    this.cutRules.set(i, []);
    for (const r of rules) {
      this.iptables(i, ['-I', ...r]);
      this.cutRules.get(i)!.push(r);
    }
  }

  heal(i: number): void {
    for (const r of this.cutRules.get(i) ?? []) this.iptables(i, ['-D', ...r]);
    this.cutRules.delete(i);
  }

  private iptables(i: number, args: string[]): void {
    const r = this.exec(i, ['iptables', '-w', '5', ...args]);
    if (r.status !== 0) throw new Error(`iptables ${args.join(' ')} in ${this.nameOf(i)}: ${r.stderr || r.error?.message}`);
  }

  private nameOf(i: number): string {
    const n = this.names[i];
    if (n === undefined) throw new Error(`netns: no namespace ${i} (have ${this.names.length})`);
    return n;
  }

  /** Builds the bridge and the namespaces; the caller cleans up on a throw. */
  setup(count: number): void {
    for (let i = 0; i < count; i++) {
      this.state.namespaces.push(`${this.bridge}-n${i}`);
      this.state.hostVeths.push(`${this.bridge}h${i}`);
    }
    // Every name is known before anything is made: the reaper removes whatever exists of them.
    this.reaperPid = startReaper(this.state);
    run('ip', ['link', 'add', this.bridge, 'type', 'bridge']);
    run('ip', ['addr', 'add', `${this.hostAddr}/24`, 'dev', this.bridge]);
    run('ip', ['link', 'set', this.bridge, 'up']);
    run('iptables', ['-w', '5', '-I', 'FORWARD', ...forwardRule(this.bridge)]);
    for (let i = 0; i < count; i++) {
      const ns = this.state.namespaces[i]!;
      const host = this.state.hostVeths[i]!;
      const peer = `${this.bridge}p${i}`;
      this.names.push(ns);
      run('ip', ['netns', 'add', ns]);
      run('ip', ['link', 'add', host, 'type', 'veth', 'peer', 'name', peer, 'netns', ns]);
      run('ip', ['link', 'set', host, 'master', this.bridge]);
      run('ip', ['link', 'set', host, 'up']);
      const inNs = (...args: string[]) => {
        const r = this.exec(i, ['ip', ...args]);
        if (r.status !== 0) throw new Error(`ip ${args.join(' ')} in ${ns}: ${r.stderr || r.error?.message}`);
      };
      inNs('link', 'set', 'lo', 'up');
      inNs('addr', 'add', `${this.addr(i)}/24`, 'dev', peer);
      inNs('link', 'set', peer, 'up');
      inNs('route', 'add', 'default', 'via', this.hostAddr);
    }
  }

  cleanup(): void {
    this.cleanupSync();
  }

  /** Synchronous so it can run from process 'exit'. */
  cleanupSync(): void {
    if (this.cleaned) return;
    this.cleaned = true;
    cleanedUp(this);
    removeNet(this.state);
    if (this.reaperPid) signalPid(this.reaperPid, 'SIGKILL');
  }
}

/**
 * The detached watcher: removes the network if the test process dies without cleanup. It gets
 * the full list of names up front (those not made yet are skipped at removal).
 */
function startReaper(s: NetState): number {
  const child = spawn(NODE, [fileURLToPath(import.meta.url), String(process.pid), JSON.stringify(s)], { detached: true, stdio: 'ignore' });
  child.unref();
  return child.pid ?? 0;
}

/** Makes the bridge and `count` namespaces; removed by cleanup() or, at the latest, when the process exits. */
export function startNetns(opts: NetnsOptions): NetnsHandle {
  const h = new Netns();
  cleanupAtExit(h);
  try {
    h.setup(opts.count);
  } catch (err) {
    h.cleanupSync();
    throw err;
  }
  return h;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const [watchPid, stateJson] = process.argv.slice(2);
  const state = JSON.parse(stateJson ?? '{}') as NetState;
  // Ignore the signals a runner sends to the group we were started from.
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(sig, () => {});
  const alive = (pid: number) => {
    try {
      process.kill(pid, 0);
      return !/^\d+ \(.*\) Z /.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
    } catch {
      return false;
    }
  };
  const exists = () => existsSync(`/sys/class/net/${state.bridge}`) || state.namespaces.some((n) => existsSync(`/var/run/netns/${n}`));
  // Started before the network is made: it is done only once what it saw is gone again.
  let seen = false;
  const timer = setInterval(() => {
    const now = exists();
    seen ||= now;
    if (seen && !now) {
      clearInterval(timer);
      return;
    }
    if (!alive(Number(watchPid))) {
      clearInterval(timer);
      removeNet(state);
    }
  }, 500);
}

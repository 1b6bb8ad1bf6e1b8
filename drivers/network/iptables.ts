// The engine's iptables rules, laid out like the reference daemon's: its own chains in the filter
// table (ENGINE, ENGINE-ISOLATION-STAGE-1/2, ENGINE-USER) and the nat table (ENGINE), jumps to
// them from the built-in chains, and per bridge the FORWARD accepts, inter-container policy
// (icc), isolation from other bridges and outbound MASQUERADE. Every step is idempotent: a rule
// is added only when `iptables -C` says it is missing, and removal tolerates what is gone.
import { isCode } from '../../lib/errors.ts';
import { run } from './run.ts';

export type Table = 'filter' | 'nat';

export interface IptablesRule {
  table: Table;
  chain: string;
  args: string[];
  /** Put the rule first in its chain (-I chain 1) instead of appending (-A). */
  insert?: boolean;
}

export interface ChainNames {
  engine: string;
  isolation1: string;
  isolation2: string;
  user: string;
}

/** Chain names for a prefix: "ENGINE" gives ENGINE, ENGINE-ISOLATION-STAGE-1/2, ENGINE-USER. */
export function chainNames(prefix = 'ENGINE'): ChainNames {
  return {
    engine: prefix,
    isolation1: `${prefix}-ISOLATION-STAGE-1`,
    isolation2: `${prefix}-ISOLATION-STAGE-2`,
    user: `${prefix}-USER`,
  };
}

export interface BaseRulesConfig {
  chainPrefix: string;
  /** 6: the rules for ip6tables (loopback is ::1). */
  family?: 4 | 6;
  /** With the userland proxy, loopback-destined traffic is left to the proxy (no nat for 127/8). */
  userlandProxy: boolean;
}

export interface BridgeRulesConfig {
  chainPrefix: string;
  bridge: string;
  /** The bridge network's subnet, e.g. "172.17.0.0/16". */
  subnet: string;
  icc: boolean;
  ipMasq: boolean;
  /** An internal network: nothing leaves it and nothing from outside reaches it (the host still does). */
  internal?: boolean;
  /** 6: rules for the network's IPv6 subnet, programmed with ip6tables. */
  family?: 4 | 6;
}

const CHAINS_BY_TABLE = (c: ChainNames): Array<[Table, string]> => [
  ['filter', c.engine],
  ['filter', c.isolation1],
  ['filter', c.isolation2],
  ['filter', c.user],
  ['nat', c.engine],
];

/** Rules shared by every bridge: jumps into our chains and their trailing RETURNs. */
export function baseRules(cfg: BaseRulesConfig): IptablesRule[] {
  const c = chainNames(cfg.chainPrefix);
  const local = ['-m', 'addrtype', '--dst-type', 'LOCAL', '-j', c.engine];
  return [
    // Inserted in this order so that FORWARD starts with the USER jump, then isolation.
    { table: 'filter', chain: 'FORWARD', args: ['-j', c.isolation1], insert: true },
    { table: 'filter', chain: 'FORWARD', args: ['-j', c.user], insert: true },
    { table: 'filter', chain: c.user, args: ['-j', 'RETURN'] },
    { table: 'filter', chain: c.isolation1, args: ['-j', 'RETURN'] },
    { table: 'filter', chain: c.isolation2, args: ['-j', 'RETURN'] },
    { table: 'nat', chain: 'PREROUTING', args: local },
    { table: 'nat', chain: 'OUTPUT', args: cfg.userlandProxy ? ['!', '-d', cfg.family === 6 ? '::1/128' : '127.0.0.0/8', ...local] : local },
  ];
}

/** The other form of the nat OUTPUT jump, removed when --userland-proxy flips. */
export function staleBaseRules(cfg: BaseRulesConfig): IptablesRule[] {
  return baseRules({ ...cfg, userlandProxy: !cfg.userlandProxy }).filter((r) => r.table === 'nat' && r.chain === 'OUTPUT');
}

/** Rules one bridge network needs. */
export function bridgeRules(cfg: BridgeRulesConfig): IptablesRule[] {
  const c = chainNames(cfg.chainPrefix);
  const br = cfg.bridge;
  const rules: IptablesRule[] = [
    { table: 'filter', chain: 'FORWARD', args: ['-o', br, '-m', 'conntrack', '--ctstate', 'RELATED,ESTABLISHED', '-j', 'ACCEPT'] },
    { table: 'filter', chain: 'FORWARD', args: ['-o', br, '-j', c.engine] },
    ...(cfg.internal ? [] : [outboundRule(br)]),
    { table: 'filter', chain: 'FORWARD', args: ['-i', br, '-o', br, '-j', cfg.icc ? 'ACCEPT' : 'DROP'] },
    { table: 'filter', chain: c.isolation1, args: ['-i', br, '!', '-o', br, '-j', c.isolation2], insert: true },
    { table: 'filter', chain: c.isolation2, args: ['-o', br, '-j', 'DROP'], insert: true },
    ...(cfg.internal ? internalRules(cfg) : []),
    { table: 'nat', chain: c.engine, args: ['-i', br, '-j', 'RETURN'], insert: true },
  ];
  if (cfg.ipMasq && !cfg.internal) rules.push(masqueradeRule(cfg));
  return rules;
}

/** Containers of the bridge reach other interfaces (the way out). */
function outboundRule(br: string): IptablesRule {
  return { table: 'filter', chain: 'FORWARD', args: ['-i', br, '!', '-o', br, '-j', 'ACCEPT'] };
}

/** As the reference daemon isolates an internal network: no packet leaves its subnet or enters it from elsewhere. */
function internalRules(cfg: BridgeRulesConfig): IptablesRule[] {
  const c = chainNames(cfg.chainPrefix);
  return [
    // Spelled in the order `iptables -S` prints them, so the snapshot comparison finds them.
    { table: 'filter', chain: c.isolation1, args: ['!', '-d', cfg.subnet, '-i', cfg.bridge, '-j', 'DROP'], insert: true },
    { table: 'filter', chain: c.isolation1, args: ['!', '-s', cfg.subnet, '-o', cfg.bridge, '-j', 'DROP'], insert: true },
  ];
}

/** Rules that must NOT be present for this configuration (the other icc verdict; masquerade when off). */
export function staleBridgeRules(cfg: BridgeRulesConfig): IptablesRule[] {
  const stale: IptablesRule[] = [
    { table: 'filter', chain: 'FORWARD', args: ['-i', cfg.bridge, '-o', cfg.bridge, '-j', cfg.icc ? 'DROP' : 'ACCEPT'] },
    ...(cfg.internal ? [outboundRule(cfg.bridge)] : internalRules(cfg)),
  ];
  if (!cfg.ipMasq || cfg.internal) stale.push(masqueradeRule(cfg));
  return stale;
}

export function masqueradeRule(cfg: { subnet: string; bridge: string }): IptablesRule {
  return { table: 'nat', chain: 'POSTROUTING', args: ['-s', cfg.subnet, '!', '-o', cfg.bridge, '-j', 'MASQUERADE'] };
}

/** Arguments on an iptables-restore line: one with blanks or quotes is quoted. */
function restoreArgs(args: readonly string[]): string {
  return args.map((a) => (/[\s"']/.test(a) ? `"${a.replace(/(["\\])/g, '\\$1')}"` : a)).join(' ');
}

/** `-A CHAIN args...` as `iptables -S` prints it. */
export function ruleLine(r: IptablesRule): string {
  return `-A ${r.chain} ${r.args.join(' ')}`;
}

export class Iptables {
  private readonly bin: string;
  private readonly family: 4 | 6;
  constructor(opts: { bin?: string; family?: 4 | 6 } = {}) {
    this.bin = opts.bin ?? 'iptables';
    this.family = opts.family ?? 4;
  }

  /** The table as `iptables -S` prints it, one line per chain/rule. */
  async snapshot(table: Table, signal?: AbortSignal): Promise<Set<string>> {
    const out = await this.ipt(['-t', table, '-S'], signal);
    return new Set(out.split('\n').map((l) => l.trim()).filter(Boolean));
  }

  async exists(r: IptablesRule, signal?: AbortSignal): Promise<boolean> {
    try {
      await this.ipt(['-t', r.table, '-C', r.chain, ...r.args], signal);
      return true;
    } catch (err) {
      // -C exits 1 for a missing rule and also (NotFound) for a missing chain.
      if (isCode(err, 'NotFound') || (err as { exitCode?: number }).exitCode === 1) return false;
      throw err;
    }
  }

  async ensureChains(prefix: string, signal?: AbortSignal): Promise<string[]> {
    const created: string[] = [];
    const snaps = new Map<Table, Set<string>>();
    for (const [table, chain] of CHAINS_BY_TABLE(chainNames(prefix))) {
      let snap = snaps.get(table);
      if (!snap) snaps.set(table, (snap = await this.snapshot(table, signal)));
      if (snap.has(`-N ${chain}`)) continue;
      try {
        await this.ipt(['-t', table, '-N', chain], signal);
        created.push(`${table}/${chain}`);
      } catch (err) {
        if (!isCode(err, 'AlreadyExists')) throw err;
      }
    }
    return created;
  }

  /** Add each rule that is missing. Returns the rules added. */
  async ensureRules(rules: IptablesRule[], signal?: AbortSignal): Promise<IptablesRule[]> {
    const snaps = await this.snapshots(rules, signal);
    const added: IptablesRule[] = [];
    for (const r of rules) {
      if (snaps.get(r.table)!.has(ruleLine(r))) continue;
      // Not in the snapshot as we spell it: ask iptables, which compares rules semantically.
      if (await this.exists(r, signal)) continue;
      await this.ipt(['-t', r.table, r.insert ? '-I' : '-A', r.chain, ...(r.insert ? ['1'] : []), ...r.args], signal);
      added.push(r);
    }
    return added;
  }

  /**
   * Add rules spelled exactly as `iptables -S` prints them that the caller knows are not there (a
   * published port's, for a host port it has just claimed: the claim's record is what says its
   * rules exist), by one `iptables-restore --noflush` without reading the tables first (instead of
   * a -C and an -A per rule). Should that fail, the rule-by-rule path decides.
   */
  async addSpelled(rules: IptablesRule[], signal?: AbortSignal): Promise<void> {
    if (rules.length === 0) return;
    try {
      await this.restore(rules.map((r) => ({ table: r.table, line: `${r.insert ? `-I ${r.chain} 1` : `-A ${r.chain}`} ${restoreArgs(r.args)}` })), signal);
    } catch (err) {
      if (isCode(err, 'Canceled')) throw err;
      await this.ensureRules(rules, signal);
    }
  }

  /**
   * `removeRules` for rules spelled exactly as `iptables -S` prints them, that the caller added (a
   * published port's): deleted by one `iptables-restore --noflush`, without reading the tables
   * first. Should that fail (one of them is not there, or a copy is), the rule-by-rule path removes
   * whatever is left, every copy. Returns how many were deleted.
   */
  async removeSpelled(rules: IptablesRule[], signal?: AbortSignal): Promise<number> {
    const unique = [...new Map(rules.map((r) => [`${r.table} ${ruleLine(r)}`, r])).values()];
    if (unique.length === 0) return 0;
    try {
      await this.restore(unique.map((r) => ({ table: r.table, line: `-D ${r.chain} ${restoreArgs(r.args)}` })), signal);
    } catch (err) {
      if (isCode(err, 'Canceled')) throw err;
      return this.removeRules(unique, signal);
    }
    // A copy added behind our back would still be there: rare, and -C is one more run per rule.
    return unique.length;
  }

  /** One `iptables-restore --noflush` of these lines, grouped by table (each table's block commits atomically). */
  private async restore(lines: Array<{ table: Table; line: string }>, signal?: AbortSignal): Promise<void> {
    const byTable = new Map<Table, string[]>();
    for (const { table, line } of lines) byTable.set(table, [...(byTable.get(table) ?? []), line]);
    const input = [...byTable].map(([t, ls]) => `*${t}\n${ls.join('\n')}\nCOMMIT\n`).join('');
    await run(`${this.bin}-restore`, ['-w', '--noflush'], { input, signal });
  }

  /** Delete every copy of each rule; missing rules and chains are fine. Returns how many were deleted. */
  async removeRules(rules: IptablesRule[], signal?: AbortSignal): Promise<number> {
    let n = 0;
    for (const r of rules) {
      while (await this.exists(r, signal)) {
        try {
          await this.ipt(['-t', r.table, '-D', r.chain, ...r.args], signal);
          n++;
        } catch (err) {
          if (isCode(err, 'NotFound')) break;
          throw err;
        }
      }
    }
    return n;
  }

  /** Remove the jumps into our chains, then flush and delete the chains. */
  async removeChains(prefix: string, signal?: AbortSignal): Promise<void> {
    const base = { chainPrefix: prefix, userlandProxy: true, family: this.family };
    await this.removeRules(baseRules(base).concat(staleBaseRules(base)), signal);
    for (const [table, chain] of CHAINS_BY_TABLE(chainNames(prefix))) {
      for (const op of ['-F', '-X']) {
        try {
          await this.ipt(['-t', table, op, chain], signal);
        } catch (err) {
          if (!isCode(err, 'NotFound')) throw err;
        }
      }
    }
  }

  /** The FORWARD chain's default policy ("ACCEPT"/"DROP"). */
  async forwardPolicy(signal?: AbortSignal): Promise<string> {
    const line = (await this.ipt(['-t', 'filter', '-S', 'FORWARD'], signal)).split('\n')[0] ?? '';
    return line.startsWith('-P FORWARD ') ? line.slice('-P FORWARD '.length).trim() : 'ACCEPT';
  }

  async setForwardPolicy(policy: 'ACCEPT' | 'DROP', signal?: AbortSignal): Promise<void> {
    await this.ipt(['-t', 'filter', '-P', 'FORWARD', policy], signal);
  }

  private async snapshots(rules: IptablesRule[], signal?: AbortSignal): Promise<Map<Table, Set<string>>> {
    const tables = [...new Set(rules.map((r) => r.table))];
    const snaps = await Promise.all(tables.map((t) => this.snapshot(t, signal)));
    return new Map(tables.map((t, i) => [t, snaps[i]]));
  }

  private ipt(args: string[], signal?: AbortSignal): Promise<string> {
    // -w: wait for the xtables lock rather than fail when another program holds it.
    return run(this.bin, ['-w', ...args], { signal });
  }
}

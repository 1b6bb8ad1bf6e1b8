// Network reconciler: makes the host match each network record. For a bridge network that is the
// Linux bridge (address, MTU, up), ip_forward, and the engine's iptables chains and rules; it
// looks again every 30 s and puts back whatever someone removed. A network marked removed is torn
// down, its address records dropped, and the record deleted. Address records whose container is
// gone (a crash between removal and release) are collected here too.
import type { Logger } from 'pino';
import { isCode } from '../../lib/errors.ts';
import { KIND, type Resource } from '../../store/types.ts';
import {
  NETWORK_KIND,
  type AppliedBridge,
  type IpamAllocationSpec,
  type IpamAllocationStatus,
  type NetworkSpec,
  type NetworkStatus,
} from '../../store/network-types.ts';
import type { NetworkDriverPort, NetworkStore } from './deps.ts';

export const RECHECK_MS = 30_000;

export interface ReconcileContext {
  signal: AbortSignal;
  log: Logger;
}

type NetworkResource = Resource<NetworkSpec, NetworkStatus>;

export class NetworkReconciler {
  readonly name = 'network';
  readonly kind = NETWORK_KIND.network;
  private readonly store: NetworkStore;
  private readonly driver: NetworkDriverPort;
  private readonly recheckMs: number;

  constructor(store: NetworkStore, driver: NetworkDriverPort, opts: { recheckMs?: number } = {}) {
    this.store = store;
    this.driver = driver;
    this.recheckMs = opts.recheckMs ?? RECHECK_MS;
  }

  async reconcile(id: string, ctx: ReconcileContext): Promise<void | { requeueAfter: number }> {
    const r = this.store.get<NetworkSpec, NetworkStatus>(NETWORK_KIND.network, id);
    if (!r) return;
    if (r.spec.desired === 'removed') {
      await this.teardown(r, ctx);
      return;
    }
    if (r.spec.driver !== 'bridge' || !r.spec.bridge) {
      if (r.status.phase !== 'ready' || r.status.observedGeneration < r.generation) {
        this.writeStatus(r, { phase: 'ready', error: '', observedGeneration: r.generation });
      }
      return;
    }
    try {
      const repairs = await this.converge(r, ctx);
      this.collectOrphans(r.spec.id, ctx.log);
      const applied = appliedOf(r);
      const changed =
        repairs.length > 0 ||
        r.status.phase !== 'ready' ||
        r.status.error !== '' ||
        r.status.observedGeneration < r.generation ||
        JSON.stringify(r.status.applied) !== JSON.stringify(applied);
      // Write only on change: an unchanged status must not wake this loop through the watch.
      if (changed) {
        const at = new Date().toISOString();
        this.writeStatus(r, {
          phase: 'ready',
          error: '',
          observedGeneration: r.generation,
          applied,
          ...(repairs.length > 0 ? { lastRepair: repairs.join('; '), lastRepairAt: at } : {}),
        });
        if (repairs.length > 0) ctx.log.info({ network: r.spec.name, repairs }, 'network host state repaired');
      }
      return { requeueAfter: this.recheckMs };
    } catch (err) {
      if (isCode(err, 'Canceled')) throw err;
      const message = err instanceof Error ? err.message : String(err);
      if (r.status.phase !== 'failed' || r.status.error !== message) {
        this.writeStatus(r, { phase: 'failed', error: message, observedGeneration: r.generation });
      }
      throw err;
    }
  }

  /** Bring bridge, ip_forward and iptables to the spec; returns what had to change. */
  private async converge(r: NetworkResource, ctx: ReconcileContext): Promise<string[]> {
    const b = r.spec.bridge!;
    const pool = r.spec.ipam.Config[0]!;
    const prefixLen = pool.Subnet.split('/')[1];
    const repairs: string[] = [];
    const prev = r.status.applied;
    const want = appliedOf(r);

    // The spec moved (new bridge name, subnet or chains): take the old programming away first.
    if (prev && (prev.bridgeName !== want.bridgeName || prev.subnet !== want.subnet || prev.chainPrefix !== want.chainPrefix)) {
      if (prev.iptables) await this.driver.removeIptables({ ...prev, bridge: prev.bridgeName }, { chains: prev.chainPrefix !== want.chainPrefix }, ctx.signal);
      if (prev.bridgeName !== want.bridgeName) await this.driver.deleteBridge(prev.bridgeName, ctx.signal);
      repairs.push(`removed previous ${prev.bridgeName} ${prev.subnet}`);
    } else if (prev?.iptables && !want.iptables) {
      await this.driver.removeIptables({ ...prev, bridge: prev.bridgeName }, { chains: false }, ctx.signal);
      repairs.push('removed iptables rules');
    }

    const br = await this.driver.ensureBridge({ name: b.bridgeName, address: `${pool.Gateway}/${prefixLen}`, mtu: b.mtu }, ctx.signal);
    if (br.created) repairs.push(`created bridge ${b.bridgeName}`);
    if (br.repaired.length > 0) repairs.push(`bridge ${b.bridgeName}: ${br.repaired.join(', ')}`);

    if (b.ipForward && (await this.driver.enableIpForward())) {
      repairs.push('enabled ip_forward');
      // As the reference daemon does: a host we just turned into a router forwards only what our rules accept.
      if (b.iptables) await this.driver.setForwardPolicy('DROP', ctx.signal);
    }

    if (b.iptables) {
      const n = await this.driver.ensureIptables(
        { chainPrefix: b.chainPrefix, bridge: b.bridgeName, subnet: pool.Subnet, icc: b.icc, ipMasq: b.ipMasq, userlandProxy: b.userlandProxy },
        ctx.signal,
      );
      if (n > 0) repairs.push(`iptables: ${n} changes`);
    }
    return repairs;
  }

  private async teardown(r: NetworkResource, ctx: ReconcileContext): Promise<void> {
    const applied = r.status.applied ?? (r.spec.bridge ? appliedOf(r) : undefined);
    if (applied) {
      if (applied.iptables) {
        await this.driver.removeIptables({ ...applied, bridge: applied.bridgeName }, { chains: false }, ctx.signal);
      }
      await this.driver.deleteBridge(applied.bridgeName, ctx.signal);
    }
    this.store.transaction(() => {
      for (const a of this.allocations(r.spec.id)) this.store.delete(NETWORK_KIND.ipamAllocation, a.name);
      this.store.delete(NETWORK_KIND.network, r.name);
    });
    ctx.log.info({ network: r.spec.name }, 'network removed');
  }

  private collectOrphans(networkId: string, log: Logger): void {
    const orphans = this.allocations(networkId).filter((a) => !this.store.get(KIND.container, a.spec.containerId));
    if (orphans.length === 0) return;
    this.store.transaction(() => {
      for (const a of orphans) this.store.delete(NETWORK_KIND.ipamAllocation, a.name);
    });
    log.info({ addresses: orphans.map((a) => a.spec.address) }, 'released addresses of removed containers');
  }

  private allocations(networkId: string): Resource<IpamAllocationSpec, IpamAllocationStatus>[] {
    return this.store
      .list<IpamAllocationSpec, IpamAllocationStatus>(NETWORK_KIND.ipamAllocation)
      .filter((a) => a.spec.networkId === networkId);
  }

  private writeStatus(r: NetworkResource, patch: Partial<NetworkStatus>): void {
    try {
      this.store.updateStatus<NetworkSpec, NetworkStatus>(NETWORK_KIND.network, r.name, (s) => ({ ...s, ...patch }));
    } catch (err) {
      if (!isCode(err, 'NotFound')) throw err;
    }
  }
}

function appliedOf(r: NetworkResource): AppliedBridge {
  const b = r.spec.bridge!;
  return {
    bridgeName: b.bridgeName,
    subnet: r.spec.ipam.Config[0]!.Subnet,
    chainPrefix: b.chainPrefix,
    iptables: b.iptables,
    icc: b.icc,
    ipMasq: b.ipMasq,
  };
}

// Network reconciler: makes the host match each network record. For a bridge network that is the
// Linux bridge (address, MTU, up), ip_forward, and the engine's iptables chains and rules; it
// looks again every 30 s and puts back whatever someone removed. A network marked removed is torn
// down, its address records dropped, and the record deleted. Address records whose container is
// gone (a crash between removal and release) are collected here too.
//
// The lifecycle is the machine in machine.ts, driven with the pure `transition` function through
// controllers/machine-driver.ts: each reconcile reads the record, sends OBSERVED (the facts, the
// clock read once) and the event the spec calls for (APPLY or REMOVE), lets the machine run the
// effects provided here (converge, teardown), and writes status from where the machine ended.
// The 30 s drift re-check is the machine's `recheck` delay, which the driver turns into
// `requeueAfter`. The snapshot and its timer are held in memory between reconciles; after a
// restart the state is restored from status (its phase) and the next APPLY brings the timer back.
import { Endpoints } from '../../store/kinds/endpoint.ts';
import type { Logger } from 'pino';
import { fromPromise, type SnapshotFrom } from 'xstate';
import { topState } from '../../controllers/machine-driver.ts';
import { MachineHost, type Held } from '../../controllers/machine-host.ts';
import { EngineError, isCode } from '../../lib/errors.ts';
import { macFromIpv4 } from '../../lib/cidr.ts';
import { ipv4Pool, ipv6Pool, isBridged, type AppliedBridge, type NetworkStatus, Networks, type NetworkResource } from '../../store/kinds/network.ts';
import type { NetworkDriverPort, NetworkStore } from './deps.ts';
import type { NetworkDns } from './dns.ts';
import { releaseNetwork, releaseOrphans } from './ipam.ts';
import { networkLifecycle, RECHECK_MS, restoredContext, settledStateOf, type EffectInput, type NetworkEvent, type NetworkFacts } from './machine.ts';

export { RECHECK_MS } from './machine.ts';

export interface ReconcileContext {
  signal: AbortSignal;
  log: Logger;
}

type Machine = ReturnType<typeof networkLifecycle.provide>;
type Snapshot = SnapshotFrom<Machine>;


export class NetworkReconciler {
  readonly name = 'network';
  readonly kind = Networks.name;
  private readonly store: NetworkStore;
  private readonly driver: NetworkDriverPort;
  private readonly recheckMs: number;
  /** Each network's machine between reconciles (the recheck's timer); rebuilt from status when missing. */
  private readonly machines: MachineHost<Machine>;
  private readonly log: Logger | undefined;

  private readonly dns: NetworkDns | undefined;

  constructor(store: NetworkStore, driver: NetworkDriverPort, opts: { recheckMs?: number; dns?: NetworkDns; log?: Logger } = {}) {
    this.store = store;
    this.driver = driver;
    this.dns = opts.dns;
    this.log = opts.log;
    this.recheckMs = opts.recheckMs ?? RECHECK_MS;
    const machine = networkLifecycle.provide({
      actors: {
        converge: fromPromise<string[], EffectInput>(({ input, signal }) => this.convergeEffect(input.id, signal)),
        teardown: fromPromise<void, EffectInput>(({ input, signal }) => this.teardownEffect(input.id, signal)),
      },
    });
    this.machines = new MachineHost(machine, { name: 'network' });
  }

  /** Daemon shutdown: the effects under way are aborted. */
  stop(): void {
    this.machines.stop();
  }

  async reconcile(id: string, ctx: ReconcileContext): Promise<void | { requeueAfter: number }> {
    const r = this.store.get(Networks, id);
    if (!r) {
      this.machines.forget(id);
      return;
    }
    const facts = this.facts(r);
    const held = this.machines.current(id, () => this.restore(r, facts));
    const events: NetworkEvent[] = [{ type: 'OBSERVED', facts }, r.spec.desired === 'removed' ? { type: 'REMOVE' } : { type: 'APPLY' }];
    // The clock is read once per reconcile (a fact): the recheck is due recheckMs after it. A pass
    // cut off half-way (the controller gave up waiting) throws: what its effect did is unknown.
    const res = await this.machines.run(id, held, events, { signal: ctx.signal, now: () => facts.now });
    this.machines.keep(id, res, !this.store.get(Networks, id));
    const state = topState(res.snapshot);
    if (state === 'removed') ctx.log.info({ network: r.spec.name }, 'network removed');
    if (state === 'ready' && r.spec.bridge) this.collectOrphans(r.spec.id, ctx.log);
    return this.writeOutcome(r, res.snapshot, ctx, res.requeueAfter);
  }

  /** The spec's wishes and the clock, as the machine reads them. */
  private facts(r: NetworkResource): NetworkFacts {
    return { id: r.name, now: Date.now(), bridge: isBridged(r.spec) && !!r.spec.bridge, recheckMs: this.recheckMs };
  }

  /** The state the network's status records (after a restart, or a machine never seen). */
  private restore(r: NetworkResource, facts: NetworkFacts): Held<Machine> {
    const snapshot = this.machines.machine.resolveState({ value: settledStateOf(r.status.phase), context: restoredContext(facts) }) as Snapshot;
    return { snapshot, timers: [] };
  }

  /** Status from where the machine ended (what `r`, read at the start, said is the baseline). */
  private writeOutcome(r: NetworkResource, snap: Snapshot, ctx: ReconcileContext, requeueAfter: number | undefined): void | { requeueAfter: number } {
    const state = topState(snap);
    const c = snap.context;
    switch (state) {
      case 'removed':
        return;
      case 'ready':
        if (!c.bridge) {
          if (r.status.phase !== 'ready' || r.status.observedGeneration < r.generation) {
            this.writeStatus(r, { phase: 'ready', error: '', observedGeneration: r.generation });
          }
          return;
        }
        this.writeReady(r, c.repairs, ctx);
        return requeueAfter === undefined ? undefined : { requeueAfter };
      case 'failed':
        if (r.status.phase !== 'failed' || r.status.error !== c.error) {
          this.writeStatus(r, { phase: 'failed', error: c.error, observedGeneration: r.generation });
        }
        throw c.cause;
      default:
        // Cancelled while applying (pending), or a teardown that failed (removing): status stays.
        throw c.cause ?? new Error(`network ${r.name}: reconcile ended in ${state}`);
    }
  }

  /** A converged bridge network: ready, with what had to be put back. */
  private writeReady(r: NetworkResource, repairs: string[], ctx: ReconcileContext): void {
    const applied = appliedOf(r);
    const changed =
      repairs.length > 0 ||
      r.status.phase !== 'ready' ||
      r.status.error !== '' ||
      r.status.observedGeneration < r.generation ||
      JSON.stringify(r.status.applied) !== JSON.stringify(applied);
    // Write only on change: an unchanged status must not wake this loop through the watch.
    if (!changed) return;
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

  // ---- effects (the machine's named actors) -------------------------------------------------

  private async convergeEffect(id: string, signal: AbortSignal): Promise<string[]> {
    const r = this.store.get(Networks, id);
    if (!r) throw new EngineError('NotFound', `network ${id} not found`);
    return this.converge(r, signal);
  }

  private async teardownEffect(id: string, signal: AbortSignal): Promise<void> {
    const r = this.store.get(Networks, id);
    if (r) await this.teardown(r, signal);
  }

  /** Host ends of the endpoints plugged into this network now (the endpoint records say which). */
  private pluggedVeths(networkId: string): string[] {
    return this.store
      .list(Endpoints)
      .filter((e) => e.spec.networkId === networkId && e.status.phase === 'attached' && e.status.hostVeth)
      .map((e) => e.status.hostVeth);
  }

  /** Bring bridge, ip_forward and iptables to the spec; returns what had to change. */
  private async converge(r: NetworkResource, signal: AbortSignal): Promise<string[]> {
    const b = r.spec.bridge!;
    const pool = ipv4Pool(r.spec)!;
    const prefixLen = pool.Subnet.split('/')[1];
    const pool6 = ipv6Pool(r.spec);
    const repairs: string[] = [];
    const prev = r.status.applied;
    const want = appliedOf(r);

    // The spec moved (new bridge name, subnet or chains): take the old programming away first.
    if (prev && (prev.bridgeName !== want.bridgeName || prev.subnet !== want.subnet || prev.chainPrefix !== want.chainPrefix)) {
      if (prev.iptables) await this.driver.removeIptables({ ...prev, bridge: prev.bridgeName }, { chains: prev.chainPrefix !== want.chainPrefix }, signal);
      if (prev.bridgeName !== want.bridgeName) await this.driver.deleteBridge(prev.bridgeName, signal);
      repairs.push(`removed previous ${prev.bridgeName} ${prev.subnet}`);
    } else if (prev?.iptables && !want.iptables) {
      await this.driver.removeIptables({ ...prev, bridge: prev.bridgeName }, { chains: false }, signal);
      repairs.push('removed iptables rules');
    }
    if (prev?.ip6tables && prev.subnet6 && (!want.ip6tables || prev.subnet6 !== want.subnet6 || prev.bridgeName !== want.bridgeName)) {
      await this.driver.removeIptables({ ...prev, subnet: prev.subnet6, bridge: prev.bridgeName, family: 6 }, { chains: false }, signal);
      repairs.push('removed ip6tables rules');
    }

    const address6 = pool6 ? `${pool6.Gateway}/${pool6.Subnet.split('/')[1]}` : undefined;
    // An overlay's own address here (the routing mesh's): on the bridge, with the MAC the other nodes were told.
    const host = r.spec.overlay?.hostAddress;
    const own = host ? { extra: host, mac: macFromIpv4(host.split('/')[0]!) } : {};
    const br = await this.driver.ensureBridge({ name: b.bridgeName, address: `${pool.Gateway}/${prefixLen}`, address6, mtu: b.mtu, ...own }, signal);
    if (br.created) repairs.push(`created bridge ${b.bridgeName}`);
    if (br.repaired.length > 0) repairs.push(`bridge ${b.bridgeName}: ${br.repaired.join(', ')}`);
    // An overlay's VXLAN device, a port of the bridge (what runs on other nodes: reconcilers/node/overlay.ts).
    const ov = r.spec.overlay;
    if (ov) {
      if (prev?.vxlan && prev.vxlan !== ov.vxlanName) await this.driver.deleteVxlan(prev.vxlan, signal);
      const vx = await this.driver.ensureVxlan({ name: ov.vxlanName, vni: ov.vni, local: ov.local, port: ov.port, bridge: b.bridgeName, mtu: b.mtu }, signal);
      if (vx.length) repairs.push(`vxlan ${ov.vxlanName}: ${vx.join(', ')}`);
    }
    // Its containers' interfaces: ports of the bridge again when it was made anew (or they were taken off it).
    let ports = 0;
    for (const veth of this.pluggedVeths(r.spec.id)) if (await this.driver.ensureBridgePort(b.bridgeName, veth, signal)) ports++;
    if (ports > 0) repairs.push(`${ports} container interface(s) back on ${b.bridgeName}`);

    if (b.ipForward && (await this.driver.enableIpForward())) {
      repairs.push('enabled ip_forward');
      // As the reference daemon does: a host we just turned into a router forwards only what our rules accept.
      if (b.iptables) await this.driver.setForwardPolicy('DROP', signal);
    }
    if (pool6 && b.ipForward && (await this.driver.enableIpv6Forward())) repairs.push('enabled IPv6 forwarding');

    if (this.dns) {
      // Name resolution is not worth failing the network for (say, port 53 of the gateway taken).
      const started = await this.dns.ensure(r).catch((err) => {
        this.log?.warn({ err, network: r.spec.name }, 'embedded DNS could not start');
        return false;
      });
      if (started) repairs.push('started embedded DNS');
    }

    if (b.iptables) {
      const n = await this.driver.ensureIptables(
        { chainPrefix: b.chainPrefix, bridge: b.bridgeName, subnet: pool.Subnet, icc: b.icc, ipMasq: b.ipMasq, userlandProxy: b.userlandProxy, internal: r.spec.internal },
        signal,
      );
      if (n > 0) repairs.push(`iptables: ${n} changes`);
    }
    if (b.iptables && b.ip6tables && pool6) {
      const n = await this.driver.ensureIptables(
        { chainPrefix: b.chainPrefix, bridge: b.bridgeName, subnet: pool6.Subnet, icc: b.icc, ipMasq: b.ipMasq, userlandProxy: b.userlandProxy, internal: r.spec.internal, family: 6 },
        signal,
      );
      if (n > 0) repairs.push(`ip6tables: ${n} changes`);
    }
    return repairs;
  }

  private async teardown(r: NetworkResource, signal: AbortSignal): Promise<void> {
    await this.dns?.close(r.spec.id);
    const applied = r.status.applied ?? (r.spec.bridge ? appliedOf(r) : undefined);
    if (applied) {
      if (applied.iptables) {
        await this.driver.removeIptables({ ...applied, bridge: applied.bridgeName }, { chains: false }, signal);
      }
      if (applied.ip6tables && applied.subnet6) {
        await this.driver.removeIptables({ ...applied, subnet: applied.subnet6, bridge: applied.bridgeName, family: 6 }, { chains: false }, signal);
      }
      if (applied.vxlan) await this.driver.deleteVxlan(applied.vxlan, signal);
      await this.driver.deleteBridge(applied.bridgeName, signal);
    }
    this.store.transaction(() => {
      releaseNetwork(this.store, r.spec.id);
      this.store.delete(Networks, r.name);
    });
  }

  private collectOrphans(networkId: string, log: Logger): void {
    const orphans = releaseOrphans(this.store, networkId);
    if (orphans.length === 0) return;
    log.info({ addresses: orphans.map((a) => a.spec.address) }, 'released addresses of removed containers');
  }

  private writeStatus(r: NetworkResource, patch: Partial<NetworkStatus>): void {
    try {
      this.store.updateStatus(Networks, r.name, (s) => ({ ...s, ...patch }));
    } catch (err) {
      if (!isCode(err, 'NotFound')) throw err;
    }
  }
}

function appliedOf(r: NetworkResource): AppliedBridge {
  const b = r.spec.bridge!;
  const pool6 = ipv6Pool(r.spec);
  return {
    bridgeName: b.bridgeName,
    subnet: ipv4Pool(r.spec)!.Subnet,
    chainPrefix: b.chainPrefix,
    iptables: b.iptables,
    icc: b.icc,
    ipMasq: b.ipMasq,
    ...(r.spec.overlay ? { vxlan: r.spec.overlay.vxlanName } : {}),
    // Only when there is IPv6: the status of a v4-only network keeps its old shape.
    ...(pool6 ? { subnet6: pool6.Subnet, ip6tables: b.iptables && !!b.ip6tables } : {}),
  };
}

// Endpoint reconciler: keeps each endpoint record (a container on a network beside its NetworkMode
// one) plugged into the container's current run: attached while the container runs, detached when
// it does not (the interface went with the run's namespace), plugged again into each new run, and,
// once the spec says removed or the container is gone, unplugged, its address freed and the record
// deleted. The lifecycle is machine.ts driven with the pure `transition` function
// (controllers/machine-driver.ts), as the volume and network reconcilers do. The container's
// changes reach it through `endpointTriggers` (a container's status moving wakes its endpoints).
import { fromPromise, type SnapshotFrom } from 'xstate';
import { topState } from '../../controllers/machine-driver.ts';
import { MachineHost, type Held } from '../../controllers/machine-host.ts';
import { EngineError, isCode } from '../../lib/errors.ts';
import { endpointsOfContainer, isAttachedTo, type EndpointAddresses, type EndpointCondition, type EndpointStatus, Endpoints, type EndpointResource } from '../../store/kinds/endpoint.ts';
import { Networks } from '../../store/kinds/network.ts';
import { type ContainerStatus, Containers } from '../../store/kinds/container.ts';
import type { ReconcileContext } from '../../controllers/controller.ts';
import { hostVethName } from '../../drivers/network/veth.ts';
import type { EndpointNetworkPort, EndpointStore } from './deps.ts';
import { endpointLifecycle, restoredContext, type EffectInput, type EndpointEvent, type EndpointFacts, type Plugged } from './machine.ts';

type Machine = ReturnType<typeof endpointLifecycle.provide>;
type Snapshot = SnapshotFrom<Machine>;

/** The interface index (eth<n>) each endpoint holds in a run, claimed before the attach runs. */
type Claims = Map<string, { pid: number; index: number }>;

export class EndpointReconciler {
  readonly name = 'endpoint';
  readonly kind = Endpoints.name;
  private readonly store: EndpointStore;
  private readonly network: EndpointNetworkPort;
  private readonly machines: MachineHost<Machine>;
  private readonly claims: Claims = new Map();

  constructor(store: EndpointStore, network: EndpointNetworkPort) {
    this.store = store;
    this.network = network;
    const machine = endpointLifecycle.provide({
      actors: {
        attach: fromPromise<Plugged, EffectInput>(({ input }) => this.attach(input)),
        teardown: fromPromise<void, EffectInput>(({ input }) => this.teardown(input)),
      },
    });
    this.machines = new MachineHost(machine, { name: 'endpoint' });
  }

  /** Daemon shutdown: the effects under way are aborted. */
  stop(): void {
    this.machines.stop();
  }

  async reconcile(name: string, ctx: ReconcileContext): Promise<void> {
    const r = this.store.get(Endpoints, name);
    if (!r) {
      this.machines.forget(name);
      this.claims.delete(name);
      return;
    }
    const c = this.store.get(Containers, r.spec.containerId);
    const net = this.store.get(Networks, r.spec.networkId);
    const running = !!c && (c.status.phase === 'running' || c.status.phase === 'paused') && c.status.pid > 0;
    const own = c?.status.endpoint;
    const facts: EndpointFacts = {
      name,
      running,
      pid: c?.status.pid ?? 0,
      networkExists: !!net && net.spec.desired !== 'removed',
      // The start step plugs the NetworkMode network (eth0, the default route) before the process runs.
      startPlugged:
        running && r.spec.primary && own?.NetworkID === r.spec.networkId && own.IPAddress
          ? { pid: c!.status.pid, ifName: 'eth0', hostVeth: hostVethName(r.spec.containerId), addresses: addressesOf(own), by: 'start' }
          : null,
    };
    const held = this.machines.current(name, () => this.restore(r, facts));
    const remove = r.spec.desired === 'removed' || !c;
    const events: EndpointEvent[] = [{ type: 'OBSERVED', facts }, remove ? { type: 'REMOVE' } : { type: 'APPLY' }];
    const res = await this.machines.run(name, held, events, { signal: ctx.signal, now: Date.now });
    this.machines.keep(name, res);
    this.writeOutcome(r, res.snapshot);
  }

  private restore(r: EndpointResource, facts: EndpointFacts): Held<Machine> {
    const s = r.status;
    const plugged: Plugged | null = s.pid > 0 && s.addresses ? { pid: s.pid, ifName: s.ifName, hostVeth: s.hostVeth, addresses: s.addresses, by: s.pluggedBy ?? 'endpoint' } : null;
    const value = s.phase === 'removing' ? (plugged ? 'attached' : 'detached') : s.phase;
    const snapshot = this.machines.machine.resolveState({ value, context: restoredContext(facts, plugged) }) as Snapshot;
    return { snapshot, timers: [] };
  }

  private writeOutcome(r: EndpointResource, snap: Snapshot): void {
    const c = snap.context;
    const state = topState(snap);
    switch (state) {
      case 'removed':
        return;
      case 'attached': {
        const p = c.plugged!;
        if (r.status.phase === 'attached' && r.status.pid === p.pid && r.status.observedGeneration >= r.generation) return;
        this.writeStatus(r, { phase: 'attached', pid: p.pid, ifName: p.ifName, hostVeth: p.hostVeth, addresses: p.addresses, pluggedBy: p.by, error: '' }, 'True', 'Attached', `${p.ifName} in the network namespace of process ${p.pid}`);
        return;
      }
      case 'detached': {
        if (r.status.phase === 'detached' && r.status.observedGeneration >= r.generation && r.status.conditions[0]?.reason === c.reason) return;
        const message = c.reason === 'NetworkNotFound' ? `network ${r.spec.networkName} not found` : 'the container is not running';
        this.writeStatus(r, { phase: 'detached', pid: 0, ifName: '', hostVeth: '', addresses: null, pluggedBy: undefined, error: '' }, 'False', c.reason || 'ContainerNotRunning', message);
        return;
      }
      case 'failed':
        // Written on change only: a status write of its own does not wake this loop; the controller's back-off paces the retry.
        if (r.status.phase !== 'failed' || r.status.error !== c.error) {
          this.writeStatus(r, { phase: 'failed', pid: 0, ifName: '', hostVeth: '', addresses: null, pluggedBy: undefined, error: c.error }, 'False', 'AttachFailed', c.error);
        }
        throw c.cause;
      case 'removing':
        if (r.status.phase !== 'removing' || r.status.error !== c.error) this.writeStatus(r, { phase: 'removing', error: c.error }, 'False', 'Removing', c.error || 'being removed');
        throw c.cause ?? new Error(`endpoint ${r.name}: removal stalled`);
      default:
        throw c.cause ?? new Error(`endpoint ${r.name}: reconcile ended in ${state}`);
    }
  }

  /** Plug into the run of `pid` as the lowest eth<n> (n >= 1) no other endpoint of that run holds. */
  private async attach(input: EffectInput): Promise<Plugged> {
    const r = this.store.get(Endpoints, input.name);
    if (!r) throw new EngineError('NotFound', `endpoint ${input.name} not found`);
    const { containerId, networkId, config } = r.spec;
    // Claimed synchronously, before any await: two endpoints of one run never pick the same index.
    const used = new Set<number>();
    for (const e of endpointsOfContainer(this.store, containerId)) {
      if (e.name !== r.name && isAttachedTo(e.status, input.pid)) used.add(Number(e.status.ifName.slice(3)));
      const claim = this.claims.get(e.name);
      if (e.name !== r.name && claim?.pid === input.pid) used.add(claim.index);
    }
    let index = 1;
    while (used.has(index)) index++;
    this.claims.set(r.name, { pid: input.pid, index });
    const ipam = config.IPAMConfig ?? {};
    const out = await this.network.attachExtra(containerId, input.pid, networkId, index, {
      ipv4: ipam.IPv4Address || undefined,
      ipv6: ipam.IPv6Address || undefined,
      mac: config.MacAddress ? config.MacAddress.toLowerCase() : undefined,
      // Without its NetworkMode network (disconnected, maybe connected again as this one), the run's
      // 127.0.0.11 would still go to a gateway it left: its names are asked here instead.
      dns: !this.store.get(Containers, containerId)?.status.endpoint,
    });
    return { pid: input.pid, ...out, by: 'endpoint' };
  }

  private async teardown(input: EffectInput): Promise<void> {
    const r = this.store.get(Endpoints, input.name);
    if (!r) return;
    if (input.plugged && input.pid > 0 && input.plugged.pid === input.pid) await this.network.unplugExtra(input.plugged.hostVeth);
    this.network.releaseOn(r.spec.containerId, r.spec.networkId);
    this.claims.delete(r.name);
    this.store.delete(Endpoints, r.name);
  }

  private writeStatus(r: EndpointResource, patch: Partial<EndpointStatus>, status: EndpointCondition['status'], reason: string, message: string): void {
    try {
      this.store.updateStatus(Endpoints, r.name, (s) => ({
        ...s,
        ...patch,
        observedGeneration: r.generation,
        conditions: [attachedCondition(s.conditions[0], status, reason, message)],
      }));
    } catch (err) {
      if (!isCode(err, 'NotFound')) throw err;
    }
  }
}

function addressesOf(ep: NonNullable<ContainerStatus['endpoint']>): EndpointAddresses {
  return {
    EndpointID: ep.EndpointID,
    MacAddress: ep.MacAddress,
    Gateway: ep.Gateway,
    IPAddress: ep.IPAddress,
    IPPrefixLen: ep.IPPrefixLen,
    IPv6Gateway: ep.IPv6Gateway ?? '',
    GlobalIPv6Address: ep.GlobalIPv6Address ?? '',
    GlobalIPv6PrefixLen: ep.GlobalIPv6PrefixLen ?? 0,
  };
}

/** The Attached condition; its transition time moves only when its status flips. */
function attachedCondition(prev: EndpointCondition | undefined, status: EndpointCondition['status'], reason: string, message: string): EndpointCondition {
  const lastTransitionTime = prev && prev.status === status ? prev.lastTransitionTime : new Date().toISOString();
  return { type: 'Attached', status, reason, message, lastTransitionTime };
}

// Engine events, derived from committed store changes (container lifecycles, image deletion) plus
// what only the API sees: attach and exec, and the image actions the reference daemon names by
// their cause (pull, push, tag, untag, import, load, save), which routes record through `image()`
// after their change is committed. Kept in a bounded in-memory ring for `since` queries, fanned
// out to live `GET /events` subscribers.
import { type ContainerResource, Containers } from '../../store/kinds/container.ts';
import { type ImageResource, Images } from '../../store/kinds/image.ts';
import type { WatchEvent } from '../../store/types.ts';
import type { Store } from '../../store/store.ts';
import { type AnyKind, isEventOf, type ResourceOf } from '../../store/kind.ts';

import { type NetworkResource, Networks } from '../../store/kinds/network.ts';
import { type VolumeResource, Volumes } from '../../store/kinds/volume.ts';
import { Stacks, type StackResource } from '../../store/kinds/stack.ts';
import { type EndpointResource, Endpoints } from '../../store/kinds/endpoint.ts';
import { type ExecResource, Execs } from '../../store/kinds/exec.ts';
import { findImage, imageIdOf } from '../images/resolve.ts';
import { imageConfig } from '../images/views.ts';

export interface EngineEvent {
  status?: string;
  id?: string;
  from?: string;
  Type: string;
  Action: string;
  Actor: { ID: string; Attributes: Record<string, string> };
  scope: 'local';
  time: number;
  timeNano: number;
}

export type EventStore = Pick<Store, 'watch' | 'list' | 'get'>;

const RING = 1024;

/** The last version seen of each record of one kind: what a change is compared with. */
class LastSeen<K extends AnyKind> {
  private readonly byName = new Map<string, ResourceOf<K>>();

  constructor(store: EventStore, kind: K) {
    for (const r of store.list(kind)) this.byName.set(r.name, r);
  }

  get(name: string): ResourceOf<K> | undefined {
    return this.byName.get(name);
  }

  /** Takes the change in; answers the version before it. */
  advance(ev: WatchEvent<ResourceOf<K>>): ResourceOf<K> | undefined {
    const prev = this.byName.get(ev.name);
    if (ev.type === 'delete') this.byName.delete(ev.name);
    else this.byName.set(ev.name, ev.resource);
    return prev;
  }
}

function nowNano(): bigint {
  return BigInt(Date.now()) * 1_000_000n + (process.hrtime.bigint() % 1_000_000n);
}

export class EventRecorder {
  private readonly ring: EngineEvent[] = [];
  private readonly subs = new Set<(e: EngineEvent) => void>();
  private readonly seen: {
    containers: LastSeen<typeof Containers>;
    networks: LastSeen<typeof Networks>;
    volumes: LastSeen<typeof Volumes>;
    endpoints: LastSeen<typeof Endpoints>;
    stacks: LastSeen<typeof Stacks>;
    execs: LastSeen<typeof Execs>;
  };
  private readonly store: EventStore;
  private unwatch: (() => void) | null = null;
  private count = 0;

  constructor(store: EventStore) {
    this.store = store;
    this.seen = {
      containers: new LastSeen(store, Containers),
      networks: new LastSeen(store, Networks),
      volumes: new LastSeen(store, Volumes),
      endpoints: new LastSeen(store, Endpoints),
      stacks: new LastSeen(store, Stacks),
      execs: new LastSeen(store, Execs),
    };
    this.unwatch = store.watch(null, (ev) => this.onChange(ev));
  }

  close(): void {
    this.unwatch?.();
  }

  /** Events emitted since start (engine_daemon_events_total). */
  get emitted(): number {
    return this.count;
  }

  /** Current subscribers (engine_daemon_events_subscribers_total). */
  get subscribers(): number {
    return this.subs.size;
  }

  subscribe(fn: (e: EngineEvent) => void): () => void {
    this.subs.add(fn);
    return () => this.subs.delete(fn);
  }

  /** Events recorded at or after `sinceNano` (and up to `untilNano` when given). */
  history(sinceNano: bigint, untilNano?: bigint): EngineEvent[] {
    return this.ring.filter((e) => BigInt(e.timeNano) >= sinceNano && (untilNano === undefined || BigInt(e.timeNano) <= untilNano));
  }

  emit(type: string, action: string, id: string, attributes: Record<string, string>, legacyFrom?: string): void {
    this.count++;
    const tn = nowNano();
    const e: EngineEvent = {
      Type: type,
      Action: action,
      Actor: { ID: id, Attributes: attributes },
      scope: 'local',
      time: Number(tn / 1_000_000_000n),
      timeNano: Number(tn),
    };
    if (type === 'container' || type === 'image') {
      e.status = action;
      e.id = id;
      if (legacyFrom !== undefined) e.from = legacyFrom;
    }
    this.ring.push(e);
    if (this.ring.length > RING) this.ring.splice(0, this.ring.length - RING);
    for (const fn of this.subs) {
      try {
        fn(e);
      } catch {
        // a broken subscriber must not stop the others
      }
    }
  }

  /** Container event with the attributes clients read (image, name, labels, extras). */
  container(action: string, c: ContainerResource, extra: Record<string, string> = {}): void {
    const image = c.spec.config.Image;
    const attrs: Record<string, string> = { ...(c.spec.config.Labels ?? {}), image, name: c.spec.name.replace(/^\//, ''), ...extra };
    this.emit('container', action, c.name, attrs, image);
  }

  /**
   * Image event as the reference daemon logs it: Actor.ID is the image id (or, for pull and push,
   * the familiar reference), attributes are the image's labels plus `name` (and `extra`).
   */
  image(action: string, id: string, name: string, extra: Record<string, string> = {}): void {
    let labels: Record<string, string> = {};
    try {
      const img = findImage(this.store, id);
      if (img) labels = imageConfig(img).config?.Labels ?? {};
    } catch {
      // not an image reference: no labels
    }
    this.emit('image', action, id, { ...labels, ...(name ? { name } : {}), ...extra });
  }

  private onChange(ev: WatchEvent): void {
    try {
      if (isEventOf(ev, Containers)) this.containerChange(this.seen.containers.advance(ev), ev);
      else if (isEventOf(ev, Images)) this.imageChange(ev);
      else if (isEventOf(ev, Networks)) this.networkChange(this.seen.networks.advance(ev), ev);
      else if (isEventOf(ev, Volumes)) this.volumeChange(this.seen.volumes.advance(ev), ev);
      else if (isEventOf(ev, Endpoints)) this.endpointChange(this.seen.endpoints.advance(ev), ev);
      else if (isEventOf(ev, Execs)) this.execChange(this.seen.execs.advance(ev), ev);
      else if (isEventOf(ev, Stacks)) {
        const prev = this.seen.stacks.advance(ev);
        if (ev.type !== 'delete') this.stackChange(prev, ev.resource);
      }
    } catch {
      // events are best effort; never break the store's watch
    }
  }

  /**
   * Stack events (an extension, Type "stack"): a service's rollout changing state
   * (`rollout-rollingout`, `rollout-completed`, `rollout-paused`, `rollout-rollingback`,
   * `rollout-rolledback`) and an unhealthy replica replaced (`replace`).
   */
  private stackChange(prev: StackResource | undefined, cur: StackResource): void {
    for (const [service, s] of Object.entries(cur.status.services)) {
      const was = prev?.status.services[service];
      const r = s.lastRollout;
      if (r && (r.state !== was?.lastRollout?.state || r.to !== was?.lastRollout?.to)) {
        this.emit('stack', `rollout-${r.state.toLowerCase()}`, cur.name, { service, generation: String(r.generation), ...(r.reason ? { reason: r.reason } : {}) });
      }
      if ((s.replaced ?? 0) > (was?.replaced ?? 0) && s.lastReplaced) {
        this.emit('stack', 'replace', cur.name, { service, container: s.lastReplaced.container, id: s.lastReplaced.id, reason: s.lastReplaced.reason });
      }
    }
  }

  /** Volume create (its record written) and destroy (its record gone with its data). */
  private volumeChange(prev: VolumeResource | undefined, ev: WatchEvent<VolumeResource>): void {
    const v = ev.resource;
    if (ev.type === 'delete') this.emit('volume', 'destroy', v.name, { driver: v.spec.driver });
    else if (!prev) this.emit('volume', 'create', v.name, { driver: v.spec.driver });
  }

  /** A container's volumes mounted at its start, unmounted when it stops. */
  private volumeMounts(action: 'mount' | 'unmount', c: ContainerResource): void {
    for (const m of c.spec.mountPoints ?? []) {
      if (m.type !== 'volume') continue;
      const attrs: Record<string, string> = { container: c.name, driver: 'local' };
      if (action === 'mount') Object.assign(attrs, { destination: m.destination, propagation: m.propagation, 'read/write': String(!m.readOnly) });
      this.emit('volume', action, m.name, attrs);
    }
  }

  private containerChange(prev: ContainerResource | undefined, ev: WatchEvent<ContainerResource>): void {
    const cur = ev.resource;
    if (ev.type === 'delete') {
      this.container('destroy', cur);
      return;
    }
    if (!prev) {
      this.container('create', cur);
      return;
    }
    const p = prev.status;
    const s = cur.status;
    if (prev.spec.name !== cur.spec.name) this.container('rename', cur, { oldName: prev.spec.name });
    if (s.exitSeq > p.exitSeq) {
      this.container('die', cur, { exitCode: String(s.exitCode) });
      this.volumeMounts('unmount', cur);
      this.networkAttachment('disconnect', cur);
      // Asked to stop (`docker stop`), or to stop for a new run (`docker restart`).
      const stopped = cur.spec.desired === 'stopped' || cur.spec.runGeneration > s.runGeneration;
      if (stopped && !cur.spec.remove) this.container('stop', cur);
    }
    if (s.phase === 'running' && (p.phase !== 'running' && p.phase !== 'paused')) {
      this.networkAttachment('connect', cur);
      this.volumeMounts('mount', cur);
      this.container('start', cur);
    }
    if (s.phase === 'paused' && p.phase === 'running') this.container('pause', cur);
    if (s.phase === 'running' && p.phase === 'paused') this.container('unpause', cur);
    if (s.oomKilled && !p.oomKilled) this.container('oom', cur);
    // A probe moved the verdict (the reset to starting at a start is no event, as with the reference).
    if (s.health && s.health.Status !== 'starting' && s.health.Status !== p.health?.Status) this.container(`health_status: ${s.health.Status}`, cur);
  }

  /**
   * An exec's life as the reference logs it on its container, a healthcheck probe's too:
   * `exec_create: CMD ARGS` when made, `exec_start: CMD ARGS` when a start asks for it, `exec_die`
   * with its exit code when its process ended (a probe's record may go in the same change).
   */
  private execChange(prev: ExecResource | undefined, ev: WatchEvent<ExecResource>): void {
    const cur = ev.resource;
    const c = this.store.get(Containers, cur.spec.containerId) ?? this.seen.containers.get(cur.spec.containerId);
    if (!c) return;
    const [cmd = '', ...args] = cur.spec.config.Cmd;
    const line = `${cmd} ${args.join(' ')}`;
    const attrs = { execID: cur.name };
    if (ev.type !== 'delete' && !prev) this.container(`exec_create: ${line}`, c, attrs);
    // Made and started in one change (a probe): both, in order.
    if (ev.type !== 'delete' && cur.spec.desired === 'started' && prev?.spec.desired !== 'started') this.container(`exec_start: ${line}`, c, attrs);
    const ran = (x: ExecResource | undefined) => !!x && x.status.pid > 0;
    const ended = (x: ExecResource) => x.status.phase === 'exited' && x.status.exitCode !== null;
    if (ended(cur) && !(prev && ended(prev)) && (ran(cur) || ran(prev))) this.container('exec_die', c, { ...attrs, exitCode: String(cur.status.exitCode) });
  }

  /** A network connected while the container runs (or beside its NetworkMode one): `connect` when its endpoint is plugged into a run, `disconnect` when it is not any more. */
  private endpointChange(prev: EndpointResource | undefined, ev: WatchEvent<EndpointResource>): void {
    const cur = ev.resource;
    const was = prev?.status.phase === 'attached' ? prev.status.pid : 0;
    const now = ev.type !== 'delete' && cur.status.phase === 'attached' ? cur.status.pid : 0;
    if (was === now) return;
    const live = this.store.get(Containers, cur.spec.containerId);
    if (prev?.status.pluggedBy === 'start' || cur.status.pluggedBy === 'start') {
      // The NetworkMode network plugged in by the start step: its connect and disconnect are the
      // container's start and exit (containerChange), but for a disconnect while it runs.
      if (was && !now && live?.status.pid === was) this.networkEvent('disconnect', live, cur.spec.networkId);
      return;
    }
    const c = live ?? this.seen.containers.get(cur.spec.containerId);
    if (!c) return;
    if (was) this.networkEvent('disconnect', c, cur.spec.networkId);
    if (now) this.networkEvent('connect', c, cur.spec.networkId);
  }

  /** The network side of a start (`connect`) or an exit (`disconnect`) of a container with an endpoint. */
  private networkAttachment(action: 'connect' | 'disconnect', c: ContainerResource): void {
    const ep = c.status.endpoint;
    if (ep?.NetworkID) this.networkEvent(action, c, ep.NetworkID);
  }

  private networkEvent(action: 'connect' | 'disconnect', c: ContainerResource, networkId: string): void {
    const net = this.store.get(Networks, networkId);
    if (net) this.emit('network', action, net.spec.id, { container: c.name, name: net.spec.name, type: net.spec.driver });
  }

  /** A network's record appearing is `create`, its record going (teardown done) is `destroy`. */
  private networkChange(prev: NetworkResource | undefined, ev: WatchEvent<NetworkResource>): void {
    const cur = ev.resource;
    const attrs = { name: cur.spec.name, type: cur.spec.driver };
    if (ev.type === 'delete') this.emit('network', 'destroy', cur.spec.id, attrs);
    else if (!prev) this.emit('network', 'create', cur.spec.id, attrs);
  }

  /** The image record goes once its delete is done (whatever asked for it): that is the `delete` event. */
  private imageChange(ev: WatchEvent<ImageResource>): void {
    const cur = ev.resource;
    if (ev.type === 'delete') this.emit('image', 'delete', imageIdOf(cur), { name: imageIdOf(cur) });
  }
}

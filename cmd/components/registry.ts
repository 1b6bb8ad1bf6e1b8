// The daemon's component registry: what each component id stands for. `ctx.get('store')` is typed
// by the id alone; a component's `requires` names only ids listed here; its `init` must return
// its entry's type. Adding a component is adding its entry here and its definition beside the
// others (./index.ts lists them).
import type { FastifyInstance } from 'fastify';
import type { AuthzChain } from '../../api/authz/chain.ts';
import type { EventRecorder } from '../../api/events/recorder.ts';
import type { listenAll } from '../../api/listen.ts';
import type { Controller } from '../../controllers/controller.ts';
import type { Manager } from '../../controllers/manager.ts';
import type { DistributionDriver } from '../../drivers/distribution/distribution.ts';
import type { createLogReader, Logging } from '../../drivers/logging/index.ts';
import type { BridgeDriver } from '../../drivers/network/bridge-driver.ts';
import type { PortProxies } from '../../drivers/network/port-proxy.ts';
import type { SpecBuilder } from '../../drivers/oci/index.ts';
import type { DriverName, LayerStore } from '../../drivers/storage/types.ts';
import type { Stdio } from '../../drivers/stdio/stdio.ts';
import type { SupervisorClient } from '../../drivers/supervisor/client.ts';
import type { EventSubscription } from '../../drivers/supervisor/events.ts';
import type { MemoryReclaimer } from '../../drivers/sys/memory-reclaim.ts';
import type { ContainerReconciler } from '../../reconcilers/container/reconciler.ts';
import type { PullReconciler } from '../../reconcilers/image/pull-reconciler.ts';
import type { NetworkAttacher } from '../../reconcilers/network/attacher.ts';
import type { NetworkDns } from '../../reconcilers/network/dns.ts';
import type { PortPublisher } from '../../reconcilers/network/ports.ts';
import type { Store } from '../../store/store.ts';
import { component as untypedComponent, type Component } from '../components.ts';
import type { Admission } from './admission.ts';
import type { ClusterHolder } from './cluster.ts';
import type { SwarmNode } from '../swarm/node.ts';
import type { Controllers, Execs, Runs, Volumes } from './containers.ts';
import type { SupervisorAddress, SwappableRuntimes } from './core.ts';
import type { Paths } from './env.ts';
import type { IdMap } from '../../lib/idmap.ts';
import type { CdiRegistry } from '../../drivers/cdi/registry.ts';
import type { SessionManager } from '../../drivers/session/manager.ts';
import type { Metrics } from './metrics.ts';
import type { Running } from './reload.ts';

export type ComponentValues = {
  metrics: Metrics;
  /** --userns-remap's id map (none without it). */
  userns: { map?: IdMap };
  /** The CDI specs (features.cdi on; none without it). */
  cdi: { registry?: CdiRegistry };
  /** BuildKit sessions (POST /session) by id. */
  sessions: SessionManager;
  paths: Paths;
  store: Store;
  'storage-driver': DriverName;
  layers: LayerStore;
  supervisor: SupervisorAddress & { stop?: () => Promise<void> | void };
  'supervisor-client': SupervisorClient;
  runtimes: SwappableRuntimes;
  memory: Pick<MemoryReclaimer, 'tick' | 'stop'>;
  stdio: Stdio;
  logging: Logging;
  spec: SpecBuilder;
  bridge: BridgeDriver;
  'network-attacher': NetworkAttacher;
  'port-proxies': PortProxies;
  ports: PortPublisher;
  dns: NetworkDns;
  volumes: Volumes;
  runs: Runs;
  execs: Execs;
  containers: ContainerReconciler;
  controllers: Controllers;
  'supervisor-events': EventSubscription;
  migrations: void;
  distribution: DistributionDriver;
  'log-reader': ReturnType<typeof createLogReader>;
  authz: AuthzChain;
  events: EventRecorder;
  pulls: PullReconciler;
  running: { manager: Manager; containers: ContainerReconciler };
  cluster: ClusterHolder;
  swarm: SwarmNode;
  admission: Admission;
  api: { app: FastifyInstance; listeners: Awaited<ReturnType<typeof listenAll>> };
  stacks: { controller: Controller; manager: Manager };
  reload: Running;
};

export type ComponentId = keyof ComponentValues;

/** A daemon component: `init` returns its registry entry's type. */
export function component<Id extends ComponentId>(c: Component<ComponentValues[Id], ComponentValues> & { id: Id }): Component<ComponentValues[Id], ComponentValues> {
  return untypedComponent(c);
}

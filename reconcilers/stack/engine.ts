// What the stack reconciler does to the world: desired state written into the store through the
// admission modules the create routes use (admission/: the same defaults, checks and errors), each
// object carrying the stack as its owner reference. Nothing here waits: a write is answered at
// once, and the reconciler observes the outcome on a later pass (a container's phase, a network's
// removal). No HTTP request is made, so authorization plugins see only what a user asked (the
// stack's PUT or DELETE), never the daemon's own writes.
import { admitContainer, type AdmissionDeps } from '../../admission/containers/admit.ts';
import { admitRename, checkStartable, removeLevel, startLevel } from '../../admission/containers/lifecycle.ts';
import { admitNetwork, NetworkCreateBody, type NetworkAdmissionDeps } from '../../admission/networks/admit.ts';
import { admitVolume } from '../../admission/volumes/admit.ts';
import { parseVolumeCreate } from '../../admission/volumes/create-schema.ts';
import { invalidArgument, isCode } from '../../lib/errors.ts';
import { Containers, findContainer } from '../../store/kinds/container.ts';
import { liveNetworksNamed, type NetworkResource, Networks } from '../../store/kinds/network.ts';
import { Volumes } from '../../store/kinds/volume.ts';
import { stackOwner } from '../../store/kinds/stack.ts';

/** The writes the stack reconciler makes. Each throws the admission's error when refused. */
export interface StackEngine {
  createNetwork(stack: string, body: Record<string, unknown>): void;
  /** Marks the network removed; refused as DELETE /networks/{id} is while running containers are attached. */
  removeNetwork(name: string): void;
  createVolume(stack: string, body: Record<string, unknown>): void;
  removeVolume(name: string): void;
  /** A replica created and asked to run, in one write; answers its id. */
  runContainer(stack: string, name: string, body: Record<string, unknown>): string;
  startContainer(id: string): void;
  renameContainer(id: string, name: string): void;
  /** Forced, anonymous volumes kept (as `docker compose down`); nothing when a removal is under way. */
  removeContainer(id: string): void;
}

export interface StoreEngineDeps {
  containers: AdmissionDeps;
  networks: NetworkAdmissionDeps;
  /** DELETE /networks/{id}'s refusal while running containers are attached (it throws). */
  checkNetworkRemovable: (net: NetworkResource) => void;
}

export function storeEngine(deps: StoreEngineDeps): StackEngine {
  const store = deps.containers.store;
  return {
    createNetwork(stack, body) {
      const parsed = NetworkCreateBody.safeParse(body);
      if (!parsed.success) throw invalidArgument(`network ${String(body.Name)}: ${parsed.error.message}`);
      admitNetwork(deps.networks, parsed.data, { ownerRef: stackOwner(stack) });
    },
    removeNetwork(name) {
      const net = liveNetworksNamed(store, name)[0];
      if (!net) return;
      deps.checkNetworkRemovable(net);
      store.updateSpec(Networks, net.name, (sp) => ({ ...sp, desired: 'removed' }));
    },
    createVolume(stack, body) {
      admitVolume(store, parseVolumeCreate(body), { ownerRef: stackOwner(stack) });
    },
    removeVolume(name) {
      const v = store.get(Volumes, name);
      if (v && v.spec.desired !== 'removed') store.updateSpec(Volumes, name, (sp) => ({ ...sp, desired: 'removed' }));
    },
    runContainer(stack, name, body) {
      return admitContainer(deps.containers, body, { name, ownerRef: stackOwner(stack), start: true }).created.name;
    },
    startContainer(id) {
      const c = findContainer(store, id);
      try {
        checkStartable(c);
      } catch (err) {
        if (isCode(err, 'NotModified')) return;
        throw err;
      }
      store.updateSpec(Containers, c.name, startLevel);
    },
    renameContainer(id, name) {
      const c = findContainer(store, id);
      const to = admitRename(store, c, name);
      store.updateSpec(Containers, c.name, (sp) => ({ ...sp, name: to }));
    },
    removeContainer(id) {
      const c = store.get(Containers, id);
      if (!c || c.spec.desired === 'removed') return;
      store.updateSpec(Containers, id, removeLevel({ force: true, volumes: false }));
    },
  };
}

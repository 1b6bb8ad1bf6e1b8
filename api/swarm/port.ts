// What the API asks of the node's swarm (cmd/swarm/node.ts answers): its local state, the cluster
// object, and init, leave, update.
import type { SwarmObjectsPort } from '../secrets/port.ts';
import type { ClusterRecord, SwarmSpecInput } from '../../lib/swarm/cluster-object.ts';
import type { LocalNodeState } from '../nodes/views.ts';
import type { NodeSpec } from '../../lib/swarm/node-spec.ts';
import type { SwarmNetworksPort } from '../networks/swarm-port.ts';
import type { ServicesPort } from '../services/port.ts';

/** POST /swarm/init's body (moby's api/types/swarm InitRequest). */
export interface SwarmInitRequest {
  ListenAddr?: string;
  AdvertiseAddr?: string;
  DataPathAddr?: string;
  DataPathPort?: number;
  ForceNewCluster?: boolean;
  Spec?: SwarmSpecInput;
  AutoLockManagers?: boolean;
  Availability?: string;
  DefaultAddrPool?: string[] | null;
  SubnetSize?: number;
}

/** POST /swarm/join's body (moby's api/types/swarm JoinRequest). */
export interface SwarmJoinRequest {
  ListenAddr?: string;
  AdvertiseAddr?: string;
  DataPathAddr?: string;
  RemoteAddrs?: string[];
  JoinToken?: string;
  Availability?: string;
}

export interface SwarmUpdate {
  version: bigint;
  spec: SwarmSpecInput;
  rotateWorkerToken: boolean;
  rotateManagerToken: boolean;
  rotateManagerUnlockKey: boolean;
}


export interface SwarmPort {
  /** The node's state in the swarm made by init or join (inactive in none) and the reason of an error. */
  local(): { state: LocalNodeState; error: string; manager: boolean };
  /** True while the node is in a swarm (made by init or join). */
  readonly inSwarm: boolean;
  /** The cluster object as last read or written (for /info), undefined when not known. */
  cached(): ClusterRecord | undefined;
  init(req: SwarmInitRequest): Promise<string>;
  join(req: SwarmJoinRequest): Promise<void>;
  leave(force: boolean): Promise<void>;
  inspect(): Promise<ClusterRecord>;
  update(u: SwarmUpdate): Promise<void>;
  /** Every node's spec and its version (a manager's view). */
  nodeSpecs(): Promise<Map<string, { spec: NodeSpec; version: number }>>;
  updateNode(id: string, version: bigint, spec: NodeSpec): Promise<void>;
  removeNode(id: string, o: { force: boolean; down: boolean }): Promise<void>;
  /** The swarm's unlock key ('' while autolock is off). */
  unlockKey(): Promise<string>;
  /** Unlocks a manager whose key is sealed (autolock) with the swarm's unlock key. */
  unlock(key: string): Promise<void>;
  /** The swarm's services (the reference's 503 unless this node is a manager that can answer). */
  services(): ServicesPort;
  /** The swarm's overlay networks (the same 503). */
  networks(): SwarmNetworksPort;
  /** The swarm's secrets and configs (the same 503). */
  secrets(): SwarmObjectsPort;
  configs(): SwarmObjectsPort;
}

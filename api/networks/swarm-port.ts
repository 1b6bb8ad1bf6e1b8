// What the network routes ask of the swarm for its overlay networks (cmd/swarm/networks.ts answers,
// on a manager; the port's getter throws the reference's 503 on a node that cannot answer).
import type { NetworkCreateInput } from '../../admission/networks/admit.ts';
import type { SwarmNetworkRecord } from '../../lib/swarm/network.ts';

export interface SwarmNetworksPort {
  list(): Promise<SwarmNetworkRecord[]>;
  /** By full id, full name or id prefix (the reference's 404 otherwise). */
  find(ref: string): Promise<SwarmNetworkRecord>;
  /** Creates an overlay network (its name already checked against this node's networks); its id. */
  create(body: NetworkCreateInput): Promise<string>;
  remove(ref: string): Promise<void>;
}

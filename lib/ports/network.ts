// The contract of plugging a container into a bridge, between the network reconciler's attacher
// (reconcilers/network) and the bridge driver that does it (drivers/network/veth.ts), declared
// below both.

export interface AttachRequest {
  /** The container's network namespace: a process inside it, or a path to the namespace file. */
  pid?: number;
  netnsPath?: string;
  bridge: string;
  /** Host-side name (≤ 15 chars); deterministic names let a repeated attach replace the old pair. */
  hostVeth: string;
  /** Name of the container end. */
  ifName: string;
  /** "172.17.0.2/16" */
  address: string;
  /** Default route; omitted for networks without one. */
  gateway?: string;
  /** "fd00:1::2/64" on an IPv6 network, with its default route `gateway6`. */
  address6?: string;
  gateway6?: string;
  mac: string;
  mtu: number;
  /**
   * The network's embedded DNS on `gateway`: inside the namespace, 127.0.0.11:53 (what its
   * resolv.conf names, as with the reference) is redirected there, from the container's address.
   */
  dnsRedirect?: { gateway: string };
  signal?: AbortSignal;
}

export interface AttachResult {
  hostVeth: string;
}

/** An overlay network's VXLAN device (drivers/network/vxlan.ts makes it). */
export interface VxlanConfig {
  name: string;
  vni: number;
  /** This node's VTEP address. */
  local: string;
  port: number;
  bridge: string;
  mtu: number;
}

/** An endpoint on another node of an overlay network, as the VXLAN device is told of it. */
export interface VxlanPeer {
  ip: string;
  mac: string;
  /** The VTEP of the node the endpoint is on. */
  vtep: string;
}

/** A service's virtual IP as a container's namespace is told of it: where connections to it go. */
export interface VipRule {
  vip: string;
  /** The service's tasks' addresses on the network (none: nothing answers). */
  backends: string[];
}

/** The routing mesh on a node: the published ports and the tasks they go to (drivers/network/ingress-rules.ts). */
export interface IngressConfig {
  /** The engine's chain prefix ("ENGINE"). */
  chainPrefix: string;
  /** The ingress network's bridge here. */
  bridge: string;
  /** This node's own address on the ingress network: the source the tasks answer to. */
  source: string;
  ports: Array<{ protocol: string; published: number; target: number; backends: string[] }>;
}

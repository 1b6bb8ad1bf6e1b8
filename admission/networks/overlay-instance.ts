// This node's instance of a swarm overlay network (lib/swarm/network.ts): a local network record
// with the swarm network's id, name and subnet, scope `swarm`, driver `overlay` — a Linux bridge
// (named for its VXLAN id) with the gateway's address, which the node's task containers plug into as
// they plug into a bridge network, and the VXLAN device on it (VNI, this node's VTEP, the data
// path port). reconcilers/node/overlay.ts makes it while something here uses the network and
// marks it removed after; the network reconciler builds and tears down the devices.
import { invalidArgument } from '../../lib/errors.ts';
import { rfc3339Nano } from '../../lib/ids.ts';
import { VXLANID_OPTION, type SwarmNetworkRecord } from '../../lib/swarm/network.ts';
import { Networks, type NetworkResource, type NetworkSpec } from '../../store/kinds/network.ts';
import type { NetworkAdmissionDeps } from './admit.ts';
import { OPT } from './network-spec.ts';

/** VXLAN's 50 bytes off the link's 1500, as the reference's overlay default. */
export const OVERLAY_MTU = 1450;

export interface OverlayNode {
  /** This node's VTEP address. */
  vtep: string;
  port: number;
}

/** The MTU an overlay's options ask for (com.docker.network.driver.mtu), else 1450; a bad one refused. */
export function overlayMtu(options: Record<string, string>): number {
  const v = options[OPT.mtu];
  if (v === undefined) return OVERLAY_MTU;
  const mtu = Number(v);
  if (!/^\d+$/.test(v) || mtu < 68 || mtu > 65535) throw invalidArgument(`invalid MTU ${v}: it must be between 68 and 65535`);
  return mtu;
}

export function overlayInstanceSpec(n: SwarmNetworkRecord, node: OverlayNode, d: NonNullable<NetworkAdmissionDeps['defaults']>): NetworkSpec {
  return {
    id: n.ID,
    name: n.Name,
    driver: 'overlay',
    scope: 'swarm',
    created: n.Created || rfc3339Nano(),
    enableIPv6: false,
    internal: n.Internal,
    attachable: n.Attachable,
    ingress: n.Ingress,
    ipam: { Driver: 'default', Options: n.IPAM.Options, Config: n.IPAM.Config.map((c) => ({ Subnet: c.Subnet, Gateway: c.Gateway })) },
    options: { [VXLANID_OPTION]: String(n.VNI), ...n.Options },
    labels: n.Labels ?? {},
    bridge: {
      bridgeName: `ovb-${n.VNI}`,
      mtu: overlayMtu(n.Options),
      icc: true,
      ipMasq: !n.Internal,
      iptables: d.iptables,
      ipForward: d.ipForward,
      userlandProxy: d.userlandProxy,
      chainPrefix: d.chainPrefix,
      defaultGateway: '',
    },
    overlay: { vxlanName: `ovx-${n.VNI}`, vni: n.VNI, local: node.vtep, port: node.port },
    ownerRef: { kind: 'swarm-network', name: n.ID },
    desired: 'present',
  };
}

/** The instance made (pending) if the node has none; the one it has otherwise. */
export function admitOverlayInstance(deps: NetworkAdmissionDeps, n: SwarmNetworkRecord, node: OverlayNode): NetworkResource {
  const have = deps.store.list(Networks).find((r) => r.name === n.ID);
  if (have) return have;
  if (!deps.defaults) throw invalidArgument('this daemon makes no networks');
  return deps.store.create(Networks, n.ID, overlayInstanceSpec(n, node, deps.defaults), { observedGeneration: 0, phase: 'pending', error: '', lastRepair: '', lastRepairAt: '' });
}

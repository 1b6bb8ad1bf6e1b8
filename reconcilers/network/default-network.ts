// The networks every daemon has: `bridge` (the default bridge, shaped by --bridge, --bip, ...),
// `host` and `none`. Written to the store at start-up; the network reconciler makes the host match.
import { randomBytes } from 'node:crypto';
import { invalidArgument } from '../../lib/errors.ts';
import { contains, firstHost, formatIpv4, parseCidr, parseIpv4 } from '../../drivers/network/cidr.ts';
import { cidr6Text, contains6, firstHost6, formatIpv6, parseCidr6, parseIpv6 } from '../../lib/cidr6.ts';
import { type BridgeNetworkOptions, type IpamPoolConfig, type NetworkSpec, type NetworkStatus, Networks, type NetworkResource, findNetworkByName } from '../../store/kinds/network.ts';
import {
  DEFAULT_BIP,
  DEFAULT_BRIDGE,
  DEFAULT_CHAIN_PREFIX,
  DEFAULT_MTU,
  type DefaultBridgeConfig,
  type NetworkDriverPort,
  type NetworkStore,
} from './deps.ts';


export interface DefaultNetworks {
  /** null with --bridge none. */
  bridge: NetworkResource | null;
  host: NetworkResource;
  none: NetworkResource;
}

export function newNetworkStatus(): NetworkStatus {
  return { observedGeneration: 0, phase: 'pending', error: '', lastRepair: '', lastRepairAt: '' };
}

/**
 * Bring the store's `bridge`, `host` and `none` records in line with the daemon's options:
 * created when missing, updated (new generation) when an option changed, `bridge` marked removed
 * with --bridge none. The driver is asked for the address of a user-named bridge when no --bip.
 */
export async function ensureDefaultNetwork(
  store: NetworkStore,
  config: DefaultBridgeConfig,
  deps: { driver?: Pick<NetworkDriverPort, 'inspectBridge'>; now?: () => Date } = {},
): Promise<DefaultNetworks> {
  const now = deps.now ?? (() => new Date());
  const bridgeName = config.bridge || DEFAULT_BRIDGE;
  const desired = bridgeName === 'none' ? null : await desiredBridge(config, bridgeName, deps.driver);

  return store.transaction(() => {
    const host = ensureSimple(store, 'host', 'host', now);
    const none = ensureSimple(store, 'none', 'null', now);
    const cur = findNetworkByName(store, 'bridge');
    let bridge: NetworkResource | null = null;
    if (!desired) {
      if (cur) store.updateSpec(Networks, cur.name, (s) => ({ ...s, desired: 'removed' }));
    } else if (!cur) {
      const id = randomBytes(32).toString('hex');
      const spec: NetworkSpec = {
        ...baseSpec(id, 'bridge', 'bridge', now),
        enableIPv6: desired.enableIPv6,
        ipam: { Driver: 'default', Options: null, Config: desired.pools },
        options: desired.options,
        bridge: desired.bridge,
      };
      bridge = store.create(Networks, id, spec, newNetworkStatus());
    } else if (
      JSON.stringify(cur.spec.ipam.Config) !== JSON.stringify(desired.pools) ||
      cur.spec.enableIPv6 !== desired.enableIPv6 ||
      JSON.stringify(cur.spec.options) !== JSON.stringify(desired.options) ||
      JSON.stringify(cur.spec.bridge) !== JSON.stringify(desired.bridge)
    ) {
      bridge = store.updateSpec(Networks, cur.name, (s) => ({
        ...s,
        enableIPv6: desired.enableIPv6,
        ipam: { ...s.ipam, Config: desired.pools },
        options: desired.options,
        bridge: desired.bridge,
      }));
    } else {
      bridge = cur;
    }
    return { bridge, host, none };
  });
}

interface DesiredBridge {
  /** The IPv4 pool, then the IPv6 one with --ipv6 --fixed-cidr-v6. */
  pools: IpamPoolConfig[];
  enableIPv6: boolean;
  options: Record<string, string>;
  bridge: BridgeNetworkOptions;
}

async function desiredBridge(
  config: DefaultBridgeConfig,
  bridgeName: string,
  driver: Pick<NetworkDriverPort, 'inspectBridge'> | undefined,
): Promise<DesiredBridge> {
  let bip = config.bip || '';
  if (!bip && bridgeName !== DEFAULT_BRIDGE && driver) {
    // A bridge the user made (-b) keeps the address they gave it.
    const existing = await driver.inspectBridge(bridgeName);
    bip = existing?.ipv4[0] ?? '';
  }
  if (!bip) bip = DEFAULT_BIP;
  if (!bip.includes('/')) throw invalidArgument(`invalid --bip ${bip}: expected an address with a prefix length, e.g. 172.17.0.1/16`);
  const cidr = parseCidr(bip);
  // A --bip naming the subnet itself gives the bridge the subnet's first address.
  const gw = cidr.address === cidr.network && cidr.prefixLen < 31 ? firstHost(cidr) : cidr.address;
  const subnet = `${formatIpv4(cidr.network)}/${cidr.prefixLen}`;
  const pool: IpamPoolConfig = { Subnet: subnet, Gateway: formatIpv4(gw) };

  if (config.fixedCidr) {
    const fixed = parseCidr(config.fixedCidr);
    if (fixed.prefixLen < cidr.prefixLen || !contains(cidr, fixed.network)) {
      throw invalidArgument(`fixed-cidr ${config.fixedCidr} is not within the bridge subnet ${subnet}`);
    }
    pool.IPRange = `${formatIpv4(fixed.network)}/${fixed.prefixLen}`;
  }
  let defaultGateway = '';
  if (config.defaultGateway) {
    const g = parseIpv4(config.defaultGateway);
    if (!contains(cidr, g)) throw invalidArgument(`default gateway ${config.defaultGateway} is not within the bridge subnet ${subnet}`);
    defaultGateway = formatIpv4(g);
    pool.AuxiliaryAddresses = { DefaultGatewayIPv4: defaultGateway };
  }
  const v6 = desiredPool6(config);
  const mtu = config.mtu && config.mtu > 0 ? config.mtu : DEFAULT_MTU;
  const icc = config.icc ?? true;
  const ipMasq = config.ipMasq ?? true;
  const bridge: BridgeNetworkOptions = {
    bridgeName,
    mtu,
    icc,
    ipMasq,
    iptables: config.iptables ?? true,
    ipForward: config.ipForward ?? true,
    userlandProxy: config.userlandProxy ?? true,
    chainPrefix: config.chainPrefix || DEFAULT_CHAIN_PREFIX,
    defaultGateway,
    ...(v6 ? { ip6tables: (config.iptables ?? true) && !!config.ip6tables, defaultGatewayV6: v6.defaultGatewayV6 } : {}),
  };
  const options: Record<string, string> = {
    'com.docker.network.bridge.default_bridge': 'true',
    'com.docker.network.bridge.enable_icc': String(icc),
    'com.docker.network.bridge.enable_ip_masquerade': String(ipMasq),
    'com.docker.network.bridge.host_binding_ipv4': '0.0.0.0',
    'com.docker.network.bridge.name': bridgeName,
    'com.docker.network.driver.mtu': String(mtu),
  };
  return { pools: v6 ? [pool, v6.pool] : [pool], enableIPv6: !!config.ipv6, options, bridge };
}

/** With --ipv6 and --fixed-cidr-v6: the bridge's IPv6 pool (the bridge takes the first address). */
function desiredPool6(config: DefaultBridgeConfig): { pool: IpamPoolConfig; defaultGatewayV6: string } | null {
  if (!config.ipv6 || !config.fixedCidrV6) {
    if (config.defaultGatewayV6 && config.ipv6) throw invalidArgument('--default-gateway-v6 needs --fixed-cidr-v6');
    return null;
  }
  const cidr = parseCidr6(config.fixedCidrV6);
  if (cidr.prefixLen > 126) throw invalidArgument(`invalid --fixed-cidr-v6 ${config.fixedCidrV6}: the prefix must be /126 or shorter`);
  const pool: IpamPoolConfig = { Subnet: cidr6Text(cidr), Gateway: formatIpv6(firstHost6(cidr)) };
  let defaultGatewayV6 = '';
  if (config.defaultGatewayV6) {
    const g = parseIpv6(config.defaultGatewayV6);
    if (!contains6(cidr, g)) throw invalidArgument(`default gateway ${config.defaultGatewayV6} is not within the IPv6 subnet ${pool.Subnet}`);
    defaultGatewayV6 = formatIpv6(g);
    pool.AuxiliaryAddresses = { DefaultGatewayIPv6: defaultGatewayV6 };
  }
  return { pool, defaultGatewayV6 };
}

function ensureSimple(store: NetworkStore, name: string, driver: 'host' | 'null', now: () => Date): NetworkResource {
  const cur = findNetworkByName(store, name);
  if (cur) return cur;
  const id = randomBytes(32).toString('hex');
  const spec: NetworkSpec = { ...baseSpec(id, name, driver, now), ipam: { Driver: 'default', Options: null, Config: [] }, options: {} };
  return store.create(Networks, id, spec, newNetworkStatus());
}

function baseSpec(id: string, name: string, driver: NetworkSpec['driver'], now: () => Date): Omit<NetworkSpec, 'ipam' | 'options'> {
  return {
    id,
    name,
    driver,
    scope: 'local',
    created: rfc3339Nano(now()),
    enableIPv6: false,
    internal: false,
    attachable: false,
    ingress: false,
    labels: {},
    desired: 'present',
  };
}

function rfc3339Nano(d: Date): string {
  return d.toISOString().replace(/\.(\d{3})Z$/, '.$1000000Z');
}

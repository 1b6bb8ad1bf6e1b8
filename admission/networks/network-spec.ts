// `POST /networks/create` for the bridge driver: the request checked as the reference daemon
// checks it, turned into a network spec (subnet from the address pools when none is asked for,
// driver options with --default-network-opt under them). The network reconciler makes the host
// match it.
import { invalidArgument, notFound, permissionDenied } from '../../lib/errors.ts';
import { goBool, goBoolSyntax } from '../../lib/units.ts';
import { contains, firstHost, formatIpv4, parseCidr, parseIpv4, type Ipv4Cidr } from '../../lib/cidr.ts';
import type { IpamPoolConfig, NetworkSpec } from '../../store/kinds/network.ts';
import { cidr6Text, contains6, firstHost6, formatIpv6, overlaps6, parseCidr6, parseIpv6 } from '../../lib/cidr6.ts';
import { overlaps, pickSubnet, type AddressPool } from './pools.ts';
import type { NetworkResource } from '../../store/kinds/network.ts';

/** What the daemon's options say about networks it creates. */
export interface NetworkDefaults {
  mtu: number;
  iptables: boolean;
  /** --ip6tables: rules for the IPv6 subnets too. */
  ip6tables: boolean;
  ipForward: boolean;
  userlandProxy: boolean;
  /** Prefix of the engine's iptables chains (the default bridge's). */
  chainPrefix: string;
  /** --default-address-pool; empty: the reference's defaults. */
  pools: AddressPool[];
  /** --default-network-opt: driver name -> option -> value. */
  driverOpts: Record<string, Record<string, string>>;
  /** Subnets of the host's routes, which a new network must not overlap. */
  hostRoutes: () => string[];
}

export interface CreateRequest {
  Name: string;
  Driver?: string | null;
  Scope?: string | null;
  Internal?: boolean | null;
  Attachable?: boolean | null;
  Ingress?: boolean | null;
  ConfigOnly?: boolean | null;
  ConfigFrom?: { Network?: string | null } | null;
  IPAM?: { Driver?: string | null; Options?: Record<string, string> | null; Config?: Array<Record<string, unknown>> | null } | null;
  EnableIPv6?: boolean | null;
  Options?: Record<string, string> | null;
  Labels?: Record<string, string> | null;
}

export const OPT = {
  bridgeName: 'com.docker.network.bridge.name',
  mtu: 'com.docker.network.driver.mtu',
  icc: 'com.docker.network.bridge.enable_icc',
  ipMasq: 'com.docker.network.bridge.enable_ip_masquerade',
  hostBinding: 'com.docker.network.bridge.host_binding_ipv4',
} as const;

function boolOption(key: string, v: string | undefined, dflt: boolean): boolean {
  if (v === undefined) return dflt;
  const b = goBool(v);
  if (b === undefined) throw invalidArgument(`failed to parse ${key} value: ${goBoolSyntax(v)}`);
  return b;
}

function cidrText(c: Ipv4Cidr): string {
  return `${formatIpv4(c.network)}/${c.prefixLen}`;
}

type PoolRequest = Record<string, unknown>;

/** A string field of one IPAM.Config entry ("" when absent). */
function poolField(asked: PoolRequest, k: string): string {
  const v = asked[k];
  if (v !== undefined && v !== null && typeof v !== 'string') throw invalidArgument(`invalid JSON: IPAM.Config.${k}: expected a string`);
  return (v as string | undefined | null) || '';
}

/** An IPAM.Config entry is IPv6 when its subnet (or, without one, its range or gateway) is. */
function isV6Entry(asked: PoolRequest): boolean {
  return [poolField(asked, 'Subnet'), poolField(asked, 'IPRange'), poolField(asked, 'Gateway')].find(Boolean)?.includes(':') ?? false;
}

/** The one IPv4 pool of a bridge network: as asked (checked), or cut from the address pools. */
function ipamPool(asked: PoolRequest, existing: readonly NetworkResource[], d: NetworkDefaults): IpamPoolConfig {
  const taken = existing.flatMap((n) => n.spec.ipam.Config.filter((p) => !p.Subnet.includes(':')).map((p) => parseCidr(p.Subnet)));
  const subnetText = poolField(asked, 'Subnet');
  const rangeText = poolField(asked, 'IPRange');
  const gatewayText = poolField(asked, 'Gateway');
  const aux = (asked.AuxiliaryAddresses ?? null) as Record<string, string> | null;

  let subnet: Ipv4Cidr;
  if (subnetText) {
    subnet = parseCidr(subnetText);
    if (subnet.address !== subnet.network) throw invalidArgument(`invalid subnet ${subnetText}: it should be ${cidrText(subnet)}`);
    if (taken.some((t) => overlaps(t, subnet))) throw permissionDenied('Pool overlaps with other one on this address space');
  } else {
    if (rangeText || gatewayText || (aux && Object.keys(aux).length)) throw invalidArgument('an IP range, gateway or auxiliary address needs a subnet');
    const routes = d.hostRoutes().flatMap((r) => {
      try {
        return [parseCidr(r)];
      } catch {
        return [];
      }
    });
    subnet = parseCidr(pickSubnet(d.pools, [...taken, ...routes]));
  }
  const pool: IpamPoolConfig = { Subnet: cidrText(subnet), Gateway: '' };
  if (rangeText) {
    const range = parseCidr(rangeText);
    if (range.address !== range.network || range.prefixLen < subnet.prefixLen || !contains(subnet, range.network)) {
      throw invalidArgument(`invalid ip-range ${rangeText}: it must be a subset of subnet ${pool.Subnet}`);
    }
    pool.IPRange = cidrText(range);
  }
  if (gatewayText) {
    const gw = parseIpv4(gatewayText);
    if (!contains(subnet, gw)) throw invalidArgument(`invalid gateway address ${gatewayText}: it must be within subnet ${pool.Subnet}`);
    pool.Gateway = formatIpv4(gw);
  } else {
    pool.Gateway = formatIpv4(firstHost(subnet));
  }
  if (aux && Object.keys(aux).length) {
    for (const [name, ip] of Object.entries(aux)) {
      if (typeof ip !== 'string' || !contains(subnet, parseIpv4(ip))) throw invalidArgument(`invalid auxiliary address ${name}=${String(ip)}: it must be within subnet ${pool.Subnet}`);
    }
    pool.AuxiliaryAddresses = { ...aux };
  }
  return pool;
}

/**
 * The IPv6 pool of a network created with EnableIPv6: the subnet must be given (the reference
 * daemon has no IPv6 defaults to cut one from), gateway its first address unless given.
 */
function ipamPool6(asked: PoolRequest | undefined, existing: readonly NetworkResource[]): IpamPoolConfig {
  const subnetText = asked ? poolField(asked, 'Subnet') : '';
  if (!subnetText) {
    if (asked) throw invalidArgument('an IP range, gateway or auxiliary address needs a subnet');
    throw permissionDenied('could not find an available, non-overlapping IPv6 address pool among the defaults to assign to the network');
  }
  const subnet = parseCidr6(subnetText);
  if (subnet.address !== subnet.network) throw invalidArgument(`invalid subnet ${subnetText}: it should be ${cidr6Text(subnet)}`);
  if (subnet.prefixLen > 126) throw invalidArgument(`invalid subnet ${subnetText}: the prefix must be /126 or shorter`);
  const taken = existing.flatMap((n) => n.spec.ipam.Config.filter((p) => p.Subnet.includes(':')).map((p) => parseCidr6(p.Subnet)));
  if (taken.some((t) => overlaps6(t, subnet))) throw permissionDenied('Pool overlaps with other one on this address space');
  const pool: IpamPoolConfig = { Subnet: cidr6Text(subnet), Gateway: '' };
  const rangeText = poolField(asked!, 'IPRange');
  if (rangeText) {
    const range = parseCidr6(rangeText);
    if (range.address !== range.network || range.prefixLen < subnet.prefixLen || !contains6(subnet, range.network)) {
      throw invalidArgument(`invalid ip-range ${rangeText}: it must be a subset of subnet ${pool.Subnet}`);
    }
    pool.IPRange = cidr6Text(range);
  }
  const gatewayText = poolField(asked!, 'Gateway');
  const gw = gatewayText ? parseIpv6(gatewayText) : firstHost6(subnet);
  if (!contains6(subnet, gw)) throw invalidArgument(`invalid gateway address ${gatewayText}: it must be within subnet ${pool.Subnet}`);
  pool.Gateway = formatIpv6(gw);
  const aux = (asked!.AuxiliaryAddresses ?? null) as Record<string, string> | null;
  if (aux && Object.keys(aux).length) {
    const out: Record<string, string> = {};
    for (const [name, ip] of Object.entries(aux)) {
      if (typeof ip !== 'string' || !contains6(subnet, parseIpv6(ip))) throw invalidArgument(`invalid auxiliary address ${name}=${String(ip)}: it must be within subnet ${pool.Subnet}`);
      out[name] = formatIpv6(parseIpv6(ip));
    }
    pool.AuxiliaryAddresses = out;
  }
  return pool;
}

/** The network's pools: one IPv4 (asked or picked), and one IPv6 with EnableIPv6. */
function ipamPools(req: CreateRequest, existing: readonly NetworkResource[], d: NetworkDefaults): IpamPoolConfig[] {
  const configs = (req.IPAM?.Config ?? []).map((c) => {
    if (!c || typeof c !== 'object' || Array.isArray(c)) throw invalidArgument('invalid JSON: IPAM.Config: expected objects');
    return c as PoolRequest;
  });
  const v6 = configs.filter(isV6Entry);
  const v4 = configs.filter((c) => !isV6Entry(c));
  if (v4.length > 1) throw invalidArgument('bridge networks support one IPv4 subnet');
  if (v6.length > 1) throw invalidArgument('bridge networks support one IPv6 subnet');
  if (v6.length && !req.EnableIPv6) throw invalidArgument(`IPv6 subnet ${poolField(v6[0]!, 'Subnet') || '(none)'} given, but IPv6 is not enabled on the network (EnableIPv6, --ipv6)`);
  const pools = [ipamPool(v4[0] ?? {}, existing, d)];
  if (req.EnableIPv6) pools.push(ipamPool6(v6[0], existing));
  return pools;
}

/** The spec of a new user-defined bridge network; 4xx for anything the reference refuses. */
export function buildNetworkSpec(id: string, created: string, req: CreateRequest, existing: readonly NetworkResource[], d: NetworkDefaults): NetworkSpec {
  const driver = req.Driver || 'bridge';
  if (driver === 'host' || driver === 'null') throw permissionDenied(`only one instance of "${driver}" network is allowed`);
  if (driver !== 'bridge') throw notFound(`plugin "${driver}" not found`);
  if (req.Scope && req.Scope !== 'local') throw invalidArgument(`scope "${req.Scope}" is not supported by the bridge driver`);
  if (req.Ingress) throw permissionDenied('ingress networks need cluster mode, which this daemon does not run');
  if (req.ConfigOnly || req.ConfigFrom?.Network) throw invalidArgument('config-only networks are not supported by this daemon yet');
  const ipamDriver = req.IPAM?.Driver || 'default';
  if (ipamDriver !== 'default') throw notFound(`plugin "${ipamDriver}" not found`);

  const options: Record<string, string> = { ...(d.driverOpts.bridge ?? {}), ...(req.Options ?? {}) };
  const bridgeName = options[OPT.bridgeName] || `br-${id.slice(0, 12)}`;
  if (!/^[A-Za-z0-9_.-]{1,15}$/.test(bridgeName)) throw invalidArgument(`invalid bridge name ${bridgeName}: 1 to 15 letters, digits, '_', '.' or '-'`);
  if (existing.some((n) => n.spec.bridge?.bridgeName === bridgeName)) throw permissionDenied(`bridge name ${bridgeName} is already used by another network`);
  let mtu = d.mtu;
  if (options[OPT.mtu] !== undefined) {
    mtu = Number(options[OPT.mtu]);
    if (!/^\d+$/.test(options[OPT.mtu]!) || mtu < 68 || mtu > 65535) throw invalidArgument(`invalid MTU ${options[OPT.mtu]}: it must be between 68 and 65535`);
  }
  const icc = boolOption(OPT.icc, options[OPT.icc], true);
  const ipMasq = boolOption(OPT.ipMasq, options[OPT.ipMasq], true);
  if (options[OPT.hostBinding] !== undefined) parseIpv4(options[OPT.hostBinding]!);

  const internal = !!req.Internal;
  return {
    id,
    name: req.Name,
    driver: 'bridge',
    scope: 'local',
    created,
    enableIPv6: !!req.EnableIPv6,
    internal,
    attachable: !!req.Attachable,
    ingress: false,
    ipam: { Driver: 'default', Options: req.IPAM?.Options ?? null, Config: ipamPools(req, existing, d) },
    options,
    labels: req.Labels ?? {},
    bridge: {
      bridgeName,
      mtu,
      icc,
      // An internal network has no way out: nothing is masqueraded for it.
      ipMasq: ipMasq && !internal,
      iptables: d.iptables,
      ipForward: d.ipForward,
      userlandProxy: d.userlandProxy,
      chainPrefix: d.chainPrefix,
      defaultGateway: '',
      ip6tables: d.ip6tables,
    },
    desired: 'present',
  };
}

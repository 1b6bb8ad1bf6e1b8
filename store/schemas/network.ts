// Schemas of the networking kinds: 'network', 'ipam-allocation', 'port-allocation' and 'endpoint'.
import * as z from 'zod';
import type { KindSchema } from '../schema.ts';
import type { EndpointSpec, EndpointStatus } from '../endpoint-types.ts';
import { ENDPOINT_KIND } from '../endpoint-types.ts';
import type { IpamAllocationSpec, NetworkSpec, NetworkStatus, PortAllocationSpec } from '../network-types.ts';
import { NETWORK_KIND } from '../network-types.ts';

const stringMap = z.record(z.string(), z.string());
const strings = z.array(z.string());
const proto = z.enum(['tcp', 'udp', 'sctp']);

const pool = z.object({
  Subnet: z.string(),
  Gateway: z.string(),
  IPRange: z.string().optional(),
  AuxiliaryAddresses: stringMap.optional(),
});

const bridgeOptions = z.object({
  bridgeName: z.string(),
  mtu: z.number().int(),
  icc: z.boolean(),
  ipMasq: z.boolean(),
  iptables: z.boolean(),
  ipForward: z.boolean(),
  userlandProxy: z.boolean(),
  chainPrefix: z.string(),
  defaultGateway: z.string(),
  ip6tables: z.boolean().optional(),
  defaultGatewayV6: z.string().optional(),
});

export const networkSpecSchema = z.object({
  id: z.string(),
  name: z.string(),
  driver: z.enum(['bridge', 'host', 'null']),
  scope: z.literal('local'),
  created: z.string(),
  enableIPv6: z.boolean(),
  internal: z.boolean(),
  attachable: z.boolean(),
  ingress: z.boolean(),
  ipam: z.object({ Driver: z.literal('default'), Options: stringMap.nullable(), Config: z.array(pool) }),
  options: stringMap,
  labels: stringMap,
  bridge: bridgeOptions.optional(),
  desired: z.enum(['present', 'removed']),
}) satisfies z.ZodType<NetworkSpec>;

export const networkStatusSchema = z.object({
  observedGeneration: z.number().int().nonnegative(),
  phase: z.enum(['pending', 'ready', 'failed']),
  error: z.string(),
  lastRepair: z.string(),
  lastRepairAt: z.string(),
  applied: z
    .object({
      bridgeName: z.string(),
      subnet: z.string(),
      chainPrefix: z.string(),
      iptables: z.boolean(),
      icc: z.boolean(),
      ipMasq: z.boolean(),
      subnet6: z.string().optional(),
      ip6tables: z.boolean().optional(),
    })
    .optional(),
}) satisfies z.ZodType<NetworkStatus>;

export const networkSchema: KindSchema = { kind: NETWORK_KIND.network, version: 1, spec: networkSpecSchema, status: networkStatusSchema };

export const ipamAllocationSchema: KindSchema = {
  kind: NETWORK_KIND.ipamAllocation,
  version: 1,
  spec: z.object({
    networkId: z.string(),
    address: z.string(),
    prefixLen: z.number().int(),
    containerId: z.string(),
    allocatedAt: z.string(),
  }) satisfies z.ZodType<IpamAllocationSpec>,
  status: z.object({}),
};

export const portAllocationSchema: KindSchema = {
  kind: NETWORK_KIND.portAllocation,
  version: 1,
  spec: z.object({
    containerId: z.string(),
    proto,
    hostIp: z.string(),
    hostPort: z.number().int(),
    containerIp: z.string(),
    containerPort: z.number().int(),
    bridge: z.string(),
    chainPrefix: z.string(),
    iptables: z.boolean(),
    userlandProxy: z.boolean(),
  }) satisfies z.ZodType<PortAllocationSpec>,
  status: z.object({}),
};

export const endpointSpecSchema = z.object({
  containerId: z.string(),
  networkId: z.string(),
  networkName: z.string(),
  config: z.object({
    IPAMConfig: z
      .object({ IPv4Address: z.string().optional(), IPv6Address: z.string().optional(), LinkLocalIPs: strings.nullish() })
      .nullish(),
    Aliases: strings.nullish(),
    Links: strings.nullish(),
    MacAddress: z.string().optional(),
    DriverOpts: stringMap.nullish(),
  }),
  primary: z.boolean().optional(),
  desired: z.enum(['present', 'removed']),
}) satisfies z.ZodType<EndpointSpec>;

export const endpointStatusSchema = z.object({
  observedGeneration: z.number().int().nonnegative(),
  phase: z.enum(['pending', 'attached', 'detached', 'failed', 'removing']),
  pid: z.number().int().nonnegative(),
  ifName: z.string(),
  hostVeth: z.string(),
  addresses: z
    .object({
      EndpointID: z.string(),
      MacAddress: z.string(),
      Gateway: z.string(),
      IPAddress: z.string(),
      IPPrefixLen: z.number().int(),
      IPv6Gateway: z.string(),
      GlobalIPv6Address: z.string(),
      GlobalIPv6PrefixLen: z.number().int(),
    })
    .nullable(),
  pluggedBy: z.enum(['start', 'endpoint']).optional(),
  error: z.string(),
  conditions: z.array(
    z.object({ type: z.literal('Attached'), status: z.enum(['True', 'False']), reason: z.string(), message: z.string(), lastTransitionTime: z.string() }),
  ),
}) satisfies z.ZodType<EndpointStatus>;

export const endpointSchema: KindSchema = { kind: ENDPOINT_KIND, version: 1, spec: endpointSpecSchema, status: endpointStatusSchema };

// The ipam-allocation kind: kind 'ipam-allocation', name = `<networkId>/<ipv4>` (or the canonical IPv6 text). The record's existence
// is the claim: creating it fails when the address is taken, so an address cannot be handed out
// twice, and it survives daemon restarts. Deleted when the container is removed.

import * as z from 'zod';
import { defineKind } from '../kind.ts';
import type { Resource } from '../types.ts';

export interface IpamAllocationSpec {
  networkId: string;
  /** "172.17.0.2", or "fd00:1::2" (canonical) for an IPv6 address. */
  address: string;
  prefixLen: number;
  containerId: string;
  /** RFC 3339 time of the allocation. */
  allocatedAt: string;
}
export type IpamAllocationStatus = Record<string, never>;

export type IpamAllocationResource = Resource<IpamAllocationSpec, IpamAllocationStatus>;

export const IpamAllocations = defineKind<IpamAllocationSpec, IpamAllocationStatus>({
  name: 'ipam-allocation',
  version: 1,
  schema: {
    spec: z.object({
      networkId: z.string(),
      address: z.string(),
      prefixLen: z.number().int(),
      containerId: z.string(),
      allocatedAt: z.string(),
    }) satisfies z.ZodType<IpamAllocationSpec>,
    status: z.object({}) as z.ZodType<IpamAllocationStatus>,
  },
});

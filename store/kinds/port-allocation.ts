// The port-allocation kind: kind 'port-allocation', name = `<proto>/<host ip>/<host port>`. The record's
// existence is the claim on the host port, as for addresses; it holds what the rules were made
// from, so they can be taken away from the record alone (run end, crash recovery).

import * as z from 'zod';
import { defineKind } from '../kind.ts';
import type { Resource } from '../types.ts';

export interface PortAllocationSpec {
  containerId: string;
  proto: 'tcp' | 'udp' | 'sctp';
  hostIp: string;
  hostPort: number;
  containerIp: string;
  containerPort: number;
  bridge: string;
  chainPrefix: string;
  /** iptables rules were programmed for it (the network has --iptables on). */
  iptables: boolean;
  userlandProxy: boolean;
}
export type PortAllocationStatus = Record<string, never>;

export type PortAllocationResource = Resource<PortAllocationSpec, PortAllocationStatus>;

export const PortAllocations = defineKind<PortAllocationSpec, PortAllocationStatus>({
  name: 'port-allocation',
  version: 1,
  schema: {
    spec: z.object({
      containerId: z.string(),
      proto: z.enum(['tcp', 'udp', 'sctp']),
      hostIp: z.string(),
      hostPort: z.number().int(),
      containerIp: z.string(),
      containerPort: z.number().int(),
      bridge: z.string(),
      chainPrefix: z.string(),
      iptables: z.boolean(),
      userlandProxy: z.boolean(),
    }) satisfies z.ZodType<PortAllocationSpec>,
    status: z.object({}) as z.ZodType<PortAllocationStatus>,
  },
});

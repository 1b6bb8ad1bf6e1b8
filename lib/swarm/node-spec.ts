// A swarm node's spec (moby's api/types/swarm NodeSpec): its name and labels, role and availability,
// as `docker node update` sends it (replaced whole, as the reference) and GET /nodes shows it; the
// reference's refusals of a role or availability it does not know.
import { invalidArgument } from '../errors.ts';

/** `/engine/swarm/nodes/<id>`: the node specs in a swarm's etcd (cmd/swarm/node-specs.ts). */
export const NODE_SPECS_PREFIX = '/engine/swarm/nodes/';
export const nodeSpecKey = (id: string) => `${NODE_SPECS_PREFIX}${id}`;

export type NodeRole = 'manager' | 'worker';
export type NodeAvailability = 'active' | 'pause' | 'drain';

export interface NodeSpec {
  Name?: string;
  Labels: Record<string, string>;
  Role: NodeRole;
  Availability: NodeAvailability;
}

export interface NodeSpecInput {
  Name?: string | null;
  Labels?: Record<string, string> | null;
  Role?: string | null;
  Availability?: string | null;
}

const ROLES = new Set(['manager', 'worker']);
const AVAILABILITIES = new Set(['active', 'pause', 'drain']);

/** An update's spec: the whole spec, as the reference converts it (an unknown or empty role or availability refused). */
export function nodeSpecOf(input: NodeSpecInput): NodeSpec {
  const role = (input.Role ?? '').toLowerCase();
  if (!ROLES.has(role)) throw invalidArgument(`invalid Role: ${JSON.stringify(input.Role ?? '')}`);
  const availability = (input.Availability ?? '').toLowerCase();
  if (!AVAILABILITIES.has(availability)) throw invalidArgument(`invalid Availability: ${JSON.stringify(input.Availability ?? '')}`);
  return { ...(input.Name ? { Name: input.Name } : {}), Labels: input.Labels ?? {}, Role: role as NodeRole, Availability: availability as NodeAvailability };
}

/** The spec as the reference renders it (Name omitted when empty). */
export function renderNodeSpec(s: NodeSpec): Record<string, unknown> {
  return { ...(s.Name ? { Name: s.Name } : {}), Labels: s.Labels, Role: s.Role, Availability: s.Availability };
}

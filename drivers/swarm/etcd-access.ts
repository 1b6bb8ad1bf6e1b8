// Who may do what in a managed swarm's etcd (etcd's own auth: users and roles, the user named by
// the CN of the client certificate, which is the node id, ./ca.ts). A manager is a user with
// etcd's root role; a worker a user with a role of its own, `node-<id>`, that may read the
// membership (node records, lasting member records, the leader election), its own node spec and
// the tasks it is given, and write only its own node record, lasting record and task status —
// another node's tasks are refused it. (The overlay networks' endpoints it may write, any node's: not yet confined to its own.) A node removed from the swarm has no user: its certificate
// opens nothing. Auth is enabled once etcd's `root` user exists (a user no certificate names:
// swarm CNs are 25-character ids).
import type { Etcd3, IPermission } from 'etcd3';
import { Range } from 'etcd3';
import { ELECTION_PREFIX, MEMBERS_PREFIX, memberKey, NODES_PREFIX, nodeKey, STATUS_PREFIX } from '../../lib/cluster/node-record.ts';
import { nodeSpecKey } from '../../lib/swarm/node-spec.ts';
import { NODE_TASKS_PREFIX } from '../../lib/swarm/task.ts';
import { NETWORKS_PREFIX } from '../../lib/swarm/network.ts';
import { ENDPOINTS_PREFIX } from '../../lib/swarm/endpoints.ts';

export const ROOT = 'root';
export type AccessRole = 'manager' | 'worker';

/** The etcd role of a worker (its own). */
export const workerRole = (nodeId: string) => `node-${nodeId}`;

type Perm = keyof typeof import('etcd3').Permission;
const prefix = (p: string, permType: Perm): IPermission => {
  const r = Range.prefix(p);
  return { permType, key: r.start, range_end: r.end };
};
const key = (k: string, permType: Perm): IPermission => ({ permType, key: Buffer.from(k), range_end: Buffer.alloc(0) });

/** What a worker may do: read the membership, its tasks and its spec; write its own records. */
export function workerPermissions(nodeId: string): IPermission[] {
  return [
    prefix(NODES_PREFIX, 'Read'),
    prefix(MEMBERS_PREFIX, 'Read'),
    prefix(ELECTION_PREFIX, 'Read'),
    prefix(`${NODE_TASKS_PREFIX}${nodeId}/`, 'Read'),
    key(nodeSpecKey(nodeId), 'Read'),
    key(nodeKey(nodeId), 'Readwrite'),
    key(memberKey(nodeId), 'Readwrite'),
    prefix(`${STATUS_PREFIX}${nodeId}/`, 'Readwrite'),
    // The overlay networks' records and every node's endpoints on them (the node takes its
    // addresses there and programs its VXLAN devices from the others': reconcilers/node/overlay.ts).
    prefix(NETWORKS_PREFIX, 'Read'),
    prefix(ENDPOINTS_PREFIX, 'Readwrite'),
  ];
}

const already = (err: unknown, what: RegExp) => err instanceof Error && what.test(err.message);

/** The roles etcd's users have now (root's included). */
export async function users(client: Etcd3): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>();
  for (const name of (await client.auth.userList()).users ?? []) out.set(name, (await client.auth.userGet({ name })).roles ?? []);
  return out;
}

/** Makes `nodeId` a user of `role` (idempotent): a manager's roles are root's, a worker's its own role's. */
export async function grantNode(client: Etcd3, nodeId: string, role: AccessRole, has?: string[]): Promise<void> {
  let roles = has;
  if (!roles) {
    try {
      roles = (await client.auth.userGet({ name: nodeId })).roles ?? [];
    } catch (err) {
      if (!already(err, /user name not found/i)) throw err;
      await client.auth.userAdd({ name: nodeId, options: { no_password: true } }).catch((e: unknown) => {
        if (!already(e, /user name already exists/i)) throw e;
      });
      roles = [];
    }
  }
  const want = role === 'manager' ? ROOT : workerRole(nodeId);
  if (role === 'worker' && !roles.includes(want)) {
    await client.auth.roleAdd({ name: want }).catch((e: unknown) => {
      if (!already(e, /role name already exists/i)) throw e;
    });
    for (const perm of workerPermissions(nodeId)) await client.auth.roleGrantPermission({ name: want, perm });
  }
  if (!roles.includes(want)) await client.auth.userGrantRole({ user: nodeId, role: want });
  for (const r of roles) if (r !== want) await client.auth.userRevokeRole({ name: nodeId, role: r });
  if (role === 'manager') await dropRole(client, workerRole(nodeId));
}

/** Removes `nodeId`'s user and its worker role (a node removed from the swarm). */
export async function dropNode(client: Etcd3, nodeId: string): Promise<void> {
  await client.auth.userDelete({ name: nodeId }).catch((e: unknown) => {
    if (!already(e, /user name not found/i)) throw e;
  });
  await dropRole(client, workerRole(nodeId));
}

async function dropRole(client: Etcd3, role: string): Promise<void> {
  await client.auth.roleDelete({ role }).catch((e: unknown) => {
    if (!already(e, /role name not found/i)) throw e;
  });
}

/** Turns etcd's auth on (idempotent): its root user is made first, as etcd requires. */
export async function enableAccess(client: Etcd3): Promise<void> {
  let roles: string[] = [];
  try {
    roles = (await client.auth.userGet({ name: ROOT })).roles ?? [];
  } catch (err) {
    if (!already(err, /user name not found/i)) throw err;
    await client.auth.userAdd({ name: ROOT, options: { no_password: true } });
  }
  if (!roles.includes(ROOT)) await client.auth.userGrantRole({ user: ROOT, role: ROOT });
  await client.auth.authEnable();
}

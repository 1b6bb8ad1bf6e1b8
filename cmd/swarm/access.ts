// Who may do what in a managed swarm's etcd, reconciled on the leading manager (every 2 s, ./node.ts's
// looks): the desired users are the node specs — a node whose spec says manager, or that still has an
// etcd member (a manager being demoted removes its own member first, ./role.ts), is a manager, any
// other a worker (drivers/swarm/etcd-access.ts says what each may do) — and the observed ones etcd's
// users. A user with no spec (a node removed) is dropped; auth is enabled once every user is there
// (a swarm made before this, or just made by init). Users are read before specs: a join writes its
// node's spec before its user (./admission.ts grants the user at once, so the node's first call
// is allowed), so no user is seen here whose spec is not.
import type { Etcd3 } from 'etcd3';
import type { Logger } from 'pino';
import { dropNode, enableAccess, grantNode, ROOT, users, workerRole, type AccessRole } from '../../drivers/swarm/etcd-access.ts';
import type { NodeSpec } from '../../lib/swarm/node-spec.ts';
import { bounded } from './objects.ts';
import type { SwarmState } from './state.ts';

export interface AccessDeps {
  /** The node's state now (undefined: in no swarm, or not running). */
  state: () => SwarmState | undefined;
  /** Whether this node leads the swarm now. */
  leading: () => boolean;
  etcd: () => Etcd3;
  specs: () => Promise<Map<string, { spec: NodeSpec }>>;
  log: Logger;
}

export class AccessReconciler {
  private readonly d: AccessDeps;
  private running = false;
  /** The swarm whose etcd this node has seen auth enabled in (etcd keeps it on; enabling again would be a no-op write). */
  private enabledIn: string | undefined;

  constructor(d: AccessDeps) {
    this.d = d;
  }

  async look(): Promise<void> {
    const state = this.d.state();
    if (!state || state.store !== 'managed' || state.role !== 'manager' || !this.d.leading() || this.running) return;
    this.running = true;
    try {
      await bounded(this.reconcile(state.clusterId));
    } catch (err) {
      this.d.log.warn({ err: err instanceof Error ? err.message : String(err) }, 'the swarm\'s etcd users could not be reconciled yet; trying again');
    } finally {
      this.running = false;
    }
  }

  private async reconcile(clusterId: string): Promise<void> {
    const client = this.d.etcd();
    const have = await users(client);
    const specs = await this.d.specs();
    if (!specs.size) return;
    const members = new Set(((await client.cluster.memberList({})).members ?? []).map((m) => m.name));
    for (const [id, { spec }] of specs) {
      const role: AccessRole = spec.Role === 'manager' || members.has(id) ? 'manager' : 'worker';
      const roles = have.get(id);
      const want = role === 'manager' ? ROOT : workerRole(id);
      if (roles?.length === 1 && roles[0] === want) continue;
      await grantNode(client, id, role, roles);
      this.d.log.info({ nodeId: id, role }, 'the node\'s etcd user follows its role');
    }
    for (const id of have.keys()) {
      if (id === ROOT || specs.has(id)) continue;
      await dropNode(client, id);
      this.d.log.info({ nodeId: id }, 'the etcd user of a node that left the swarm was removed');
    }
    if (this.enabledIn !== clusterId) {
      await enableAccess(client);
      this.enabledIn = clusterId;
      this.d.log.info('the swarm\'s etcd admits each node by its certificate to what its role may do');
    }
  }
}

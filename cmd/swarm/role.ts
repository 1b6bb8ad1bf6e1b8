// A node's role in a managed swarm, reconciled: the desired role is the node's spec in etcd
// (`docker node promote/demote` write it, ./node-specs.ts), the observed one its state
// (<data-root>/swarm/state.json). Every 2 s (./node.ts's looks) the node compares them and acts on a difference:
// - promoted (worker → manager): it asks a manager (its listener, known from the membership's
//   records) for a manager's certificate for a new key and a learner member (./admission.ts
//   `promote`), then starts its listener and member as a manager that joins does;
// - demoted (manager → worker): it removes its own etcd member (the others keep their quorum),
//   stops its listener and member, and goes on as a worker on the other members.
// A worker also keeps its list of the managers' etcd URLs current (the next start reaches the swarm
// through it). A change that fails is tried again at the next look; nothing is half-done on the node's side
// (the old parts start again). A demoted node that is down cannot do its part: the manager that
// demoted it removes its member (./node.ts).
import type { Logger } from 'pino';
import { newNodeKey } from '../../drivers/swarm/ca.ts';
import { SWARM_ETCD_CLIENT_PORT, SWARM_ETCD_PEER_PORT } from '../../drivers/swarm/etcd-member.ts';
import type { NodeRecord } from '../../lib/cluster/node-record.ts';
import type { NodeSpec } from '../../lib/swarm/node-spec.ts';
import { reconfigure } from './admission.ts';
import type { NodeParts } from './node-parts.ts';
import { bounded } from './objects.ts';
import { requestPromotion } from './remote-join.ts';
import { certHosts } from './requests.ts';
import type { SwarmFiles, SwarmState } from './state.ts';
import { bracketHost, joinHostPort } from '../../lib/host-port.ts';

export interface RoleDeps {
  /** The node's state now (undefined: in no swarm, or not ready to change). */
  state: () => SwarmState | undefined;
  /** Writes the state file and makes it the node's state. */
  setState: (s: SwarmState) => Promise<void>;
  /** The node's own spec as etcd holds it. */
  spec: (nodeId: string) => Promise<NodeSpec | undefined>;
  /** The client URLs of the swarm's voting etcd members (the managers), as etcd lists them now. */
  managers: () => Promise<string[]>;
  /** The membership's records (where the managers' listeners are). */
  records: () => NodeRecord[];
  parts: NodeParts;
  files: SwarmFiles;
  /** Runs a change with the node's other changes (init, join, leave), one at a time. */
  serial: <T>(fn: () => Promise<T>) => Promise<T>;
  log: Logger;
}

export class RoleReconciler {
  private readonly d: RoleDeps;
  private running = false;

  constructor(d: RoleDeps) {
    this.d = d;
  }

  /** One look: the spec's role against the state's, a change made when they differ. */
  async look(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      const state = this.d.state();
      if (!state || state.store !== 'managed') return;
      if (state.role === 'worker') await this.refreshManagers(state);
      const spec = await bounded(this.d.spec(state.nodeId)).catch(() => undefined);
      if (!spec || spec.Role === state.role) return;
      await this.d.serial(async () => {
        const now = this.d.state();
        if (now?.nodeId !== state.nodeId || now.role === spec.Role) return;
        if (spec.Role === 'manager') await this.promote(now);
        else await this.demote(now);
      });
    } catch (err) {
      this.d.log.warn({ err: err instanceof Error ? err.message : String(err) }, 'the node\'s role could not be changed yet; trying again');
    } finally {
      this.running = false;
    }
  }

  /**
   * A worker keeps the managers' etcd URLs it reaches the swarm through (state.json): as managers
   * come and go (promote, demote, rm) the list is kept current, so the next start finds the swarm.
   */
  private async refreshManagers(state: SwarmState): Promise<void> {
    const urls = await bounded(this.d.managers()).catch(() => []);
    const same = (a: readonly string[], b: readonly string[]) => a.length === b.length && [...a].sort().every((u, i) => u === [...b].sort()[i]);
    if (!urls.length || same(urls, state.managers ?? [])) return;
    await this.d.serial(async () => {
      const now = this.d.state();
      if (now?.nodeId === state.nodeId && now.role === 'worker') await this.d.setState({ ...now, managers: urls });
    });
  }

  private async promote(state: SwarmState): Promise<void> {
    const managers = this.d
      .records()
      .filter((r) => r.state === 'ready' && (r.role ?? 'manager') === 'manager' && r.id !== state.nodeId)
      .map((r) => joinHostPort(r.addr, r.port ?? 2377));
    const old = await this.d.files.readCerts();
    const key = newNodeKey();
    const host = bracketHost(state.advertiseHost);
    const answer = await requestPromotion(managers, { ca: old.caPem, cert: old.certPem, key: old.keyPem }, { PublicKey: key.publicKeyPem, Hosts: certHosts(state), PeerURL: `https://${host}:${SWARM_ETCD_PEER_PORT}` });
    const next: SwarmState = { ...state, role: 'manager', member: { clientPort: SWARM_ETCD_CLIENT_PORT, peerPort: SWARM_ETCD_PEER_PORT }, managers: answer.Managers };
    await this.d.parts.stop(false);
    await this.d.files.writeCerts(answer.RootCA, { certPem: answer.Certificate, keyPem: key.keyPem });
    await this.d.files.writeDataKey(answer.DataKey);
    try {
      await this.d.parts.start(next, { join: answer.InitialCluster && answer.MemberID ? { initialCluster: answer.InitialCluster, memberId: answer.MemberID } : undefined });
    } catch (err) {
      // Back to the worker it was (its certificate too); the next look asks again.
      await this.d.parts.stop(true).catch(() => {});
      await this.d.files.writeCerts(old.caPem, { certPem: old.certPem, keyPem: old.keyPem });
      await this.d.files.writeDataKey(undefined);
      await this.d.parts.start(state);
      throw err;
    }
    await this.d.setState(next);
    this.d.log.info({ nodeId: state.nodeId }, 'the node was promoted: it is a manager');
  }

  private async demote(state: SwarmState): Promise<void> {
    const client = await this.d.parts.client();
    let others: string[];
    try {
      const members = (await bounded(client.cluster.memberList({}))).members ?? [];
      const self = members.find((m) => m.name === state.nodeId);
      others = members.filter((m) => m !== self && !m.isLearner).flatMap((m) => m.clientURLs);
      if (!others.length) throw new Error('no other manager to go on with');
      if (self) await reconfigure(() => client.cluster.memberRemove({ ID: self.ID }));
    } finally {
      client.close();
    }
    await this.d.parts.stop(true);
    // A worker holds no data key.
    await this.d.files.writeDataKey(undefined);
    const next: SwarmState = { ...state, role: 'worker', member: undefined, managers: others };
    await this.d.parts.start(next);
    await this.d.setState(next);
    this.d.log.info({ nodeId: state.nodeId }, 'the node was demoted: it is a worker');
  }
}

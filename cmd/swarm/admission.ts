// A manager's side of a join (the reference's node CA and dispatcher on 2377): a node that asks
// with a join token gets a node id and a certificate for its public key from the swarm's CA, its
// node spec, and what it needs to reach the swarm's etcd — the members' client URLs, and for a
// manager a place in etcd's cluster: it is added as a learner (no vote, so the quorum is not
// changed by a member that may never start) that the new manager promotes once it has caught up.
// The token is checked against the swarm's current ones (its CA digest and its secret); a refusal
// leaves nothing behind. A node that gives up halfway (or leaves) asks to be forgotten. A worker
// promoted (`docker node promote`: its spec says manager) asks for a manager's place the same way,
// known by its certificate instead of a token.
import type { Etcd3 } from 'etcd3';
import * as z from 'zod';
import type { Logger } from 'pino';
import { signNodeKey, type KeyPair } from '../../drivers/swarm/ca.ts';
import { failedPrecondition, invalidArgument, isCode, unavailable } from '../../lib/errors.ts';
import { memberKey } from '../../lib/cluster/node-record.ts';
import { caDigest, parseJoinToken } from '../../lib/swarm/join-token.ts';
import { bounded, roleOfToken, storedSwarm, type StoredCluster } from './objects.ts';
import type { NodeSpecs } from './node-specs.ts';
import { newSwarmId } from '../../lib/swarm/ids.ts';

export const INVALID_TOKEN = 'rpc error: code = InvalidArgument desc = A valid join token is necessary to join this cluster';

/** What a joining node sends (over TLS, checked against the CA its token names). */
export const JoinBody = z.object({
  JoinToken: z.string().max(200),
  PublicKey: z.string().max(4096),
  AdvertiseHost: z.string().max(255),
  /** Names its certificate carries (its advertise and listen hosts). */
  Hosts: z.array(z.string().max(255)).max(8),
  Availability: z.enum(['active', 'pause', 'drain']).default('active'),
  /** A manager's etcd peer URL: the member to add. */
  PeerURL: z.string().max(300).optional(),
});
export type JoinBody = z.input<typeof JoinBody>;

/** What a node being promoted sends (it is known by its certificate). */
export const PromoteBody = JoinBody.pick({ PublicKey: true, Hosts: true }).extend({ PeerURL: z.string().max(300) });
export type PromoteBody = z.input<typeof PromoteBody>;

export interface JoinAnswer {
  NodeID: string;
  ClusterID: string;
  Role: 'manager' | 'worker';
  Certificate: string;
  RootCA: string;
  /** The client URLs of the swarm's etcd members (the managers). */
  Managers: string[];
  /** The swarm's dispatcher heartbeat period (ns). */
  HeartbeatPeriod?: number;
  /** A manager's: etcd's --initial-cluster with its own member in it, and that member's id. */
  InitialCluster?: string;
  /** A manager's: the swarm's data key (./state.ts), kept by managers only. */
  DataKey?: string;
  MemberID?: string;
}

export interface AdmissionDeps {
  etcd: () => Etcd3;
  /** The swarm's data key as this manager holds it (given to a manager that joins or is promoted). */
  dataKey: () => Promise<string | undefined>;
  /** Makes the node a user of the swarm's etcd in its role (a managed swarm's: drivers/swarm/etcd-access.ts). */
  grant: (nodeId: string, role: 'manager' | 'worker') => Promise<void>;
  /**
   * A client of its own for etcd's member calls, closed after: etcd refuses a member add for a few
   * seconds after a member joined, and those refusals must not open the breaker of the client the
   * node's membership lives on.
   */
  memberClient: () => Promise<Etcd3>;
  specs: NodeSpecs;
  log: Logger;
}

const RECONFIGURE_WITHIN_MS = 20_000;
/**
 * etcd's refusals of a member change that pass: etcd counts a member as started only once it has
 * been connected for 5 s, so a change just after a member joined or was promoted is refused a while.
 */
const NOT_YET = /unhealthy cluster|not enough started members|too many learner|circuit breaker/i;

/** An etcd membership change (member add, remove), asked again while etcd says the cluster is not ready for it yet. */
export async function reconfigure<T>(change: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + RECONFIGURE_WITHIN_MS;
  for (;;) {
    try {
      return await bounded(change());
    } catch (err) {
      if (!NOT_YET.test(err instanceof Error ? err.message : String(err)) || Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}

export class Admission {
  private readonly d: AdmissionDeps;
  /** One join at a time: etcd takes one learner at a time. */
  private queue: Promise<unknown> = Promise.resolve();
  /** The members this manager added for managers that joined, by node id (a learner has no name until it starts). */
  private readonly learners = new Map<string, string>();

  constructor(d: AdmissionDeps) {
    this.d = d;
  }

  admit(raw: unknown): Promise<JoinAnswer> {
    return this.serial(() => this.admitNow(raw));
  }

  /**
   * A worker whose spec now says manager (`docker node promote`) asks for its place: a manager's
   * certificate for its new key and a learner member (the node is known by its certificate).
   */
  promote(nodeId: string, raw: unknown): Promise<JoinAnswer> {
    return this.serial(async () => {
      const parsed = PromoteBody.safeParse(raw);
      if (!parsed.success) throw invalidArgument(`invalid promotion request: ${parsed.error.issues[0]?.message ?? 'malformed'}`);
      const spec = (await bounded(this.d.specs.list())).get(nodeId)?.spec;
      if (spec?.Role !== 'manager') throw failedPrecondition(`node ${nodeId} is not to be a manager`);
      const { stored, ca } = await this.swarm();
      await bounded(this.d.grant(nodeId, 'manager'));
      return await this.place(stored, ca, nodeId, 'manager', parsed.data);
    });
  }

  /** Removes a node that gave up its join (or left): its etcd member if it has one, its spec, its record. */
  async forget(nodeId: string): Promise<void> {
    const etcd = this.d.etcd();
    await bounded(this.d.specs.remove(nodeId, { force: true, down: true, anyRole: true })).catch((err: unknown) => {
      if (!isCode(err, 'NotFound')) throw err;
    });
    await bounded(etcd.delete().key(memberKey(nodeId)).exec());
    // Last: a manager leaving asks its own member, which stops serving once removed.
    await this.removeMember(nodeId);
  }

  /** Removes the node's etcd member, if it has one (a manager demoted or removed while down, one that gave up its join). */
  async removeMember(nodeId: string): Promise<void> {
    const client = await this.d.memberClient();
    try {
      const members = (await bounded(client.cluster.memberList({}))).members ?? [];
      const learner = this.learners.get(nodeId);
      const mine = members.find((m) => m.name === nodeId || (learner !== undefined && String(m.ID) === learner));
      if (mine) await reconfigure(() => client.cluster.memberRemove({ ID: mine.ID }));
    } finally {
      client.close();
    }
    this.learners.delete(nodeId);
  }

  private async admitNow(raw: unknown): Promise<JoinAnswer> {
    const parsed = JoinBody.safeParse(raw);
    if (!parsed.success) throw invalidArgument(`invalid join request: ${parsed.error.issues[0]?.message ?? 'malformed'}`);
    const body = parsed.data;
    const token = parseJoinToken(body.JoinToken);
    if (!token) throw invalidArgument(INVALID_TOKEN);
    const { stored, ca } = await this.swarm();
    if (token.digest !== caDigest(stored.rootCaPem)) throw invalidArgument(INVALID_TOKEN);
    const role = roleOfToken(stored, token);
    if (!role) throw invalidArgument(INVALID_TOKEN);
    if (role === 'manager' && !body.PeerURL) throw invalidArgument('a manager joins with the peer URL of its etcd member');
    const nodeId = newSwarmId();
    await bounded(this.d.specs.put(nodeId, { Labels: {}, Role: role, Availability: body.Availability }));
    try {
      // Its etcd user before its answer: the node's first call is allowed (./access.ts drops it if the join fails).
      await bounded(this.d.grant(nodeId, role));
      return await this.place(stored, ca, nodeId, role, body);
    } catch (err) {
      await bounded(this.d.specs.remove(nodeId, { force: true, down: true, anyRole: true })).catch(() => {});
      throw err;
    }
  }

  private async swarm(): Promise<{ stored: StoredCluster; ca: KeyPair }> {
    const found = await bounded(storedSwarm(this.d.etcd()));
    if (!found?.ca) throw unavailable('The swarm has no cluster object');
    return { stored: found.stored, ca: found.ca };
  }

  /** The node's certificate for its key, and for a manager its learner member: what it needs to take its place. */
  private async place(stored: StoredCluster, ca: KeyPair, nodeId: string, role: 'manager' | 'worker', body: { PublicKey: string; Hosts: string[]; PeerURL?: string }): Promise<JoinAnswer> {
    if (role === 'manager' && !body.PeerURL) throw invalidArgument('a manager joins with the peer URL of its etcd member');
    let certPem: string;
    try {
      certPem = await signNodeKey(ca, body.PublicKey, { nodeId, clusterId: stored.id, role: role === 'manager' ? 'swarm-manager' : 'swarm-worker', hosts: body.Hosts });
    } catch (err) {
      throw invalidArgument(`invalid join request: ${err instanceof Error ? err.message : String(err)}`);
    }
    const answer: JoinAnswer = { NodeID: nodeId, ClusterID: stored.id, Role: role, Certificate: certPem, RootCA: stored.rootCaPem, Managers: [], HeartbeatPeriod: stored.spec.Dispatcher?.HeartbeatPeriod || undefined };
    const client = await this.d.memberClient();
    try {
      if (role === 'manager') {
        answer.DataKey = await this.d.dataKey();
        const added = await reconfigure(() => client.cluster.memberAdd({ peerURLs: [body.PeerURL!], isLearner: true }));
        answer.MemberID = String(added.member.ID);
        this.learners.set(nodeId, answer.MemberID);
        answer.InitialCluster = (added.members ?? [])
          .flatMap((m) => m.peerURLs.map((u) => `${String(m.ID) === answer.MemberID ? nodeId : m.name}=${u}`))
          .join(',');
      }
      const members = (await bounded(client.cluster.memberList({}))).members ?? [];
      answer.Managers = members.filter((m) => !m.isLearner).flatMap((m) => m.clientURLs);
    } catch (err) {
      throw unavailable(`the swarm's etcd could not take the node: ${err instanceof Error ? err.message : String(err)}`, err);
    } finally {
      client.close();
    }
    this.d.log.info({ nodeId, role, addr: body.Hosts[0] }, role === 'manager' ? 'a manager takes its place in the swarm' : 'a node joined the swarm');
    return answer;
  }

  /** One at a time: etcd takes one learner at a time. */
  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn, fn);
    this.queue = run.catch(() => {});
    return run;
  }
}

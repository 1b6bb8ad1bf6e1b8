// What runs while a node is in its swarm: its listener (drivers/swarm/listener.ts; a manager's first,
// so a listen address in use refuses at once; a worker's when it can), a manager's etcd member in a managed swarm
// (drivers/swarm/etcd-member.ts; a manager that joins starts its member as a learner of the
// existing cluster and promotes it once it has caught up), then the cluster membership of (3 of 21)
// through cmd/components/cluster.ts's ClusterHolder: on the manager's own member, on the managers'
// members for a worker, on --cluster-store's etcd for a swarm there.
import type { Etcd3 } from 'etcd3';
import type { Logger } from 'pino';
import { EtcdMember } from '../../drivers/swarm/etcd-member.ts';
import { SwarmListener } from '../../drivers/swarm/listener.ts';
import { resolveListenAddr, type Interfaces } from '../../lib/swarm/addresses.ts';
import { DEFAULT_DISCOVERY_TTL, type ClusterStore } from '../../lib/cluster/store-url.ts';
import { etcdClient } from '../../reconcilers/node/etcd-client.ts';
import type { ClusterHolder } from '../components/cluster.ts';
import type { SwarmFiles, SwarmState } from './state.ts';
import type { LogReadOptions } from '../../lib/ports/logs.ts';

const PROMOTE_EVERY_MS = 500;
const CALL_TIMEOUT_MS = 5000;

/**
 * How long a node's record lives without a renewal: the swarm's heartbeat period times swarmkit's
 * grace multiplier (3; 5 s → 15 s, as dockerd 20.10 shows a node down after 12–16 s). At least 6 s:
 * the lease is renewed every third of it and a node fences its tasks 2 s before it could expire
 * (FENCE_MARGIN_S), so a shorter one would fence a node that misses no renewal.
 */
export function heartbeatTtl(heartbeatNs: number | undefined): number {
  if (!heartbeatNs) return DEFAULT_DISCOVERY_TTL;
  return Math.max(MIN_TTL_S, Math.round((heartbeatNs / 1e9) * 3));
}
const MIN_TTL_S = 6;
const FENCE_MARGIN_S = 2;

export interface NodePartsDeps {
  files: SwarmFiles;
  execRoot: string;
  holder: ClusterHolder;
  clusterStore?: ClusterStore;
  log: Logger;
  ifaces: () => Interfaces;
  etcdBinary?: string;
  /** A manager's listener answers joins and leaves with these. */
  admit: (body: unknown) => Promise<unknown>;
  forget: (nodeId: string) => Promise<void>;
  promote: (nodeId: string, body: unknown) => Promise<unknown>;
  /** A manager's listener gives a task's secrets and configs to the node the task is on. */
  taskObject?: (nodeId: string, taskId: string, kind: 'secret' | 'config', id: string) => Promise<Buffer>;
  /** Every node's listener serves the log of a task it runs to the managers (JSON lines). */
  taskLogs?: (taskId: string, o: LogReadOptions, signal: AbortSignal) => AsyncIterable<string>;
}

export interface StartOptions {
  forceNewCluster?: boolean;
  /** A manager that has just been admitted: its member joins as the learner `memberId`. */
  join?: { initialCluster: string; memberId: string };
}

export class NodeParts {
  private readonly d: NodePartsDeps;
  private member: EtcdMember | undefined;
  private listener: SwarmListener | undefined;
  /** Where the membership reaches the swarm's etcd (a managed swarm's). */
  private endpoints: string[] = [];

  constructor(d: NodePartsDeps) {
    this.d = d;
  }

  get hasMember(): boolean {
    return !!this.member;
  }

  async start(state: SwarmState, o: StartOptions = {}): Promise<void> {
    await this.d.files.writeLiveKey();
    if (state.role === 'manager') await this.startListener(state);
    // A worker listens too when it can (the managers read its tasks' logs there); its listen
    // address may be another daemon's on this host: it goes on without.
    else await this.startListener(state).catch((err: unknown) => this.d.log.warn({ err: err instanceof Error ? err.message : String(err) }, 'the worker\'s swarm listener could not start: its tasks\' logs cannot be read from the managers'));
    await this.d.holder.start(await this.storeOf(state, o), { nodeId: state.nodeId, addr: state.advertiseHost, role: state.role, port: Number(state.advertisePort) || undefined, dataPathAddr: state.dataPathAddr || undefined });
  }

  /** Stops the membership, the listener, the member (removed with its data when leaving). */
  async stop(removeMember: boolean): Promise<void> {
    await this.d.holder.stop();
    await this.listener?.stop();
    this.listener = undefined;
    if (removeMember) await this.member?.remove();
    else await this.member?.stop();
    this.member = undefined;
    await this.d.files.removeLiveKey();
  }

  /** A new etcd client of the node's swarm (the caller closes it). */
  async client(): Promise<Etcd3> {
    if (!this.endpoints.length) throw new Error('the node reaches no etcd of its swarm');
    return await etcdClient({ endpoints: this.endpoints, tls: this.tlsFiles(), ttlSeconds: DEFAULT_DISCOVERY_TTL, fenceMarginSeconds: FENCE_MARGIN_S, callTimeoutMs: CALL_TIMEOUT_MS });
  }

  /** The TLS files of the node's certificate, as an etcd client of the swarm presents them. */
  tlsFiles(): NonNullable<ClusterStore['tls']> {
    const f = this.d.files;
    return { caFile: f.cert('swarm-root-ca.crt'), certFile: f.cert('swarm-node.crt'), keyFile: f.liveKeyFile };
  }

  private async startListener(state: SwarmState): Promise<void> {
    const { host, port } = resolveListenAddr(state.listenAddr, this.d.ifaces());
    const listener = new SwarmListener({
      host,
      port: Number(port),
      tls: await this.d.files.readCerts(),
      self: { nodeId: state.nodeId, clusterId: state.clusterId, role: state.role },
      log: this.d.log,
      ...(state.role === 'manager' ? { admit: (body: unknown) => this.d.admit(body), forget: (id: string) => this.d.forget(id), promote: (id: string, body: unknown) => this.d.promote(id, body) } : {}),
      ...(state.role === 'manager' && this.d.taskObject ? { taskObject: this.d.taskObject } : {}),
      ...(this.d.taskLogs ? { taskLogs: this.d.taskLogs } : {}),
    });
    await listener.start();
    this.listener = listener;
  }

  /** Where the node's membership reaches the swarm's etcd (starting the manager's member first). */
  private async storeOf(state: SwarmState, o: StartOptions): Promise<ClusterStore> {
    if (state.store === 'external') {
      if (!this.d.clusterStore) throw new Error('the node is in a swarm on an external etcd and the daemon was started without --cluster-store');
      return this.d.clusterStore;
    }
    const store = (endpoints: string[]): ClusterStore => {
      this.endpoints = endpoints;
      return { endpoints, tls: this.tlsFiles(), ttlSeconds: heartbeatTtl(state.heartbeatNs), fenceMarginSeconds: FENCE_MARGIN_S, callTimeoutMs: CALL_TIMEOUT_MS };
    };
    if (state.role === 'worker') {
      if (!state.managers?.length) throw new Error('the node is a worker of a swarm whose managers it does not know');
      return store(state.managers);
    }
    const managers = state.managers ?? [];
    const member = new EtcdMember({
      name: state.nodeId,
      dir: this.d.files.dir,
      runDir: this.d.execRoot,
      advertiseHost: state.advertiseHost,
      clientPort: state.member?.clientPort,
      peerPort: state.member?.peerPort,
      tls: await this.d.files.readCerts(),
      clusterToken: state.clusterId,
      forceNewCluster: o.forceNewCluster,
      ...(o.join ? { join: { initialCluster: o.join.initialCluster, ready: () => this.promote(managers, o.join!.memberId) } } : {}),
      log: this.d.log.child({ component: 'swarm-etcd' }),
      binary: this.d.etcdBinary,
    });
    this.member = member;
    await member.start();
    // Its own member only: a voting member serves the swarm while it has a quorum, and a client
    // with the other managers' endpoints too would send calls to a manager that is gone.
    return store([member.clientUrl]);
  }

  /** The learner `memberId` promoted to a voting member (etcd refuses until it has caught up: asked again). */
  private promoting: { at: number } | undefined;
  private async promote(managers: string[], memberId: string): Promise<boolean> {
    if (this.promoting && Date.now() - this.promoting.at < PROMOTE_EVERY_MS) return false;
    this.promoting = { at: Date.now() };
    const client = await etcdClient({ endpoints: managers, tls: this.tlsFiles(), ttlSeconds: DEFAULT_DISCOVERY_TTL, fenceMarginSeconds: FENCE_MARGIN_S, callTimeoutMs: CALL_TIMEOUT_MS });
    try {
      await client.cluster.memberPromote({ ID: memberId });
      this.d.log.info({ memberId }, 'the swarm etcd member was promoted');
      return true;
    } catch (err) {
      const msg = err instanceof Error ? err.message : String(err);
      if (/not a learner/i.test(msg)) return true;
      this.d.log.debug({ err: msg }, 'the swarm etcd member is not promoted yet');
      return false;
    } finally {
      client.close();
    }
  }
}

// The swarm's objects a manager keeps in etcd and the API reads through ports: services
// (./services.ts), overlay networks (./networks.ts), secrets and configs (./secrets.ts), wired to
// one another (a network or a secret a service uses is not removed; a service names existing
// networks, secrets and configs), and what travels node to node about tasks: their logs
// (./task-logs.ts) and their secrets and configs (./task-objects.ts); stacks are sets of them
// (./stacks.ts).
import type { Etcd3 } from 'etcd3';
import type { NodeRecord } from '../../lib/cluster/node-record.ts';
import type { LogReadOptions } from '../../lib/ports/logs.ts';
import { usersOf } from '../../lib/swarm/service-spec.ts';
import { SwarmNetworks } from './networks.ts';
import { SecretStore } from './secrets.ts';
import { SwarmServices } from './services.ts';
import { SwarmStacks } from './stacks.ts';
import { TaskLogs, wireLines, type TaskLogsDeps } from './task-logs.ts';
import { TaskObjects } from './task-objects.ts';

export interface SwarmStoresDeps {
  etcd: () => Etcd3;
  /** The swarm's data key (a manager's). */
  dataKey: () => Promise<string | undefined>;
  /** The swarm's DefaultAddrPool and SubnetSize as last read. */
  pool: () => { defaultAddrPool: string[]; subnetSize: number };
  /** This node in its swarm: its id, role and certificate (undefined: in none). */
  self: () => Promise<{ nodeId: string; manager: boolean; tls: { caPem: string; certPem: string; keyPem: string } } | undefined>;
  nodes: () => NodeRecord[];
  /** The container logs a task's log is read from (none: no task logs). */
  logs?: Pick<TaskLogsDeps, 'store' | 'reader'>;
}

export class SwarmStores {
  readonly services: SwarmServices;
  readonly networks: SwarmNetworks;
  readonly secrets: SecretStore;
  readonly configs: SecretStore;
  readonly stacks: SwarmStacks;
  readonly taskObjects: TaskObjects;
  readonly taskLogs: TaskLogs | undefined;

  constructor(d: SwarmStoresDeps) {
    const logs = d.logs;
    const taskLogs = logs ? new TaskLogs({ ...logs, self: d.self, nodes: d.nodes }) : undefined;
    this.taskLogs = taskLogs;
    const refs = async (st: SecretStore) => (await st.list()).map((x) => ({ ID: x.object.ID, Name: x.object.Spec.Name }));
    this.services = new SwarmServices(
      d.etcd,
      taskLogs ? (t, o, signal) => taskLogs.read(t, o, signal) : undefined,
      async () => this.networks.list(),
      async () => ({ secrets: await refs(this.secrets), configs: await refs(this.configs) }),
    );
    const objects = (kind: 'secret' | 'config') => new SecretStore(kind, { etcd: d.etcd, dataKey: d.dataKey, usedBy: async (k) => usersOf(await this.services.list(), k) });
    this.secrets = objects('secret');
    this.configs = objects('config');
    this.networks = new SwarmNetworks({
      etcd: d.etcd,
      pool: d.pool,
      usedBy: async () =>
        (await this.services.list()).flatMap((s) => [...((s.Spec.TaskTemplate['Networks'] as Array<{ Target: string }> | undefined) ?? []), ...((s.Spec['Networks'] as Array<{ Target: string }> | undefined) ?? [])].map((n) => ({ network: n.Target, service: s.ID }))),
    });
    this.stacks = new SwarmStacks({ services: this.services, networks: this.networks, secrets: this.secrets, configs: this.configs, nodes: d.nodes });
    // A task's secrets and configs: served by a manager to the task's node, fetched by the node that runs it.
    this.taskObjects = new TaskObjects({ etcd: d.etcd, data: (kind, id) => (kind === 'secret' ? this.secrets : this.configs).data(id), self: d.self, nodes: d.nodes });
  }

  /** The log of a task this node runs, as the listener sends it to a manager (JSON lines). */
  localTaskLog(): ((id: string, o: LogReadOptions, signal: AbortSignal) => AsyncIterable<string>) | undefined {
    const t = this.taskLogs;
    return t ? (id, o, signal) => wireLines(t.local(id, o, signal)) : undefined;
  }
}

// Cluster stacks (`PUT|GET|DELETE /stacks/{name}?scope=cluster`, `engine apply --cluster`) as the
// docker CLI's `stack deploy` keeps them: a stack is the swarm's services, networks, secrets and
// configs labelled `com.docker.stack.namespace=NAME` (lib/swarm/stack-convert.ts makes them from the
// Compose document). There is no record of its own: either client sees and removes the other's
// stacks, and the services' orchestrator is the one that places, runs and fences them. An apply is
// declarative: what the document no longer names is removed; a service whose spec is unchanged is
// not touched. The view sums the services' tasks: where each slot runs, what waits and why, ready
// replicas (running the service's current spec), and a condition.
import { canonicalJson } from '../../lib/canonical-json.ts';
import type { NodeRecord } from '../../lib/cluster/node-record.ts';
import { resourceEnv } from '../../lib/cluster/placement.ts';
import type { ComposeApp } from '../../lib/compose/schema.ts';
import { conflict } from '../../lib/errors.ts';
import { replicasOf, serviceSpecOf } from '../../lib/swarm/service-spec.ts';
import { NAMESPACE_LABEL, stackObjects } from '../../lib/swarm/stack-convert.ts';
import { isTerminal, type TaskRecord } from '../../lib/swarm/task.ts';
import { taskSpecKey, taskSpecOf } from '../../lib/swarm/update.ts';
import type { ServiceRecord } from '../../api/services/port.ts';
import type { ClusterStacksPort } from '../../api/stacks/routes.ts';
import type { SecretStore } from './secrets.ts';
import type { SwarmNetworks } from './networks.ts';
import type { SwarmServices } from './services.ts';

type Json = Record<string, unknown>;

export interface SwarmStacksDeps {
  services: SwarmServices;
  networks: SwarmNetworks;
  secrets: SecretStore;
  configs: SecretStore;
  nodes: () => NodeRecord[];
}

const inStack = (ns: string) => (labels: Record<string, string> | undefined) => labels?.[NAMESPACE_LABEL] === ns;
const shortName = (ns: string, name: string) => (name.startsWith(`${ns}_`) ? name.slice(ns.length + 1) : name);

export class SwarmStacks implements ClusterStacksPort {
  private readonly d: SwarmStacksDeps;

  constructor(d: SwarmStacksDeps) {
    this.d = d;
  }

  async put(name: string, document: ComposeApp): Promise<{ created: boolean; view: Json }> {
    const want = stackObjects(name, document);
    const mine = inStack(name);
    const { services, networks, secrets, configs } = this.d;
    const before = (await services.list()).filter((s) => mine(s.Spec.Labels));

    const haveNets = new Map((await networks.list()).map((n) => [n.Name, n]));
    for (const n of want.networks) {
      const cur = haveNets.get(n.name);
      if (cur && !mine(cur.Labels)) throw conflict(`network ${n.name} exists and is not part of stack ${name}`);
      if (!cur) await networks.create(n.body as Parameters<SwarmNetworks['create']>[0]);
    }
    for (const [store, objs] of [[secrets, want.secrets], [configs, want.configs]] as const) {
      const have = new Map((await store.list()).map((x) => [x.object.Spec.Name, x]));
      for (const o of objs) {
        const cur = have.get(o.name);
        if (!cur) {
          await store.create(o.spec);
          continue;
        }
        if (!mine(cur.object.Spec.Labels)) throw conflict(`${store.kind} ${o.name} exists and is not part of stack ${name}`);
        if (!(await store.data(cur.object.ID)).equals(Buffer.from(o.spec.Data, 'base64'))) {
          throw conflict(`${store.kind} ${o.name} of stack ${name} has other content: a ${store.kind}'s data cannot change (remove the stack, or name the ${store.kind} anew)`);
        }
      }
    }
    const ids = async (store: SecretStore) => new Map((await store.list()).map((x) => [x.object.Spec.Name, x.object.ID]));
    const secretIds = await ids(secrets);
    const configIds = await ids(configs);
    const netRefs = await networks.list();
    const all = new Map((await services.list()).map((s) => [s.Spec.Name, s]));
    for (const s of want.services) {
      const tt = s.spec['TaskTemplate'] as { ContainerSpec: Json };
      const cs = tt.ContainerSpec;
      for (const r of (cs['Secrets'] as Json[] | undefined) ?? []) r['SecretID'] = secretIds.get(String(r['SecretName'])) ?? '';
      for (const r of (cs['Configs'] as Json[] | undefined) ?? []) r['ConfigID'] = configIds.get(String(r['ConfigName'])) ?? '';
      const cur = all.get(s.name);
      if (!cur) {
        await services.create(s.spec);
        continue;
      }
      if (!mine(cur.Spec.Labels)) throw conflict(`service ${s.name} exists and is not part of stack ${name}`);
      const next = serviceSpecOf(s.spec, () => s.name, { networks: netRefs });
      if (canonicalJson(next) !== canonicalJson(cur.Spec)) await services.update(cur.ID, BigInt(cur.version), s.spec);
    }
    // What the document no longer names goes: services first, then what they used.
    const named = new Set(want.services.map((s) => s.name));
    for (const s of before) if (!named.has(s.Spec.Name)) await services.remove(s.ID);
    await this.removeUnused(name, {
      networks: new Set(want.networks.map((n) => n.name)),
      secrets: new Set(want.secrets.map((n) => n.name)),
      configs: new Set(want.configs.map((n) => n.name)),
    });
    return { created: before.length === 0, view: (await this.get(name)) ?? { Name: name, Scope: 'cluster' } };
  }

  /** The stack's networks, secrets and configs not in `keep` (all of them without it). */
  private async removeUnused(ns: string, keep?: { networks: Set<string>; secrets: Set<string>; configs: Set<string> }): Promise<number> {
    const mine = inStack(ns);
    let n = 0;
    for (const [store, kept] of [[this.d.secrets, keep?.secrets], [this.d.configs, keep?.configs]] as const) {
      for (const x of await store.list()) {
        if (!mine(x.object.Spec.Labels) || kept?.has(x.object.Spec.Name)) continue;
        await store.remove(x.object.ID);
        n++;
      }
    }
    for (const x of await this.d.networks.list()) {
      if (!mine(x.Labels) || keep?.networks.has(x.Name)) continue;
      await this.d.networks.remove(x.ID);
      n++;
    }
    return n;
  }

  async remove(name: string): Promise<boolean> {
    const mine = inStack(name);
    const services = (await this.d.services.list()).filter((s) => mine(s.Spec.Labels));
    for (const s of services) await this.d.services.remove(s.ID);
    return (await this.removeUnused(name)) + services.length > 0;
  }

  async list(): Promise<Json[]> {
    const services = await this.d.services.list();
    const tasks = (await this.d.services.tasks()).map((t) => t.task);
    const names = [...new Set(services.map((s) => s.Spec.Labels?.[NAMESPACE_LABEL]).filter((x): x is string => !!x))].sort();
    return names.map((ns) => this.view(ns, services.filter((s) => inStack(ns)(s.Spec.Labels)), tasks));
  }

  async get(name: string): Promise<Json | undefined> {
    const services = (await this.d.services.list()).filter((s) => inStack(name)(s.Spec.Labels));
    if (!services.length) return undefined;
    return this.view(name, services, (await this.d.services.tasks()).map((t) => t.task));
  }

  private view(ns: string, services: ServiceRecord[], tasks: TaskRecord[]): Json {
    const hostnames = new Map(this.d.nodes().map((n) => [n.id, n.hostname]));
    const placement: Record<string, Json[]> = {};
    const pending: Record<string, Json[]> = {};
    const summary: Record<string, { desired: number; ready: number; nodes: Record<string, number> }> = {};
    let updating = false;
    let paused = '';
    for (const s of services) {
      const key = shortName(ns, s.Spec.Name);
      const specKey = taskSpecKey(taskSpecOf(s.Spec));
      const desired = replicasOf(s.Spec) ?? hostnames.size;
      const sum = (summary[key] = { desired, ready: 0, nodes: {} as Record<string, number> });
      const state = s.UpdateStatus?.State;
      if (state === 'updating' || state === 'rollback_started') updating = true;
      if (state === 'paused' || state === 'rollback_paused') paused ||= `${key}: ${s.UpdateStatus?.Message ?? state}`;
      for (const t of tasks) {
        if (t.ServiceID !== s.ID || t.DesiredState !== 'running' || isTerminal(t.Status.State)) continue;
        if (t.Status.State === 'pending' || !t.NodeID) {
          (pending[key] ??= []).push({ Slot: t.Slot ?? 0, Task: t.ID, Reason: t.Status.Err || t.Status.Message });
          continue;
        }
        (placement[key] ??= []).push({ Slot: t.Slot ?? 0, Task: t.ID, Node: t.NodeID, Hostname: hostnames.get(t.NodeID) ?? '', State: t.Status.State, Env: resourceEnv(t.Claims ?? []) });
        if (t.Status.State === 'running' && taskSpecKey(t.Spec) === specKey) {
          sum.ready++;
          sum.nodes[t.NodeID] = (sum.nodes[t.NodeID] ?? 0) + 1;
        }
      }
    }
    for (const list of [...Object.values(placement), ...Object.values(pending)]) list.sort((x, y) => Number(x['Slot']) - Number(y['Slot']));
    const generation = Math.max(...services.map((s) => s.version));
    const pendingCount = Object.values(pending).reduce((n, l) => n + l.length, 0);
    const short = Object.entries(summary).filter(([, s]) => s.ready < s.desired);
    const state = paused ? 'Degraded' : pendingCount || updating || short.length ? 'Progressing' : 'Ready';
    const message = paused
      ? `an update is paused: ${paused}`
      : pendingCount
        ? `${pendingCount} replica(s) pending: ${Object.entries(pending).map(([svc, l]) => `${svc}: ${String(l[0]!['Reason'])}`).join('; ')}`
        : short.map(([svc, s]) => `${svc}: ${s.ready}/${s.desired} ready`).join('; ');
    return {
      Name: ns,
      Scope: 'cluster',
      Generation: generation,
      Services: Object.fromEntries(services.map((s) => [shortName(ns, s.Spec.Name), s.ID])),
      Placement: placement,
      Pending: pending,
      Status: {
        ObservedGeneration: generation,
        Conditions: [{ type: state, status: 'True', reason: state === 'Ready' ? 'AllServicesReady' : paused ? 'UpdatePaused' : pendingCount ? 'Pending' : 'ServicesProgressing', message: state === 'Ready' ? '' : message }],
        Services: summary,
      },
    };
  }
}

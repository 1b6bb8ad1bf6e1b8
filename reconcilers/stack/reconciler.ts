// The stack reconciler: brings the project's networks, volumes and containers to what the stack's
// Compose application asks for and keeps them there. It reads what the stack owns from the store
// (objects whose owner reference names it) and writes desired state through the admission modules
// the create routes use (./engine.ts), so every rule of a create or a remove applies as for any
// client. It never waits: a write is observed on a later pass (a requeue, or the owned container's
// change waking it). Objects it did not create are never adopted or removed: a name taken by one is
// Degraded with the reason.
// Services are reconciled dependencies first (depends_on); each is brought to its replicas by
// ./replicas.ts (out-of-band removals and stops repaired, changes rolled out, unhealthy replicas
// replaced); a service dropped from the document is pruned. The documents a service's stable
// version refers to are kept in the status, so a rollback can return to it.
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { TerminalError, type ReconcileContext, type ReconcileResult, type Reconciler } from '../../controllers/controller.ts';
import { parseReference } from '../../lib/reference.ts';
import { dependenciesOf, serviceOrder } from '../../lib/compose/dependencies.ts';
import { LABEL, planProject, projectFiles, type ServicePlan } from '../../lib/compose/normalize.ts';
import { unmetPlacement, type NodeFacts } from '../../lib/compose/placement.ts';
import { containerByName, type ContainerResource } from '../../store/kinds/container.ts';
import { liveNetworks } from '../../store/kinds/network.ts';
import { liveVolumes } from '../../store/kinds/volume.ts';
import { ownedContainers, ownedNetworks, ownedVolumes, stackOf, Stacks, type StackResource, type StackStatus } from '../../store/kinds/stack.ts';
import type { StackEngine } from './engine.ts';
import type { Store } from '../../store/store.ts';
import { errText, verdict, type Verdict } from './conditions.ts';
import { reconcileService, type ServiceOutcome } from './replicas.ts';

export interface StackReconcilerDeps {
  engine: StackEngine;
  /** This node, for deploy.placement constraints and resource reservations (read at each reconcile). */
  node?: () => NodeFacts;
  /** Where a stack's config and secret files are written (one directory per stack). */
  filesRoot: string;
}

type StackStore = Pick<Store, 'get' | 'list' | 'byIndex' | 'delete' | 'updateStatus'>;

/** How often a stack that is not Ready yet looks again (containers' changes also wake it). */
const RECHECK_MS = 1000;
/** How often a stack being deleted looks again while what it owns goes. */
const REMOVAL_RECHECK_MS = 200;

/** Runs a write; its refusal goes to `onError` instead of ending the pass. */
function attempt(write: () => void, onError: (err: unknown) => void): void {
  try {
    write();
  } catch (err) {
    onError(err);
  }
}

/** `service: invalid reference format` for each service whose image reference cannot parse. */
export function unparseableImages(doc: StackResource['spec']['document']): string[] {
  const out: string[] = [];
  for (const [svc, def] of Object.entries(doc.services)) {
    if (!def?.image) continue;
    try {
      parseReference(def.image);
    } catch (err) {
      out.push(`${svc}: image ${JSON.stringify(def.image)}: ${errText(err)}`);
    }
  }
  return out;
}

/** The documents the services' stable versions refer to; undefined when none is kept. */
function keptDocuments(r: StackResource, services: StackStatus['services']): StackStatus['documents'] {
  const out: NonNullable<StackStatus['documents']> = {};
  for (const s of Object.values(services)) {
    const g = s.stable?.generation;
    if (g === undefined) continue;
    const doc = g === r.generation ? r.spec.document : r.status.documents?.[String(g)];
    if (doc) out[String(g)] = doc;
  }
  return Object.keys(out).length ? out : undefined;
}

export class StackReconciler implements Reconciler {
  private readonly store: StackStore;
  private readonly deps: StackReconcilerDeps;

  constructor(store: StackStore, deps: StackReconcilerDeps) {
    this.store = store;
    this.deps = deps;
  }

  /** The stack's containers not being removed. */
  private ownedContainers(stack: string): ContainerResource[] {
    return ownedContainers(this.store, stack).filter((c) => c.spec.desired !== 'removed');
  }

  async reconcile(name: string, ctx: ReconcileContext): Promise<ReconcileResult> {
    const r = this.store.get(Stacks, name);
    if (!r) return;
    if (r.spec.desired === 'removed') return this.remove(r);
    // This node's part of a cluster stack an earlier version placed here: the swarm's services run
    // cluster stacks now, so this copy is taken away as a removed stack is (a replica never runs twice).
    if (r.spec.placed !== undefined) {
      ctx.log.warn({ stack: name }, 'the local part of a cluster stack from an earlier version: removing it (cluster stacks are swarm services now)');
      return this.remove(r);
    }
    const { engine } = this.deps;
    // A document no pass can ever run (an image reference that cannot parse): Degraded with the
    // reason, and no requeue until the stack is applied again.
    const unrunnable = unparseableImages(r.spec.document);
    if (unrunnable.length) {
      const message = unrunnable.join('; ');
      this.store.updateStatus(Stacks, name, (s) => ({ ...s, observedGeneration: r.generation, conditions: verdict(s.conditions, 'Degraded', 'InvalidImageReference', message, r.generation) }));
      throw new TerminalError(message);
    }
    const filesDir = join(this.deps.filesRoot, name);
    const plan = planProject(name, r.spec.document, filesDir);
    const stackProblems: string[] = [];

    for (const f of projectFiles(r.spec.document)) {
      mkdirSync(join(filesDir, f.kind), { recursive: true, mode: 0o700 });
      writeFileSync(join(filesDir, f.kind, f.name), f.content, { mode: f.kind === 'secrets' ? 0o400 : 0o444 });
    }
    const networks = liveNetworks(this.store);
    for (const n of plan.networks) {
      const have = networks.find((x) => x.spec.name === n.name);
      if (have && stackOf(have.spec, have.spec.labels) !== name) stackProblems.push(`network ${n.name} exists and was not created by this stack`);
      else if (!have) attempt(() => engine.createNetwork(name, n.body), (err) => stackProblems.push(`network ${n.name}: ${errText(err)}`));
    }
    const volumes = liveVolumes(this.store);
    for (const v of plan.volumes) {
      const have = volumes.find((x) => x.name === v.name);
      if (have && stackOf(have.spec, have.spec.labels) !== name) stackProblems.push(`volume ${v.name} exists and was not created by this stack`);
      else if (!have) attempt(() => engine.createVolume(name, v.body), (err) => stackProblems.push(`volume ${v.name}: ${errText(err)}`));
    }

    const services: StackStatus['services'] = {};
    const states: Array<[string, Verdict, string]> = [];
    let requeue = Infinity;
    // What the stack owns as this reconcile starts: the services below only remove from it.
    const owned = this.ownedContainers(name);
    const ownedBy = (svc: string) => owned.filter((c) => c.spec.config.Labels?.[LABEL.service] === svc);
    const byName = (n: string) => containerByName(this.store, n);
    const plans = new Map(plan.services.map((s) => [s.name, s]));
    for (const svcName of serviceOrder(r.spec.document)) {
      const svc = plans.get(svcName)!;
      const prevConds = r.status.services[svc.name]?.conditions ?? [];
      const def = r.spec.document.services[svc.name];
      const unmet = def && this.deps.node ? unmetPlacement(def, this.deps.node()) : undefined;
      let out: ServiceOutcome;
      if (stackProblems.length) {
        out = { status: { ...r.status.services[svc.name], desired: svc.replicas, ready: 0, conditions: verdict(prevConds, 'Degraded', 'StackDegraded', stackProblems.join('; '), r.generation) }, state: 'Degraded' };
      } else if (unmet) {
        // It cannot run here: Pending, and none of its containers stays.
        for (const c of ownedBy(svc.name)) attempt(() => engine.removeContainer(c.name), (err) => ctx.log.warn({ err, container: c.name }, 'removing a container of an unplaceable service failed'));
        out = { status: { desired: svc.replicas, ready: 0, conditions: verdict(prevConds, 'Progressing', 'Pending', unmet, r.generation) }, state: 'Progressing' };
      } else {
        out = reconcileService({
          stack: r,
          svc,
          stable: this.stableVersion(r, svc, filesDir),
          owned: ownedBy(svc.name),
          byName,
          waitingOn: this.waitingOn(r, svc.name, owned, plans),
          now: Date.now(),
          engine,
          log: ctx.log,
        });
      }
      if (out.requeueAfterMs !== undefined) requeue = Math.min(requeue, out.requeueAfterMs);
      services[svc.name] = out.status;
      const c = out.status.conditions.find((x) => x.type === out.state);
      states.push([svc.name, out.state, c?.message ?? '']);
    }
    // What the document no longer names: its containers, then its networks (once nothing runs on them).
    for (const c of owned) {
      if (!plans.has(c.spec.config.Labels?.[LABEL.service] ?? '')) attempt(() => engine.removeContainer(c.name), (err) => ctx.log.warn({ err, container: c.name }, 'pruning a container failed'));
    }
    const wantedNets = new Set(plan.networks.map((n) => n.name));
    let pruning = false;
    for (const n of ownedNetworks(this.store, name)) {
      if (n.spec.desired === 'removed' || wantedNets.has(n.spec.name)) continue;
      attempt(() => engine.removeNetwork(n.spec.name), () => (pruning = true));
    }
    // Removals under way are looked at again (a network waits for its containers to go).
    if (pruning || ownedContainers(this.store, name).some((c) => c.spec.desired === 'removed')) requeue = Math.min(requeue, RECHECK_MS);

    const degraded = states.filter(([, s]) => s === 'Degraded');
    const progressing = states.filter(([, s]) => s === 'Progressing');
    const say = (list: typeof states) => list.map(([n, , m]) => `${n}: ${m}`).join('; ');
    const stackState = degraded.length ? 'Degraded' : progressing.length ? 'Progressing' : 'Ready';
    const reason = degraded.length ? 'ServicesDegraded' : progressing.length ? 'ServicesProgressing' : 'AllServicesReady';
    const message = degraded.length ? say(degraded) : progressing.length ? say(progressing) : '';
    const documents = keptDocuments(r, services);
    this.store.updateStatus(Stacks, name, (s) => ({
      observedGeneration: r.generation,
      services,
      conditions: verdict(s.conditions, stackState, reason, message, r.generation),
      ...(documents ? { documents } : {}),
    }));
    if (requeue !== Infinity) return { requeueAfter: Math.min(requeue, RECHECK_MS) };
    return stackState === 'Ready' ? undefined : { requeueAfter: RECHECK_MS };
  }

  /** The service's stable version as a plan, when it differs from the document's (what a rollback returns to). */
  private stableVersion(r: StackResource, svc: ServicePlan, filesDir: string): ServicePlan | undefined {
    const stable = r.status.services[svc.name]?.stable;
    if (!stable || stable.configHash === svc.configHash) return undefined;
    const doc = r.status.documents?.[String(stable.generation)];
    const old = doc ? planProject(r.name, doc, filesDir).services.find((s) => s.name === svc.name) : undefined;
    return old?.configHash === stable.configHash ? old : undefined;
  }

  /** The first dependency of a service not met yet, as "db (service_healthy)". */
  private waitingOn(r: StackResource, svcName: string, owned: readonly ContainerResource[], plans: ReadonlyMap<string, ServicePlan>): string | undefined {
    for (const dep of dependenciesOf(r.spec.document.services[svcName])) {
      const plan = plans.get(dep.service);
      if (!plan) continue;
      const cs = owned.filter((c) => c.spec.config.Labels?.[LABEL.service] === dep.service && c.spec.config.Labels?.[LABEL.configHash] === plan.hashFor(Number(c.spec.config.Labels?.[LABEL.number])));
      const enough = cs.length >= plan.replicas;
      const met =
        dep.condition === 'service_started' ? enough && cs.every((c) => c.status.phase === 'running' || (plan.oneShot && c.status.phase === 'exited'))
        : dep.condition === 'service_healthy' ? enough && cs.every((c) => c.status.phase === 'running' && c.status.health?.Status === 'healthy')
        : enough && cs.every((c) => c.status.phase === 'exited' && c.status.exitCode === 0);
      if (!met) return `${dep.service} (${dep.condition})`;
    }
    return undefined;
  }

  /**
   * DELETE, level by level: its containers are asked to go; once they are gone its networks; then
   * (when asked) its named volumes; then its files and its record. Each pass writes what the level
   * asks and looks again shortly.
   */
  private remove(r: StackResource): ReconcileResult {
    const { engine } = this.deps;
    const again = { requeueAfter: REMOVAL_RECHECK_MS };
    const containers = ownedContainers(this.store, r.name);
    if (containers.length) {
      for (const c of containers) engine.removeContainer(c.name);
      return again;
    }
    const networks = ownedNetworks(this.store, r.name);
    if (networks.length) {
      for (const n of networks) if (n.spec.desired !== 'removed') engine.removeNetwork(n.spec.name);
      return again;
    }
    const volumes = r.spec.removeVolumes ? ownedVolumes(this.store, r.name) : [];
    if (volumes.length) {
      for (const v of volumes) engine.removeVolume(v.name);
      return again;
    }
    rmSync(join(this.deps.filesRoot, r.name), { recursive: true, force: true });
    this.store.delete(Stacks, r.name);
  }
}

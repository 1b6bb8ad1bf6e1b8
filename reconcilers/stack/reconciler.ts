// The stack reconciler: brings the project's networks, volumes and containers to what the stack's
// Compose application asks for and keeps them there. It reads what the stack owns from the store
// (objects carrying its owner label) and acts through the Engine API (StackEngine: the daemon's own
// API, in process), so every rule of a create or a remove applies as for any client. Objects it
// did not create are never adopted or removed: a name taken by one is Degraded with the reason.
// A container removed, stopped or killed out of band is created or started again; a service
// dropped from the document is pruned; a changed service (its config hash) is recreated.
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ReconcileContext, ReconcileResult, Reconciler } from '../../controllers/controller.ts';
import { LABEL, planProject, projectFiles, type ServicePlan } from '../../lib/compose/normalize.ts';
import { unmetPlacement, type NodeFacts } from '../../lib/compose/placement.ts';
import { rfc3339Nano } from '../../lib/ids.ts';
import { containerByName, Containers, isRunning, type ContainerResource } from '../../store/kinds/container.ts';
import { liveNetworks } from '../../store/kinds/network.ts';
import { Stacks, type ServiceStatus, type StackCondition, type StackConditionType, type StackResource, type StackStatus } from '../../store/kinds/stack.ts';
import { liveVolumes } from '../../store/kinds/volume.ts';
import type { Store } from '../../store/store.ts';

/** The Engine API calls the reconciler makes (cmd answers them with the daemon's own API). */
export interface StackEngine {
  createNetwork(body: Record<string, unknown>): Promise<void>;
  removeNetwork(name: string): Promise<void>;
  createVolume(body: Record<string, unknown>): Promise<void>;
  removeVolume(name: string): Promise<void>;
  /** Answers the new container's id. */
  createContainer(name: string, body: Record<string, unknown>): Promise<string>;
  startContainer(id: string): Promise<void>;
  /** Forced, anonymous volumes kept (as `docker compose down`). */
  removeContainer(id: string): Promise<void>;
}

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

/** A condition at `generation`, keeping its transition time when its status did not change. */
export function setCondition(list: readonly StackCondition[], type: StackConditionType, status: 'True' | 'False', reason: string, message: string, generation: number): StackCondition[] {
  const prev = list.find((c) => c.type === type);
  const lastTransitionTime = prev && prev.status === status ? prev.lastTransitionTime : rfc3339Nano();
  return [...list.filter((c) => c.type !== type), { type, status, reason, message, lastTransitionTime, observedGeneration: generation }];
}

/** The three conditions from one verdict. */
function verdict(prev: readonly StackCondition[], state: 'Ready' | 'Progressing' | 'Degraded', reason: string, message: string, gen: number): StackCondition[] {
  let c = setCondition(prev, 'Ready', state === 'Ready' ? 'True' : 'False', reason, state === 'Ready' ? '' : message, gen);
  c = setCondition(c, 'Progressing', state === 'Progressing' ? 'True' : 'False', reason, state === 'Progressing' ? message : '', gen);
  return setCondition(c, 'Degraded', state === 'Degraded' ? 'True' : 'False', reason, state === 'Degraded' ? message : '', gen);
}

const errText = (err: unknown) => (err instanceof Error ? err.message : String(err));

interface ServiceOutcome {
  status: ServiceStatus;
  state: 'Ready' | 'Progressing' | 'Degraded';
}

export class StackReconciler implements Reconciler {
  private readonly store: StackStore;
  private readonly deps: StackReconcilerDeps;

  constructor(store: StackStore, deps: StackReconcilerDeps) {
    this.store = store;
    this.deps = deps;
  }

  private ownedContainers(stack: string): ContainerResource[] {
    return this.store.list(Containers).filter((c) => c.spec.config.Labels?.[LABEL.owner] === stack && c.spec.desired !== 'removed');
  }

  async reconcile(name: string, ctx: ReconcileContext): Promise<ReconcileResult> {
    const r = this.store.get(Stacks, name);
    if (!r) return;
    if (r.spec.desired === 'removed') return this.remove(r);
    const { engine } = this.deps;
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
      if (have && have.spec.labels[LABEL.owner] !== name) stackProblems.push(`network ${n.name} exists and was not created by this stack`);
      else if (!have) await engine.createNetwork(n.body).catch((err) => stackProblems.push(`network ${n.name}: ${errText(err)}`));
    }
    const volumes = liveVolumes(this.store);
    for (const v of plan.volumes) {
      const have = volumes.find((x) => x.name === v.name);
      if (have && have.spec.labels[LABEL.owner] !== name) stackProblems.push(`volume ${v.name} exists and was not created by this stack`);
      else if (!have) await engine.createVolume(v.body).catch((err) => stackProblems.push(`volume ${v.name}: ${errText(err)}`));
    }

    const services: StackStatus['services'] = {};
    const states: Array<[string, ServiceOutcome['state'], string]> = [];
    // What the stack owns as this reconcile starts: the services below only remove from it.
    const owned = this.ownedContainers(name);
    const ownedBy = (svc: string) => owned.filter((c) => c.spec.config.Labels?.[LABEL.service] === svc);
    for (const svc of plan.services) {
      const out = stackProblems.length
        ? { status: { desired: svc.replicas, ready: 0, conditions: verdict(r.status.services[svc.name]?.conditions ?? [], 'Degraded', 'StackDegraded', stackProblems.join('; '), r.generation) }, state: 'Degraded' as const }
        : await this.service(r, svc, ownedBy(svc.name), ctx);
      services[svc.name] = out.status;
      const c = out.status.conditions.find((x) => x.type === out.state);
      states.push([svc.name, out.state, c?.message ?? '']);
    }
    // What the document no longer names: its containers, then its networks.
    const wanted = new Set(plan.services.map((s) => s.name));
    for (const c of owned) {
      if (!wanted.has(c.spec.config.Labels?.[LABEL.service] ?? '')) await engine.removeContainer(c.name).catch((err) => ctx.log.warn({ err, container: c.name }, 'pruning a container failed'));
    }
    const wantedNets = new Set(plan.networks.map((n) => n.name));
    for (const n of liveNetworks(this.store)) {
      if (n.spec.labels[LABEL.owner] === name && !wantedNets.has(n.spec.name)) await engine.removeNetwork(n.spec.name).catch((err) => ctx.log.warn({ err, network: n.spec.name }, 'pruning a network failed'));
    }

    const degraded = states.filter(([, s]) => s === 'Degraded');
    const progressing = states.filter(([, s]) => s === 'Progressing');
    const say = (list: typeof states) => list.map(([n, , m]) => `${n}: ${m}`).join('; ');
    const stackState = degraded.length ? 'Degraded' : progressing.length ? 'Progressing' : 'Ready';
    const reason = degraded.length ? 'ServicesDegraded' : progressing.length ? 'ServicesProgressing' : 'AllServicesReady';
    const message = degraded.length ? say(degraded) : progressing.length ? say(progressing) : '';
    this.store.updateStatus(Stacks, name, (s) => ({ observedGeneration: r.generation, services, conditions: verdict(s.conditions, stackState, reason, message, r.generation) }));
    return stackState === 'Ready' ? undefined : { requeueAfter: RECHECK_MS };
  }

  /** One service brought to its replicas; its status and verdict. */
  private async service(r: StackResource, svc: ServicePlan, owned: readonly ContainerResource[], ctx: ReconcileContext): Promise<ServiceOutcome> {
    const { engine } = this.deps;
    const gen = r.generation;
    const prev = r.status.services[svc.name]?.conditions ?? [];
    const problems: string[] = [];
    let ready = 0;
    let failedOnce = '';
    const def = r.spec.document.services[svc.name];
    const unmet = def && this.deps.node ? unmetPlacement(def, this.deps.node()) : undefined;
    if (unmet) {
      // It cannot run here: Pending, and none of its containers stays.
      for (const c of owned) {
        await engine.removeContainer(c.name).catch((err) => ctx.log.warn({ err, container: c.name }, 'removing a container of an unplaceable service failed'));
      }
      return { status: { desired: svc.replicas, ready: 0, conditions: verdict(prev, 'Progressing', 'Pending', unmet, gen) }, state: 'Progressing' };
    }
    for (let n = 1; n <= svc.replicas; n++) {
      const cname = svc.containerName(n);
      let c = containerByName(this.store, cname);
      if (c && c.spec.config.Labels?.[LABEL.owner] !== r.name) {
        problems.push(`container ${cname} exists and was not created by this stack`);
        continue;
      }
      try {
        if (c && c.spec.desired === 'removed') continue;
        if (c && c.spec.config.Labels?.[LABEL.configHash] !== svc.configHash) {
          await engine.removeContainer(c.name);
          c = undefined;
        }
        if (!c) {
          const id = await engine.createContainer(cname, svc.body(n));
          await engine.startContainer(id);
          continue;
        }
        const s = c.status;
        if (svc.oneShot) {
          if (s.phase === 'created') await engine.startContainer(c.name);
          else if (s.phase === 'exited' && s.exitCode === 0) ready++;
          else if (s.phase === 'exited' || s.phase === 'dead') failedOnce = `container ${cname} exited with code ${s.exitCode}`;
          continue;
        }
        if (!isRunning(s)) {
          ctx.log.info({ container: cname, phase: s.phase }, 'starting a stack container that is not running');
          await engine.startContainer(c.name);
          continue;
        }
        if (s.phase === 'running' && (!svc.hasHealthcheck || s.health?.Status === 'healthy')) ready++;
        else if (s.health?.Status === 'unhealthy') problems.push(`container ${cname} is unhealthy`);
      } catch (err) {
        problems.push(`${cname}: ${errText(err)}`);
      }
    }
    // Replicas past the count.
    for (const c of owned) {
      if (Number(c.spec.config.Labels?.[LABEL.number]) > svc.replicas) {
        await engine.removeContainer(c.name).catch((err) => problems.push(`removing ${c.spec.name}: ${errText(err)}`));
      }
    }
    const status = (state: ServiceOutcome['state'], reason: string, message: string): ServiceOutcome => ({
      status: { desired: svc.replicas, ready, conditions: verdict(prev, state, reason, message, gen) },
      state,
    });
    if (problems.length) return status('Degraded', 'ReplicasFailed', problems.join('; '));
    if (failedOnce) return status('Degraded', 'ExitedNonZero', failedOnce);
    if (ready >= svc.replicas) return status('Ready', svc.oneShot ? 'Completed' : 'ReplicasReady', '');
    return status('Progressing', 'ReplicasStarting', `${ready}/${svc.replicas} ${svc.oneShot ? 'completed' : 'ready'}`);
  }

  /** DELETE: what the stack owns goes (named volumes only when asked), then its record. */
  private async remove(r: StackResource): Promise<ReconcileResult> {
    const { engine } = this.deps;
    for (const c of this.ownedContainers(r.name)) await engine.removeContainer(c.name);
    for (const n of liveNetworks(this.store)) if (n.spec.labels[LABEL.owner] === r.name) await engine.removeNetwork(n.spec.name);
    if (r.spec.removeVolumes) for (const v of liveVolumes(this.store)) if (v.spec.labels[LABEL.owner] === r.name) await engine.removeVolume(v.name);
    rmSync(join(this.deps.filesRoot, r.name), { recursive: true, force: true });
    this.store.delete(Stacks, r.name);
  }
}

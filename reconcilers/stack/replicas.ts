// One service of a stack brought to its replicas, slot by slot (slot N is the container
// PROJECT-SERVICE-N, its number label N). A slot holds the container of the version wanted
// ("fresh", its config hash) and, during a start-first update, the one it replaces, renamed
// `<short id>_PROJECT-SERVICE-N` as Compose renames what it recreates.
//
// Level-triggered: every reconcile reads the slots and the service's last rollout (in status) and
// takes the next step. A change of the service's config hash is a rollout: slots are updated
// `parallelism` at a time (all at once without update_config), stop-first or start-first; a new
// container is up once it runs for `monitor` and, with a healthcheck, is healthy; `delay` passes
// between slots. A new container that exits, restarts or turns unhealthy before it is up is a
// failure: `pause` stops the rollout, `continue` goes on, `rollback` rolls the service back to its
// stable version (the last one seen Ready; its document kept in the stack's status). Outside a
// rollout a replica that turned unhealthy and stays so for a healthcheck interval is replaced.
//
// Every action is a write answered at once (./engine.ts): a replica is created and asked to run in
// one write, a removal marks it removed. What a write leads to is seen on a later pass: a name held
// by a replica being removed is waited for (looked at again shortly), never fought over.
import type { Logger } from 'pino';
import { LABEL, type ServicePlan } from '../../lib/compose/normalize.ts';
import { rfc3339Nano } from '../../lib/ids.ts';
import { isRunning, type ContainerResource } from '../../store/kinds/container.ts';
import type { Rollout, ServiceStatus, StackResource } from '../../store/kinds/stack.ts';
import { errText, verdict, type Verdict } from './conditions.ts';
import { stackOf } from '../../store/kinds/stack.ts';
import type { StackEngine } from './engine.ts';

export interface ServiceInput {
  stack: StackResource;
  /** The service as the current document has it. */
  svc: ServicePlan;
  /** Its stable version, when that differs from `svc` (what a rollback returns to). */
  stable?: ServicePlan;
  /** The service's containers (not being removed). */
  owned: readonly ContainerResource[];
  /** A container by name (any owner), for clashes. */
  byName: (name: string) => ContainerResource | undefined;
  /** An unmet dependency ("db (service_healthy)"): no container is created while it is set. */
  waitingOn?: string;
  now: number;
  engine: StackEngine;
  log: Logger;
}

export interface ServiceOutcome {
  status: ServiceStatus;
  state: Verdict;
  /** Look again after this long (a monitor window, a delay, an unhealthy grace). */
  requeueAfterMs?: number;
}

const hashOf = (c: ContainerResource) => c.spec.config.Labels?.[LABEL.configHash] ?? '';
const nameOf = (c: ContainerResource) => c.spec.name.replace(/^\//, '');

type Progress = { up: true } | { up: false; failed?: string; waitMs?: number };

/**
 * Whether a container of a rollout is up yet, or failed. A restart counts as a failure for a
 * container made since `since` (the rollout's start): one it returns to may have restarted before.
 */
function progress(c: ContainerResource, svc: ServicePlan, now: number, since: string | undefined): Progress {
  const s = c.status;
  const name = nameOf(c);
  if (s.phase === 'exited' || s.phase === 'dead') return { up: false, failed: `container ${name} exited with code ${s.exitCode}` };
  const isNew = !since || Date.parse(c.createdAt) >= Date.parse(since);
  if (s.phase === 'restarting' || (isNew && s.restartCount > 0)) return { up: false, failed: `container ${name} restarted` };
  if (s.health?.Status === 'unhealthy') return { up: false, failed: `container ${name} is unhealthy` };
  if (s.phase !== 'running') return { up: false };
  const ran = now - Date.parse(s.startedAt);
  if (ran < svc.update.monitorMs) return { up: false, waitMs: svc.update.monitorMs - ran };
  if (svc.hasHealthcheck && s.health?.Status !== 'healthy') return { up: false };
  return { up: true };
}

/** Serving: running, and healthy where there is a healthcheck. */
const serving = (c: ContainerResource, svc: ServicePlan) => c.status.phase === 'running' && (!svc.hasHealthcheck || c.status.health?.Status === 'healthy');

/** How soon a slot waiting for its name (held by a replica being removed) looks again. */
const NAME_WAIT_MS = 200;

/** A start not taken up by the container reconciler yet: asking again would ask for another run. */
const startPending = (c: ContainerResource) => c.spec.desired === 'running' && c.spec.runGeneration > c.status.runGeneration;

export function reconcileService(input: ServiceInput): ServiceOutcome {
  const { stack, svc, owned, engine, log, now } = input;
  const gen = stack.generation;
  const prev = stack.status.services[svc.name];
  const nowIso = rfc3339Nano();
  let rollout: Rollout | undefined = prev?.lastRollout ? { ...prev.lastRollout, inFlight: [...prev.lastRollout.inFlight] } : undefined;
  if (rollout && rollout.to !== svc.configHash) rollout = rollout.state === 'Completed' || rollout.state === 'RolledBack' ? rollout : undefined;
  const backing = !!rollout && rollout.to === svc.configHash && (rollout.state === 'RollingBack' || rollout.state === 'RolledBack') && !!input.stable;
  const target = backing ? input.stable! : svc;
  const policy = svc.update;
  const problems: string[] = [];
  /** Slot → why its new container failed. */
  const failures = new Map<number, string>();
  let requeue: number | undefined;
  const soon = (ms: number) => (requeue = Math.min(requeue ?? ms, Math.max(0, ms)));
  let ready = 0;
  let failedOnce = '';
  let replaced = prev?.replaced ?? 0;
  let lastReplaced = prev?.lastReplaced;
  const unhealthySince: Record<string, string> = {};

  const create = (n: number) => engine.runContainer(stack.name, target.containerName(n), target.body(n));
  /** A start of a replica that does not run, unless one is pending. */
  const start = (c: ContainerResource) => {
    if (!startPending(c)) engine.startContainer(c.name);
  };

  const slots = new Map<number, ContainerResource[]>();
  for (const c of owned) {
    const n = Number(c.spec.config.Labels?.[LABEL.number]);
    slots.set(n, [...(slots.get(n) ?? []), c]);
  }
  // Scaled down: the highest numbers go first.
  for (const [n, members] of [...slots].sort((a, b) => b[0] - a[0])) {
    if (svc.slots.includes(n)) continue;
    for (const c of members) {
      try {
        engine.removeContainer(c.name);
      } catch (err) {
        problems.push(`removing ${nameOf(c)}: ${errText(err)}`);
      }
    }
  }

  const pending: number[] = [];
  const inFlight: number[] = [];
  /** Slots whose new replica is up while the one it replaces is still being removed. */
  let leaving = 0;
  let updated = 0;
  const rolling = () => !!rollout && (rollout.state === 'RollingOut' || rollout.state === 'RollingBack' || rollout.state === 'Paused');
  for (const n of svc.slots) {
    const cname = target.containerName(n);
    const members = slots.get(n) ?? [];
    const fresh = members.filter((c) => hashOf(c) === target.hashFor(n));
    const stale = members.filter((c) => hashOf(c) !== target.hashFor(n));
    try {
      if (!members.length) {
        const other = input.byName(cname);
        const wasInFlight = rolling() && rollout!.inFlight.includes(n);
        if (other && stackOf(other.spec, other.spec.config.Labels) !== stack.name) problems.push(`container ${cname} exists and was not created by this stack`);
        else if (other) soon(NAME_WAIT_MS); // ours, being removed: the name is free once it is gone
        else if (!input.waitingOn || wasInFlight) create(n);
        if (wasInFlight) inFlight.push(n);
        continue;
      }
      if (!fresh.length) {
        pending.push(n);
        if (stale.some((c) => serving(c, svc))) ready++;
        continue;
      }
      const [cur, ...extra] = fresh;
      for (const c of extra) engine.removeContainer(c.name);
      const p = progress(cur!, target, now, rollout?.startedAt);
      if (stale.length || (rolling() && rollout!.inFlight.includes(n))) {
        // A new container of a rollout: up, failed, or still being watched.
        if (p.up) {
          for (const c of stale) engine.removeContainer(c.name);
          // Ready once what it replaces is gone, not only asked to go (Compose's up returns after
          // the old container's removal): a pass after the removal counts it.
          if (stale.length) {
            leaving++;
            soon(NAME_WAIT_MS);
          }
          if (nameOf(cur!) !== cname && !input.byName(cname)) engine.renameContainer(cur!.name, cname);
          else if (nameOf(cur!) !== cname) soon(NAME_WAIT_MS);
          updated++;
          ready++;
          if (rollout?.inFlight.includes(n)) rollout.lastStepAt = nowIso;
          continue;
        }
        if (p.failed) failures.set(n, p.failed);
        else if (p.waitMs !== undefined) soon(p.waitMs);
        inFlight.push(n);
        if (stale.some((c) => serving(c, svc))) ready++;
        continue;
      }
      if (nameOf(cur!) !== cname && !input.byName(cname)) engine.renameContainer(cur!.name, cname);
      updated++;
      const s = cur!.status;
      if (target.oneShot) {
        if (s.phase === 'created' && !input.waitingOn) start(cur!);
        else if (s.phase === 'exited' && s.exitCode === 0) ready++;
        else if (s.phase === 'exited' || s.phase === 'dead') failedOnce = `container ${cname} exited with code ${s.exitCode}`;
        continue;
      }
      if (!isRunning(s)) {
        if (s.phase === 'created' && input.waitingOn) continue;
        // Its last start failed: the reason, and another start.
        if (s.error && !startPending(cur!)) problems.push(`${cname}: ${s.error}`);
        if (!startPending(cur!)) log.info({ container: cname, phase: s.phase }, 'starting a stack container that is not running');
        start(cur!);
        continue;
      }
      if (s.health?.Status === 'unhealthy' && s.phase === 'running') {
        const since = prev?.unhealthySince?.[cur!.name] ?? nowIso;
        const left = Date.parse(since) + svc.healthIntervalMs - now;
        if (left > 0) {
          unhealthySince[cur!.name] = since;
          problems.push(`container ${cname} is unhealthy`);
          soon(left);
          continue;
        }
        log.warn({ container: cname, unhealthySince: since }, 'replacing a replica that stayed unhealthy');
        // Its successor is made once the name is free (the empty slot, on a later pass).
        engine.removeContainer(cur!.name);
        soon(NAME_WAIT_MS);
        replaced++;
        lastReplaced = { container: cname, id: cur!.name, at: nowIso, reason: `unhealthy since ${since}` };
        continue;
      }
      if (serving(cur!, svc)) ready++;
    } catch (err) {
      problems.push(`${cname}: ${errText(err)}`);
    }
  }

  // The rollout: started by slots of another version, stepped while no failure stops it.
  // A slot whose own hash changed (its placement's environment) under a completed rollout rolls too.
  if (!rollout || ((rollout.to !== svc.configHash || rollout.state === 'Completed') && (pending.length || inFlight.length))) {
    if (pending.length || inFlight.length) rollout = { from: prev?.stable?.configHash ?? '', to: svc.configHash, generation: gen, state: 'RollingOut', reason: '', startedAt: nowIso, updated, inFlight: [] };
  }
  if (rollout && rollout.to === svc.configHash) {
    if (failures.size && rollout.state === 'RollingOut') {
      const reason = [...failures.values()].join('; ');
      if (policy.failureAction === 'rollback' && input.stable) {
        log.warn({ service: svc.name, reason }, 'update failed: rolling back');
        rollout.state = 'RollingBack';
        rollout.reason = reason;
        soon(0);
      } else if (policy.failureAction === 'rollback' || policy.failureAction === 'pause') {
        log.warn({ service: svc.name, reason }, 'update failed: paused');
        rollout.state = 'Paused';
        rollout.reason = policy.failureAction === 'rollback' ? `${reason} (no earlier version to roll back to)` : reason;
      }
    }
    const stepping = rollout.state === 'RollingOut' || (rollout.state === 'RollingBack' && backing);
    if (stepping && pending.length) {
      // With failure_action continue, a failed slot no longer holds a place of `parallelism`.
      const counted = policy.failureAction === 'continue' ? inFlight.filter((n) => !failures.has(n)) : inFlight;
      let free = (policy.parallelism || Infinity) - counted.length;
      const wait = rollout.lastStepAt && policy.delayMs ? Date.parse(rollout.lastStepAt) + policy.delayMs - now : 0;
      if (wait > 0 && free > 0) {
        soon(wait);
        free = 0;
      }
      for (const n of pending) {
        if (free <= 0) break;
        free--;
        const cname = target.containerName(n);
        try {
          for (const c of slots.get(n) ?? []) {
            if (policy.order === 'start-first' && !backing) {
              if (nameOf(c) === cname) engine.renameContainer(c.name, `${c.name.slice(0, 12)}_${cname}`);
            } else engine.removeContainer(c.name);
          }
          // Stop-first: the new replica once the old one is gone and its name free (a later pass).
          if (!input.byName(cname)) create(n);
          inFlight.push(n);
          soon(input.byName(cname) ? NAME_WAIT_MS : 0);
        } catch (err) {
          problems.push(`${cname}: ${errText(err)}`);
        }
      }
    }
    rollout.inFlight = inFlight;
    rollout.updated = updated;
    if (!pending.length && !inFlight.length && (rollout.state === 'RollingOut' || rollout.state === 'RollingBack')) {
      rollout.state = rollout.state === 'RollingOut' ? 'Completed' : 'RolledBack';
      rollout.finishedAt = nowIso;
      log.info({ service: svc.name, state: rollout.state }, 'rollout finished');
    }
  }

  const done = !pending.length && !inFlight.length && !leaving && !problems.length && !failedOnce && ready >= svc.replicas;
  const stable = done && target === svc ? { configHash: svc.configHash, generation: gen } : prev?.stable;
  const status = (state: Verdict, reason: string, message: string): ServiceOutcome => ({
    status: {
      desired: svc.replicas,
      ready,
      conditions: verdict(prev?.conditions ?? [], state, reason, message, gen),
      ...(input.waitingOn ? { waitingOn: input.waitingOn } : {}),
      ...(rollout ? { lastRollout: rollout } : {}),
      ...(stable ? { stable } : {}),
      ...(replaced ? { replaced } : {}),
      ...(lastReplaced ? { lastReplaced } : {}),
      ...(Object.keys(unhealthySince).length ? { unhealthySince } : {}),
    },
    state,
    ...(requeue !== undefined ? { requeueAfterMs: requeue } : {}),
  });
  if (rollout && rollout.to === svc.configHash) {
    if (rollout.state === 'RollingBack') return status('Degraded', 'RollingBack', `the update failed and is being rolled back: ${rollout.reason}`);
    if (rollout.state === 'RolledBack') return status('Degraded', 'RolledBack', `the update failed and was rolled back: ${rollout.reason}`);
    if (rollout.state === 'Paused') return status('Degraded', 'UpdatePaused', `the update is paused: ${rollout.reason}`);
  }
  if (problems.length) return status('Degraded', 'ReplicasFailed', problems.join('; '));
  if (failedOnce) return status('Degraded', 'ExitedNonZero', failedOnce);
  if (input.waitingOn && ready < svc.replicas) return status('Progressing', 'WaitingForDependencies', `waiting for ${input.waitingOn}`);
  if (rollout?.state === 'RollingOut') return status('Progressing', 'RollingUpdate', `${updated}/${svc.replicas} updated`);
  if (leaving) return status('Progressing', 'RollingUpdate', `${svc.replicas}/${svc.replicas} updated; removing ${leaving} replaced container${leaving === 1 ? '' : 's'}`);
  if (ready >= svc.replicas) return status('Ready', svc.oneShot ? 'Completed' : 'ReplicasReady', '');
  return status('Progressing', 'ReplicasStarting', `${ready}/${svc.replicas} ${svc.oneShot ? 'completed' : 'ready'}`);
}

// The stack reconciler, first slice: it records what each service of the document asks for and
// the stack's conditions at the spec's generation, and carries out a removal (the stack owns
// nothing yet, so its record goes). Creating and keeping the project's networks, volumes and
// containers converged is the next slice (issue 43 items 3–5); until then a stack says so in its
// Progressing condition (reason NotConverged) rather than claiming to be Ready.
import type { Reconciler } from '../../controllers/controller.ts';
import { rfc3339Nano } from '../../lib/ids.ts';
import { Stacks, type StackCondition, type StackConditionType, type StackResource, type StackStatus } from '../../store/kinds/stack.ts';
import type { Store } from '../../store/store.ts';

type StackStore = Pick<Store, 'get' | 'delete' | 'updateStatus'>;

/** A condition at `generation`, keeping its transition time when its status did not change. */
export function setCondition(list: readonly StackCondition[], type: StackConditionType, status: 'True' | 'False', reason: string, message: string, generation: number): StackCondition[] {
  const prev = list.find((c) => c.type === type);
  const lastTransitionTime = prev && prev.status === status ? prev.lastTransitionTime : rfc3339Nano();
  return [...list.filter((c) => c.type !== type), { type, status, reason, message, lastTransitionTime, observedGeneration: generation }];
}

export class StackReconciler implements Reconciler {
  private readonly store: StackStore;

  constructor(store: StackStore) {
    this.store = store;
  }

  async reconcile(name: string): Promise<void> {
    const r = this.store.get(Stacks, name);
    if (!r) return;
    if (r.spec.desired === 'removed') {
      this.store.delete(Stacks, name);
      return;
    }
    if (r.status.observedGeneration === r.generation) return;
    this.store.updateStatus(Stacks, name, (s) => observed(r, s));
  }
}

function observed(r: StackResource, s: StackStatus): StackStatus {
  const gen = r.generation;
  const why = 'creating the services of a stack is not implemented by this daemon yet';
  const services: StackStatus['services'] = {};
  for (const [svc, def] of Object.entries(r.spec.document.services)) {
    const prev = s.services[svc]?.conditions ?? [];
    let conditions = setCondition(prev, 'Ready', 'False', 'NotConverged', why, gen);
    conditions = setCondition(conditions, 'Progressing', 'True', 'NotConverged', why, gen);
    conditions = setCondition(conditions, 'Degraded', 'False', 'NotConverged', '', gen);
    services[svc] = { desired: def?.deploy?.replicas ?? 1, ready: 0, conditions };
  }
  let conditions = setCondition(s.conditions, 'Ready', 'False', 'NotConverged', why, gen);
  conditions = setCondition(conditions, 'Progressing', 'True', 'NotConverged', why, gen);
  conditions = setCondition(conditions, 'Degraded', 'False', 'NotConverged', '', gen);
  return { observedGeneration: gen, conditions, services };
}

// The conditions a stack and each of its services report (Ready, Progressing, Degraded), set the
// way Kubernetes sets them: one verdict gives all three, and a condition keeps its transition time
// while its status does not change.
import { rfc3339Nano } from '../../lib/ids.ts';
import type { StackCondition, StackConditionType } from '../../store/kinds/stack.ts';

export type Verdict = 'Ready' | 'Progressing' | 'Degraded';

/** A condition at `generation`, keeping its transition time when its status did not change. */
export function setCondition(list: readonly StackCondition[], type: StackConditionType, status: 'True' | 'False', reason: string, message: string, generation: number): StackCondition[] {
  const prev = list.find((c) => c.type === type);
  const lastTransitionTime = prev && prev.status === status ? prev.lastTransitionTime : rfc3339Nano();
  return [...list.filter((c) => c.type !== type), { type, status, reason, message, lastTransitionTime, observedGeneration: generation }];
}

/** The three conditions from one verdict. */
export function verdict(prev: readonly StackCondition[], state: Verdict, reason: string, message: string, gen: number): StackCondition[] {
  let c = setCondition(prev, 'Ready', state === 'Ready' ? 'True' : 'False', reason, state === 'Ready' ? '' : message, gen);
  c = setCondition(c, 'Progressing', state === 'Progressing' ? 'True' : 'False', reason, state === 'Progressing' ? message : '', gen);
  return setCondition(c, 'Degraded', state === 'Degraded' ? 'True' : 'False', reason, state === 'Degraded' ? message : '', gen);
}

export const errText = (err: unknown) => (err instanceof Error ? err.message : String(err));

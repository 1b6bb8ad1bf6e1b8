// Owner references: an object a controller made on behalf of another (a stack's containers,
// networks and volumes) names its owner in its spec. The owning reconciler finds what it owns by
// the kinds' `owner` index (key `kind/name`, see ownerKey), never adopts what does not name it, and
// removes what it owns when the owner goes.
import * as z from 'zod';

export interface OwnerRef {
  /** The owner's kind ('stack'). */
  kind: string;
  name: string;
}

export const ownerRefSchema = z.object({ kind: z.string().min(1), name: z.string().min(1) }) satisfies z.ZodType<OwnerRef>;

/** The `owner` index key of a reference. */
export const ownerKey = (ref: OwnerRef): string => `${ref.kind}/${ref.name}`;

/** The `owner` index keys of a spec: none without a reference. */
export const ownerKeys = (spec: { ownerRef?: OwnerRef }): string[] => (spec.ownerRef ? [ownerKey(spec.ownerRef)] : []);

/** Whether a spec names this owner. */
export const ownedBy = (spec: { ownerRef?: OwnerRef }, ref: OwnerRef): boolean => spec.ownerRef?.kind === ref.kind && spec.ownerRef.name === ref.name;

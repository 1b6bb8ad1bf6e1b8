// What applying a Compose application to a stack would do, without doing it (`engine stack diff`,
// PUT /stacks/{name}?dryRun=1): the networks and volumes it would create, and per replica slot
// the containers it would create, recreate (a changed config hash) or remove (scaled down, or a
// service no longer in the document), compared with what the stack owns now.
import { LABEL, type ProjectPlan } from './normalize.ts';

export interface OwnedContainer {
  name: string;
  labels: Record<string, string>;
}

export interface StackChange {
  Action: 'create' | 'recreate' | 'remove';
  Kind: 'container' | 'network' | 'volume';
  Name: string;
  /** Which service, for containers. */
  Service?: string;
}

export interface Existing {
  containers: readonly OwnedContainer[];
  /** Names of the networks and volumes that exist, and of those the stack owns. */
  networks: ReadonlySet<string>;
  ownedNetworks: ReadonlySet<string>;
  volumes: ReadonlySet<string>;
}

export function stackDiff(plan: ProjectPlan, have: Existing): StackChange[] {
  const out: StackChange[] = [];
  for (const n of plan.networks) if (!have.networks.has(n.name)) out.push({ Action: 'create', Kind: 'network', Name: n.name });
  for (const v of plan.volumes) if (!have.volumes.has(v.name)) out.push({ Action: 'create', Kind: 'volume', Name: v.name });
  const seen = new Set<OwnedContainer>();
  for (const svc of plan.services) {
    const mine = have.containers.filter((c) => c.labels[LABEL.service] === svc.name);
    for (const n of svc.slots) {
      const slot = mine.filter((c) => Number(c.labels[LABEL.number]) === n);
      slot.forEach((c) => seen.add(c));
      const name = svc.containerName(n);
      if (!slot.length) out.push({ Action: 'create', Kind: 'container', Name: name, Service: svc.name });
      else if (!slot.some((c) => c.labels[LABEL.configHash] === svc.hashFor(n))) out.push({ Action: 'recreate', Kind: 'container', Name: name, Service: svc.name });
    }
  }
  for (const c of have.containers) {
    if (!seen.has(c)) out.push({ Action: 'remove', Kind: 'container', Name: c.name, Service: c.labels[LABEL.service] ?? '' });
  }
  const wanted = new Set(plan.networks.map((n) => n.name));
  for (const n of [...have.ownedNetworks].sort()) if (!wanted.has(n)) out.push({ Action: 'remove', Kind: 'network', Name: n });
  return out;
}

// A container named in a request: full id, then name, then a unique id prefix, as the reference
// looks one up.
import { invalidArgument, notFound } from '../../lib/errors.ts';
import type { ContainerSpec, ContainerStatus, Resource } from '../../store/types.ts';
import { containerByName, KIND } from '../../store/types.ts';
import type { ApiStore } from './store.ts';

export function findContainer(store: ApiStore, ref: string): Resource<ContainerSpec, ContainerStatus> {
  if (!ref) throw invalidArgument('invalid name or ID supplied: ""');
  const exact = store.get<ContainerSpec, ContainerStatus>(KIND.container, ref);
  if (exact) return exact;
  const byName = containerByName(store, ref);
  if (byName) return byName;
  if (/^[0-9a-f]+$/.test(ref)) {
    const matches = store.list<ContainerSpec, ContainerStatus>(KIND.container).filter((c) => c.name.startsWith(ref));
    if (matches.length === 1) return matches[0];
    if (matches.length > 1) throw invalidArgument(`multiple IDs found with provided prefix: ${ref}`);
  }
  throw notFound(`No such container: ${ref}`);
}

// Container create: admitted (admission/containers/admit.ts: checked, normalised and written in one
// transaction), then answered once the reconciler has prepared it (or refused it).
// POST /containers/create and the builder's RUN steps share it.
import { conflict, EngineError, unavailable } from '../../lib/errors.ts';
import { type ContainerResource, Containers } from '../../store/kinds/container.ts';
import { admitContainer, type AdmissionDeps } from '../../admission/containers/admit.ts';
import type { ImageStore } from '../images/store.ts';
import { waitUntil } from '../write-and-wait.ts';

export interface CreateDeps extends AdmissionDeps {
  store: ImageStore;
  timeoutMs?: number;
  /** In a swarm: the attachable overlay networks the create names, joined (an address taken on each) before it is admitted. */
  attach?: (body: unknown) => Promise<unknown>;
}

export async function createContainer(
  deps: CreateDeps, input: unknown, opts: { name?: string; platform?: string; signal?: AbortSignal },
): Promise<{ id: string; warnings: string[] }> {
  const { store } = deps;
  const body = deps.attach ? await deps.attach(input) : input;
  const { created, warnings } = admitContainer(deps, body, opts);
  const id = created.name;
  /** The create failed (or did not finish in time): the record goes, the reconciler's reason is the answer. */
  const failed = (x: ContainerResource) => {
    store.updateSpec(Containers, id, (sp) => ({ ...sp, desired: 'removed', remove: { force: true, volumes: true } }));
    const code = x.status.errorCode === 'InvalidArgument' || x.status.errorCode === 'Conflict' ? x.status.errorCode : 'Internal';
    return new EngineError(code, x.status.error || 'container could not be created');
  };
  const r = await waitUntil(store, Containers, id, (x) => x.status.observedGeneration >= created.generation, {
    timeoutMs: deps.timeoutMs,
    signal: opts.signal,
    timedOut: (x) => (x.status.prepared ? unavailable(`container ${id} was not created in time`) : failed(x)),
  });
  // Another request (an rm by id prefix, say) removed it while it was being created: its
  // conflict, not a failure of this daemon.
  if (!r || (!r.status.prepared && !r.status.error && r.spec.desired === 'removed')) {
    throw conflict(`container ${id} was removed while it was being created`);
  }
  if (!r.status.prepared) throw failed(r);
  return { id, warnings };
}


// The builder's backend over the store: images looked up, recorded and listed by parent, and the
// RUN containers created, run and removed the way the container routes do it (desired state
// written, the reconciler's status waited for), so a RUN is an ordinary container.
import type { BuildBackend, BuildImage } from '../../lib/ports/build.ts';
import { EngineError, internal, isCode, notFound } from '../../lib/errors.ts';
import { isRunning, Containers, type ContainerResource as CR } from '../../store/kinds/container.ts';
import { createContainer, type CreateDeps } from '../containers/create.ts';
import { ensureImageRecord } from '../images/records.ts';
import { findImage, isUsable, type ImageResource } from '../images/resolve.ts';
import type { ContainerStreamsPort, StreamHub } from '../ports.ts';
import { Images } from '../../store/kinds/image.ts';
import { settle, waitRemoved } from '../write-and-wait.ts';


export interface BuildBackendDeps extends CreateDeps {
  streams: Pick<ContainerStreamsPort, 'watchRuns'>;
  /** How long a removal or a start may take. */
  timeoutMs: number;
}

/** How long a finished RUN's output may take to drain after its exit. */
const DRAIN_MS = 5_000;

/** An image record as the builder sees it. */
export const asBuildImage = (r: ImageResource): BuildImage => ({
  id: r.name, rawConfig: r.spec.rawConfig, diffIds: r.spec.diffIds, chainId: r.spec.chainId, size: r.spec.size, parent: r.spec.parent,
});

export function buildBackend(deps: BuildBackendDeps): Omit<BuildBackend, 'pullImage'> {
  const { store, timeoutMs } = deps;

  function removeSoon(id: string): void {
    try {
      store.updateSpec(Containers, id, (s) => ({ ...s, desired: 'removed', remove: { force: true, volumes: true } }));
    } catch (err) {
      if (!isCode(err, 'NotFound')) throw err;
    }
  }

  return {
    findImage(ref) {
      const r = findImage(store, ref);
      return r ? asBuildImage(r) : undefined;
    },
    children(parentId) {
      return store.list(Images).filter((r) => isUsable(r) && r.spec.parent === parentId).map(asBuildImage);
    },
    async addImage(img, parentId, signal) {
      await ensureImageRecord(store, img, { signal, parent: parentId, timeoutMs });
    },
    async createContainer(config, hostConfig, signal) {
      const { id } = await createContainer(deps, { ...config, HostConfig: hostConfig }, { signal });
      return id;
    },
    async runContainer(id, onOutput, signal) {
      let hub: StreamHub | undefined;
      let unsubscribe: (() => void) | undefined;
      const stopWatching = deps.streams.watchRuns(id, (h) => {
        if (hub) return;
        hub = h;
        unsubscribe = h.subscribe((stream, chunk) => onOutput(stream, chunk));
      });
      // A build the client gave up on leaves no container running.
      const onAbort = () => removeSoon(id);
      signal.addEventListener('abort', onAbort, { once: true });
      try {
        const before = store.get(Containers, id);
        if (!before) throw notFound(`No such container: ${id}`);
        const want = store.updateSpec(Containers, id, (s) => ({
          ...s, desired: 'running', runGeneration: s.runGeneration + 1, manuallyStopped: false,
        })).spec.runGeneration;
        const started = await settle(store, Containers, id, (r) => !r || r.status.runGeneration >= want, { timeoutMs, signal });
        if (!started || started.status.runGeneration < want) throw internal(`container ${id} did not start`);
        if (started.status.error && started.status.phase !== 'running' && started.status.exitSeq === before.status.exitSeq) {
          const code = started.status.errorCode === 'InvalidArgument' ? 'InvalidArgument' : 'Internal';
          throw new EngineError(code, `failed to create task for container: ${started.status.error}`);
        }
        const exited = (r: CR | undefined) => !r || (r.status.exitSeq > before.status.exitSeq && !isRunning(r.status));
        const done = await settle(store, Containers, id, exited, { signal });
        if (!done) throw internal(`container ${id} was removed while it ran`);
        if (hub) await Promise.race([hub.ended, new Promise((r) => setTimeout(r, DRAIN_MS).unref())]);
        return done.status.exitCode;
      } finally {
        signal.removeEventListener('abort', onAbort);
        stopWatching();
        unsubscribe?.();
      }
    },
    async removeContainer(id) {
      removeSoon(id);
      const left = await waitRemoved(store, Containers, id, { timeoutMs });
      if (left) throw internal(`removal of container ${id} did not finish in time`);
    },
  };
}

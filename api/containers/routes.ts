// The container API, one plugin per concern: lifecycle (create, start, stop, remove...), inspect
// and list, logs/stats/top, and the archive endpoints. `docker update` is update.ts's.
import type { ContainerResource as CR } from '../../store/kinds/container.ts';
import type { ImageResource } from '../../store/kinds/image.ts';
import type { App } from '../app.ts';
import type { ContainerLogReader, ContainerOpsPort, ContainerSignalPort, ContainerStreamsPort } from '../ports.ts';
import { archiveRoutes } from './archive-routes.ts';
import type { CreateDefaults } from '../../admission/containers/create-request.ts';
import { inspectRoutes } from './inspect-routes.ts';
import { lifecycleRoutes } from './lifecycle-routes.ts';
import { observeRoutes } from './observe-routes.ts';
import type { ImageStore } from '../images/store.ts';


export interface ContainerRouteDeps {
  /** With transaction: a container and the volumes it creates are written together. */
  store: ImageStore;
  logs: ContainerLogReader;
  defaults: CreateDefaults;
  /** Resolves an image reference or id to its record; NotFound `No such image: ...` otherwise. */
  resolveImage: (ref: string) => ImageResource;
  /** Validates a signal name/number (InvalidArgument). */
  parseSignal: (sig: string) => number;
  graphDriverData: (id: string) => Record<string, string>;
  /** Bytes of a container's read-write layer (what removing it gives back); 0 when unknown. */
  sizeRw: (id: string) => Promise<number>;
  /** One-off signals to a container's task (`docker kill`): NotFound when it has none. */
  signals: ContainerSignalPort;
  /** Processes, stats, changes and files of a container (top, stats, diff, cp, export). */
  ops: ContainerOpsPort;
  /** Inspect waits for a stop being recorded (the process gone, the teardown running). */
  streams?: Pick<ContainerStreamsPort, 'settled'>;
  /** Events only the API sees (a kill's signal). */
  events?: { container(action: string, c: CR, extra?: Record<string, string>): void };
  /** How long a handler waits for the reconciler before answering 503/500. */
  waitTimeoutMs?: number;
  /** In a swarm: a create's attachable overlay networks joined first (reconcilers/node/overlay-attach.ts). */
  swarmAttach?: (body: unknown) => Promise<unknown>;
}

export function containerRoutes(deps: ContainerRouteDeps) {
  const areas = [lifecycleRoutes(deps), inspectRoutes(deps), observeRoutes(deps), archiveRoutes(deps)];
  return async function register(app: App): Promise<void> {
    for (const area of areas) await area(app);
  };
}

// Reading containers: the list, one container's inspect, and its filesystem changes. Answers come
// from the store's view (and the layer store for sizes and changes), never from the supervisor.
import * as z from 'zod';

import { endpointsOfContainer } from '../../store/kinds/endpoint.ts';
import { Volumes } from '../../store/kinds/volume.ts';
import type { App } from '../app.ts';
import { bridgeNetworkTest, networkNameResolver } from '../networks/views.ts';
import { apiVersion, idParams, q } from '../request.ts';
import { listContainers } from './list.ts';
import type { ContainerRouteDeps } from './routes.ts';
import { inspectView } from './views.ts';
import { execsOfContainer } from '../../store/kinds/exec.ts';
import { Images } from '../../store/kinds/image.ts';
import { shownImageId } from '../images/resolve.ts';
import { findContainer } from '../../store/kinds/container.ts';

export function inspectRoutes(deps: ContainerRouteDeps) {
  const { store } = deps;
  return async function register(app: App): Promise<void> {
    const listQuery = z.looseObject({ all: q.bool(), limit: q.atoi(), size: q.bool(), filters: q.str() });
    app.get('/containers/json', { schema: { querystring: listQuery } }, async (req) => {
      return listContainers(store, {
        all: req.query.all,
        limit: req.query.limit ?? -1,
        size: req.query.size,
        filters: req.query.filters ?? '',
        sizeRw: deps.sizeRw,
        findContainer: (ref) => findContainer(store, ref),
        resolveImageId: (ref) => deps.resolveImage(ref).name,
        apiVersion: apiVersion(req),
      });
    });

    app.get('/containers/:id/json', { schema: { params: idParams, querystring: z.looseObject({ size: q.bool() }) } }, async (req) => {
      let c = findContainer(store, req.params.id);
      if (deps.streams && c.status.phase === 'running') {
        await deps.streams.settled(c.name);
        c = findContainer(store, req.params.id);
      }
      const size = req.query.size ? { rw: await deps.sizeRw(c.name), rootFs: 0 } : undefined;
      if (size) size.rootFs = size.rw + (store.get(Images, c.spec.imageId)?.spec.size ?? 0);
      return inspectView(c, {
        apiVersion: apiVersion(req),
        graphDriverData: deps.graphDriverData(c.name),
        size,
        volumeSource: (name) => store.get(Volumes, name)?.status.mountpoint ?? '',
        networkName: networkNameResolver(store),
        endpoints: endpointsOfContainer(store, c.name),
        isBridgeNetwork: bridgeNetworkTest(store),
        execIds: execsOfContainer(store, c.name).filter((e) => e.status.phase !== 'exited').map((e) => e.name),
        imageId: (name) => shownImageId(store, name),
      });
    });

    app.get('/containers/:id/changes', { schema: { params: idParams } }, async (req) => {
      const c = findContainer(store, req.params.id);
      const ch = await deps.ops.changes(c.name);
      return ch.length ? ch : null;
    });
  };
}

// The service routes of swarm mode (a manager's: the swarm answers the reference's 503 on a worker,
// on a node in no swarm, on a locked one): create, list, inspect, update at a version, remove.
import * as z from 'zod';
import type { App } from '../app.ts';
import { parseSwarmVersion } from '../../lib/swarm/cluster-object.ts';
import { filtersQuery, idParams, q } from '../request.ts';
import type { ServicesPort } from './port.ts';
import { serviceFilter, serviceView, type ServiceCounts } from './views.ts';

export interface ServiceRouteDeps {
  /** The swarm's services (throws the reference's 503 when this node is not a manager that can answer). */
  services: () => ServicesPort;
  /** The counts of ServiceStatus (status=true). */
  counts?: (serviceId: string) => Promise<ServiceCounts>;
}

const anyBody = z.unknown();

export function serviceRoutes(deps: ServiceRouteDeps) {
  const counts = async (id: string): Promise<ServiceCounts> => (deps.counts ? await deps.counts(id) : { RunningTasks: 0, DesiredTasks: 0, CompletedTasks: 0 });

  return async function register(app: App): Promise<void> {
    app.get('/services', { schema: { querystring: filtersQuery.extend({ status: q.bool() }) } }, async (req) => {
      const match = serviceFilter(req.query.filters);
      const list = (await deps.services().list()).filter(match);
      return await Promise.all(list.map(async (s) => serviceView(s, req.query.status ? { status: await counts(s.ID) } : {})));
    });

    app.get('/services/:id', { schema: { params: idParams, querystring: z.looseObject({ insertDefaults: q.bool() }) } }, async (req) => {
      return serviceView(await deps.services().find(req.params.id), { insertDefaults: req.query.insertDefaults });
    });

    app.post('/services/create', { schema: { body: anyBody } }, async (req, reply) => {
      const id = await deps.services().create(req.body);
      reply.code(201).send({ ID: id });
    });

    app.post('/services/:id/update', { schema: { params: idParams, querystring: z.looseObject({ version: q.str(), registryAuthFrom: q.str(), rollback: q.str() }), body: anyBody } }, async (req) => {
      const version = parseSwarmVersion(req.query.version, 'service');
      await deps.services().update(req.params.id, version, req.body);
      return { Warnings: null };
    });

    app.delete('/services/:id', { schema: { params: idParams } }, async (req, reply) => {
      await deps.services().remove(req.params.id);
      reply.code(200).send();
    });
  };
}

// The service routes of swarm mode (a manager's: the swarm answers the reference's 503 on a worker,
// on a node in no swarm, on a locked one): create, list, inspect, update at a version, remove; the
// tasks (./tasks.ts); the logs of a service's tasks or of one (./logs.ts).
import * as z from 'zod';
import type { App } from '../app.ts';
import { parseSwarmVersion } from '../../lib/swarm/cluster-object.ts';
import { internal } from '../../lib/errors.ts';
import { filtersQuery, idParams, q } from '../request.ts';
import type { ServicesPort } from './port.ts';
import { serviceFilter, serviceView } from './views.ts';
import { findTask, serviceCounts, taskFilter, type NodeRef } from './tasks.ts';
import { taskView } from '../../lib/swarm/task.ts';
import { logsQuery, logTail, logTime } from '../logs-query.ts';
import { checkStreams, streamTaskLogs, type TaskLogsQuery } from './logs.ts';

export interface ServiceRouteDeps {
  /** The swarm's services (throws the reference's 503 when this node is not a manager that can answer). */
  services: () => ServicesPort;
  /** The swarm's nodes (the tasks' node filter). */
  nodes: () => NodeRef[];
}

const anyBody = z.unknown();

function taskLogsQuery(qs: z.output<typeof logsQuery>): TaskLogsQuery {
  checkStreams(qs);
  return { stdout: qs.stdout, stderr: qs.stderr, follow: qs.follow, timestamps: qs.timestamps, details: qs.details, since: logTime(qs.since), until: logTime(qs.until), tail: logTail(qs.tail) };
}

/** The X-Registry-Auth a service's tasks pull with (`--with-registry-auth`), kept as sent. */
const registryAuthHeader = (h: string | string[] | undefined) => (Array.isArray(h) ? h[0] : h) || undefined;

export function serviceRoutes(deps: ServiceRouteDeps) {
  return async function register(app: App): Promise<void> {
    app.get('/services', { schema: { querystring: filtersQuery.extend({ status: q.bool() }) } }, async (req) => {
      const match = serviceFilter(req.query.filters);
      const port = deps.services();
      const list = (await port.list()).filter(match);
      const tasks = req.query.status ? (await port.tasks()).map((x) => x.task) : [];
      return list.map((s) => serviceView(s, req.query.status ? { status: serviceCounts(s, tasks) } : {}));
    });

    app.get('/tasks', { schema: { querystring: filtersQuery } }, async (req) => {
      const port = deps.services();
      const match = taskFilter(req.query.filters, await port.list(), deps.nodes());
      return (await port.tasks()).filter((x) => match(x.task)).map((x) => taskView(x.task, x.version));
    });

    app.get('/tasks/:id', { schema: { params: idParams } }, async (req) => {
      const x = findTask(await deps.services().tasks(), req.params.id);
      return taskView(x.task, x.version);
    });

    app.get('/services/:id/logs', { schema: { params: idParams, querystring: logsQuery } }, async (req, reply) => {
      const o = taskLogsQuery(req.query);
      const port = deps.services();
      const svc = await port.find(req.params.id);
      const tasks = async () => (await port.tasks()).map((x) => x.task).filter((t) => t.ServiceID === svc.ID);
      await streamTaskLogs(reply, port, tasks, o, !!svc.Spec.TaskTemplate.ContainerSpec['TTY']);
    });

    app.get('/tasks/:id/logs', { schema: { params: idParams, querystring: logsQuery } }, async (req, reply) => {
      const o = taskLogsQuery(req.query);
      const port = deps.services();
      const { task } = findTask(await port.tasks(), req.params.id);
      await streamTaskLogs(reply, port, async () => [task], o, !!(task.Spec['ContainerSpec'] as Record<string, unknown> | undefined)?.['TTY']);
    });

    app.get('/services/:id', { schema: { params: idParams, querystring: z.looseObject({ insertDefaults: q.bool() }) } }, async (req) => {
      return serviceView(await deps.services().find(req.params.id), { insertDefaults: req.query.insertDefaults });
    });

    app.post('/services/create', { schema: { body: anyBody } }, async (req, reply) => {
      const id = await deps.services().create(req.body, registryAuthHeader(req.headers['x-registry-auth']));
      reply.code(201).send({ ID: id });
    });

    app.post('/services/:id/update', { schema: { params: idParams, querystring: z.looseObject({ version: q.str(), registryAuthFrom: q.str(), rollback: q.str() }), body: anyBody } }, async (req) => {
      const version = parseSwarmVersion(req.query.version, 'service');
      const auth = registryAuthHeader(req.headers['x-registry-auth']);
      const from = req.query.registryAuthFrom || 'spec';
      // As moby: checked only when no credentials come with the update.
      if (!auth && from !== 'spec' && from !== 'previous-spec') throw internal('unsupported registryAuthFrom value');
      const rollback = req.query.rollback ?? '';
      if (rollback !== '' && rollback !== 'none' && rollback !== 'previous') throw internal(`unrecognized rollback option ${rollback}`);
      await deps.services().update(req.params.id, version, req.body, { auth, from: from === 'previous-spec' ? from : 'spec', rollback: rollback === 'previous' });
      return { Warnings: null };
    });

    app.delete('/services/:id', { schema: { params: idParams } }, async (req, reply) => {
      await deps.services().remove(req.params.id);
      reply.code(200).send();
    });
  };
}

// The stack reconciler's wiring: its Engine API calls go to the daemon's own API in process
// (fastify's inject), so a stack's objects are made under every rule a client's are. Started once
// the API serves; stopped before it closes.
import { cpus, hostname, machine, totalmem } from 'node:os';
import { join } from 'node:path';
import type { NodeFacts } from '../../lib/compose/placement.ts';
import { engineId } from '../system-info.ts';
import type { FastifyInstance } from 'fastify';
import { EngineError, type ErrorCode } from '../../lib/errors.ts';
import { stackController } from '../../reconcilers/stack/controller.ts';
import { StackReconciler, type StackEngine } from '../../reconcilers/stack/reconciler.ts';
import type { Controller } from '../../controllers/controller.ts';
import type { Manager } from '../../controllers/manager.ts';
import type { Store } from '../../store/store.ts';
import { component } from '../components.ts';
import type { DaemonEnv, Paths } from './env.ts';
import { labelMap } from './cluster.ts';
import type { Controllers } from './containers.ts';
import type { Metrics } from './metrics.ts';

/** The longest the stack controller waits for the container controller's first pass (then starts anyway). */
const SYNC_WAIT_MS = 30_000;

const CODES: Record<number, ErrorCode> = { 400: 'InvalidArgument', 403: 'PermissionDenied', 404: 'NotFound', 409: 'Conflict', 503: 'Unavailable' };

/** The Engine API, in process: a call that is not a 2xx throws with the API's message. */
export function inProcessEngine(app: Pick<FastifyInstance, 'inject'>): StackEngine {
  const call = async (method: 'POST' | 'DELETE', url: string, body?: unknown): Promise<Record<string, unknown>> => {
    const res = await app.inject({ method, url, ...(body === undefined ? {} : { payload: JSON.stringify(body), headers: { 'content-type': 'application/json' } }) });
    const text = res.body;
    const json = text ? (() => { try { return JSON.parse(text) as Record<string, unknown>; } catch { return { message: text }; } })() : {};
    if (res.statusCode >= 300 && res.statusCode !== 304) throw new EngineError(CODES[res.statusCode] ?? 'Internal', String(json.message ?? `${method} ${url}: ${res.statusCode}`));
    return json;
  };
  const q = encodeURIComponent;
  return {
    createNetwork: async (body) => void (await call('POST', '/networks/create', body)),
    removeNetwork: async (name) => void (await call('DELETE', `/networks/${q(name)}`)),
    createVolume: async (body) => void (await call('POST', '/volumes/create', body)),
    removeVolume: async (name) => void (await call('DELETE', `/volumes/${q(name)}`)),
    createContainer: async (name, body) => String((await call('POST', `/containers/create?name=${q(name)}`, body)).Id),
    startContainer: async (id) => void (await call('POST', `/containers/${q(id)}/start`)),
    renameContainer: async (id, name) => void (await call('POST', `/containers/${q(id)}/rename?name=${q(name)}`)),
    removeContainer: async (id) => void (await call('DELETE', `/containers/${q(id)}?force=1`)),
  };
}

/** This daemon as a node, for a stack's placement constraints and reservations. */
function nodeFacts(cfg: DaemonEnv['cfg'], id: string): NodeFacts {
  return { id, hostname: hostname(), role: 'manager', os: 'linux', arch: machine(), labels: labelMap(cfg.labels ?? []), cpus: cpus().length, memoryBytes: totalmem() };
}

export function stacksComponent({ cfg, log }: DaemonEnv) {
  return component<{ controller: Controller; manager: Manager }>({
    id: 'stacks',
    requires: ['api', 'store', 'paths', 'metrics', 'controllers'],
    init: async (ctx) => {
      const store = ctx.get<Store>('store');
      const { app } = ctx.get<{ app: FastifyInstance }>('api');
      const id = engineId(cfg.dataRoot);
      const reconciler = new StackReconciler(store, { engine: inProcessEngine(app), filesRoot: join(ctx.get<Paths>('paths').dataRoot, 'stacks'), node: () => nodeFacts(cfg, id) });
      const controller = stackController.build({ store, reconciler, log: log.child({ component: 'stacks' }), metrics: ctx.get<Metrics>('metrics').controllers });
      // Stacks read their containers' status: started once the container controller has looked at
      // each container once (after a restart or a kill -9 the store still says what the last run saw).
      const { manager, containers } = ctx.get<Controllers>('controllers');
      manager.add(controller, { after: [containers], waitMs: SYNC_WAIT_MS });
      return { controller, manager };
    },
    // Before the API closes: its reconciles call it.
    close: ({ controller, manager }) => manager.remove(controller),
  });
}

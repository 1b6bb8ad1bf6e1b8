// The stack API extension (docs/api-extensions.md): PUT /stacks/{name} writes a Compose
// application (YAML or JSON) as a stack's desired state; GET lists and inspects with status and
// conditions; DELETE marks it removed and waits until the stack reconciler has taken away what the
// stack owns. A bad name or document is a 400 naming the path, and nothing is written.
import { parse as parseYaml } from 'yaml';
import * as z from 'zod';
import type { App } from '../app.ts';
import { dependencyProblem } from '../../lib/compose/dependencies.ts';
import { stackDiff, type StackChange } from '../../lib/compose/diff.ts';
import { planProject, undeclaredReference } from '../../lib/compose/normalize.ts';
import { composeApp, composeIssue, PROJECT_NAME, type ComposeApp } from '../../lib/compose/schema.ts';
import { conflict, invalidArgument, notFound, unavailable } from '../../lib/errors.ts';
import { rfc3339Nano } from '../../lib/ids.ts';
import { liveNetworks } from '../../store/kinds/network.ts';
import { INITIAL_STACK_STATUS, ownedContainers, stackOf, Stacks, type StackResource } from '../../store/kinds/stack.ts';
import { liveVolumes } from '../../store/kinds/volume.ts';
import type { ApiStore } from '../containers/store.ts';
import { nameParams, q } from '../request.ts';
import { gone, writeAndWait } from '../write-and-wait.ts';

/** Cluster stacks in the swarm's etcd (undefined while the node is in no swarm). */
export interface ClusterStacksPort {
  put(name: string, document: ComposeApp): Promise<{ created: boolean; view: Record<string, unknown> }>;
  get(name: string): Promise<Record<string, unknown> | undefined>;
  list(): Promise<Array<Record<string, unknown>>>;
  remove(name: string): Promise<boolean>;
}

export interface StackRouteDeps {
  store: ApiStore;
  cluster?: () => ClusterStacksPort | undefined;
  /** How long DELETE waits for the stack reconciler. */
  waitTimeoutMs?: number;
}

const YAML_TYPES = ['application/yaml', 'application/x-yaml', 'text/yaml', 'text/x-yaml'];
const DOCUMENT_LIMIT = 8 * 1024 * 1024;

/** A stack as GET answers it. */
export function stackView(r: StackResource) {
  return {
    Name: r.name,
    Generation: r.generation,
    AppliedAt: r.spec.appliedAt,
    Removing: r.spec.desired === 'removed',
    Document: r.spec.document,
    Status: { ObservedGeneration: r.status.observedGeneration, Conditions: r.status.conditions, Services: r.status.services },
  };
}

/** What an apply of `document` would change (nothing is written). */
function dryRun(store: ApiStore, name: string, document: ComposeApp): StackChange[] {
  const containers = ownedContainers(store, name).filter((c) => c.spec.desired !== 'removed').map((c) => ({ name: c.spec.name.replace(/^\//, ''), labels: c.spec.config.Labels ?? {} }));
  const networks = liveNetworks(store);
  return stackDiff(planProject(name, document, ''), {
    containers,
    networks: new Set(networks.map((n) => n.spec.name)),
    ownedNetworks: new Set(networks.filter((n) => stackOf(n.spec, n.spec.labels) === name).map((n) => n.spec.name)),
    volumes: new Set(liveVolumes(store).map((v) => v.name)),
  });
}

function findStack(store: ApiStore, name: string): StackResource {
  const r = store.get(Stacks, name);
  if (!r) throw notFound(`no such stack: ${name}`);
  return r;
}

export function stackRoutes(deps: StackRouteDeps) {
  const { store } = deps;
  const timeoutMs = deps.waitTimeoutMs ?? 120_000;

  return async function register(app: App): Promise<void> {
    app.addContentTypeParser(YAML_TYPES, { parseAs: 'string', bodyLimit: DOCUMENT_LIMIT }, (_req, body, done) => {
      try {
        done(null, parseYaml(typeof body === 'string' ? body : body.toString('utf8')));
      } catch (err) {
        done(invalidArgument(`invalid YAML: ${err instanceof Error ? err.message : String(err)}`), undefined);
      }
    });

    const scoped = z.looseObject({ scope: q.str() });
    /** The cluster stacks port for ?scope=cluster (400 without a cluster store, or for another scope); undefined for local. */
    const clusterScope = (scope: string | undefined): ClusterStacksPort | undefined => {
      if (!scope || scope === 'local') return undefined;
      if (scope !== 'cluster') throw invalidArgument(`invalid scope ${JSON.stringify(scope)}: expected local or cluster`);
      const cluster = deps.cluster?.();
      if (!cluster) throw invalidArgument('scope=cluster needs the node to be in a swarm (docker swarm init or docker swarm join)');
      return cluster;
    };

    app.put('/stacks/:name', { schema: { params: nameParams, querystring: z.looseObject({ dryRun: q.bool(), scope: q.str() }) } }, async (req, reply) => {
      const name = req.params.name;
      if (!PROJECT_NAME.test(name)) {
        throw invalidArgument(`invalid project name "${name}": must consist only of lowercase alphanumeric characters, hyphens, and underscores as well as start with a letter or number`);
      }
      if (req.body === undefined || req.body === null) throw invalidArgument('a Compose document is required (YAML or JSON body)');
      const parsed = composeApp.safeParse(req.body);
      if (!parsed.success) throw invalidArgument(composeIssue(parsed.error));
      const document = parsed.data;
      const undeclared = undeclaredReference(document) ?? dependencyProblem(document);
      if (undeclared) throw invalidArgument(undeclared);
      if (document.name !== undefined && document.name !== name) throw invalidArgument(`name: "${document.name}" does not match the stack "${name}"`);
      const cluster = clusterScope(req.query.scope);
      if (cluster) {
        if (req.query.dryRun) throw invalidArgument('dryRun is not supported with scope=cluster');
        const { created, view } = await cluster.put(name, document);
        reply.code(created ? 201 : 200);
        return view;
      }
      const cur = store.get(Stacks, name);
      if (req.query.dryRun) return { Name: name, DryRun: true, Changes: dryRun(store, name, document) };
      if (cur?.spec.desired === 'removed') throw conflict(`stack ${name} is being removed`);
      const spec = { document, desired: 'present' as const, removeVolumes: false, appliedAt: rfc3339Nano() };
      const r = cur ? store.updateSpec(Stacks, name, () => spec) : store.create(Stacks, name, spec, INITIAL_STACK_STATUS);
      reply.code(cur ? 200 : 201);
      return stackView(r);
    });

    app.get('/stacks', { schema: { querystring: scoped } }, async (req) => {
      const cluster = clusterScope(req.query.scope);
      return cluster ? cluster.list() : store.list(Stacks).map(stackView);
    });

    app.get('/stacks/:name', { schema: { params: nameParams, querystring: scoped } }, async (req) => {
      const cluster = clusterScope(req.query.scope);
      if (!cluster) return stackView(findStack(store, req.params.name));
      const view = await cluster.get(req.params.name);
      if (!view) throw notFound(`no such cluster stack: ${req.params.name}`);
      return view;
    });

    app.delete('/stacks/:name', { schema: { params: nameParams, querystring: z.looseObject({ volumes: q.bool(), scope: q.str() }) } }, async (req, reply) => {
      const cluster = clusterScope(req.query.scope);
      if (cluster) {
        if (!(await cluster.remove(req.params.name))) throw notFound(`no such cluster stack: ${req.params.name}`);
        return reply.code(204).send();
      }
      const r = findStack(store, req.params.name);
      const removeVolumes = req.query.volumes || (r.spec.desired === 'removed' && r.spec.removeVolumes);
      await writeAndWait(store, Stacks, r.name, (s) => ({ ...s, desired: 'removed', removeVolumes }), gone, {
        timeoutMs,
        timedOut: () => unavailable(`removal of stack ${r.name} did not finish in time`),
      });
      reply.code(204).send();
    });
  };
}

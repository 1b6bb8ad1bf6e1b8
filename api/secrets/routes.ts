// The secret and config routes of swarm mode (a manager's: the swarm answers the reference's 503
// elsewhere): create, list with filters (id and name prefixes, names, label), inspect (a secret
// without its data), update (labels only) at a version, remove (not while a service uses it).
// Both kinds are the same routes over their own store (cmd/swarm/secrets.ts).
import * as z from 'zod';
import type { App } from '../app.ts';
import { invalidArgument } from '../../lib/errors.ts';
import { objectView, type ObjectKind } from '../../lib/swarm/swarm-object.ts';
import { matchKVList, parseFilters } from '../filters.ts';
import { filtersQuery, idParams, q } from '../request.ts';
import type { SwarmObjectsPort, VersionedObject } from './port.ts';

export interface SecretRouteDeps {
  secrets: () => SwarmObjectsPort;
  configs: () => SwarmObjectsPort;
}

// `names` (exact names) is a secrets' filter only: a configs' list refuses it, as the reference.
const OBJECT_FILTERS: Record<ObjectKind, ReadonlySet<string>> = { secret: new Set(['id', 'label', 'name', 'names']), config: new Set(['id', 'label', 'name']) };

/**
 * GET /secrets' and /configs' filters as a predicate (docs/reference-secrets.md §3): id a
 * case-sensitive id prefix, name a name prefix in any case, names an exact name in any case, label
 * a key or key=value (all of them).
 */
export function objectFilter(kind: ObjectKind, raw: string | undefined): (x: VersionedObject) => boolean {
  const f = parseFilters(raw);
  for (const k of f.keys()) if (!OBJECT_FILTERS[kind].has(k)) throw invalidArgument(`Invalid filter '${k}'`);
  const ids = f.get('id') ?? [];
  const names = (f.get('name') ?? []).map((x) => x.toLowerCase());
  const exact = (f.get('names') ?? []).map((x) => x.toLowerCase());
  return ({ object: o }) =>
    (!ids.length || ids.some((x) => o.ID.startsWith(x))) &&
    (!names.length || names.some((x) => o.Spec.Name.toLowerCase().startsWith(x))) &&
    (!exact.length || exact.includes(o.Spec.Name.toLowerCase())) &&
    matchKVList(f.get('label'), o.Spec.Labels);
}

/** A version query as the reference reads it (a bad one its 400). */
function versionOf(kind: ObjectKind, v: string | undefined): bigint {
  if (!/^\d+$/.test(v ?? '') || BigInt(v!) > 0xffff_ffff_ffff_ffffn) throw invalidArgument(`invalid ${kind} version`);
  return BigInt(v!);
}

export function secretRoutes(deps: SecretRouteDeps) {
  return async function register(app: App): Promise<void> {
    for (const kind of ['secret', 'config'] as const) {
      const port = () => (kind === 'secret' ? deps.secrets() : deps.configs());
      app.get(`/${kind}s`, { schema: { querystring: filtersQuery } }, async (req) => {
        const p = port();
        const match = objectFilter(kind, req.query.filters);
        return (await p.list()).filter(match).map((x) => objectView(x.object, x.version));
      });
      app.get(`/${kind}s/:id`, { schema: { params: idParams } }, async (req) => {
        const x = await port().find(req.params.id);
        return objectView(x.object, x.version);
      });
      app.post(`/${kind}s/create`, { schema: { body: z.unknown() } }, async (req, reply) => {
        reply.code(201).send({ ID: await port().create(req.body) });
      });
      app.post(`/${kind}s/:id/update`, { schema: { params: idParams, querystring: z.looseObject({ version: q.str() }), body: z.unknown() } }, async (req, reply) => {
        const p = port();
        await p.update(req.params.id, versionOf(kind, req.query.version), req.body);
        reply.code(200).send();
      });
      app.delete(`/${kind}s/:id`, { schema: { params: idParams } }, async (req, reply) => {
        await port().remove(req.params.id);
        reply.code(204).send();
      });
    }
  };
}

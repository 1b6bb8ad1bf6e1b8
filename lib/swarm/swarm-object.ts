// Secrets and configs of a swarm as the reference keeps and shows them (swarmkit's controlapi):
// a spec (Name, Labels, Data; a config's Templating, a secret's Driver), checked as swarmkit checks
// it, shown without a secret's data; filtered by id, label, name and names. Kept in etcd by
// cmd/swarm/secrets.ts (a secret's data sealed, lib/swarm/seal.ts).
import * as z from 'zod';
import { invalidArgument } from '../errors.ts';
import { anyMap, at, body, goBody, str, strMap, struct, unmarshal } from '../go-json.ts';
import { SWARM_PREFIX } from './keys.ts';

export type ObjectKind = 'secret' | 'config';

export const objectsPrefix = (kind: ObjectKind) => `${SWARM_PREFIX}${kind}s/`;
export const objectNamesPrefix = (kind: ObjectKind) => `${SWARM_PREFIX}${kind}-names/`;

/** swarmkit's MaxSecretSize and MaxConfigSize. */
export const MAX_SIZE: Record<ObjectKind, number> = { secret: 500 * 1024, config: 1000 * 1024 };

const rpc = (msg: string) => `rpc error: code = InvalidArgument desc = ${msg}`;
const NAME = /^[a-zA-Z0-9]+(?:[a-zA-Z0-9-_.]*[a-zA-Z0-9])?$/;

/** The spec of a create or an update, checked as Go's decoder checks swarm.SecretSpec / ConfigSpec. */
export function objectSpecSchema(kind: ObjectKind) {
  const goType = kind === 'secret' ? 'SecretSpec' : 'ConfigSpec';
  const f = at(goType, '');
  return goBody(
    struct(body(`swarm.${goType}`), `swarm.${goType}`, {
      Name: str(f('Name')),
      Labels: strMap(f('Labels')),
      Data: z.string({ error: unmarshal(goType, 'Data', '[]uint8') }).nullish(),
      Driver: anyMap(f('Driver'), 'swarm.Driver'),
      Templating: anyMap(f('Templating'), 'swarm.Driver'),
    }),
  );
}
export type ObjectSpecInput = z.output<ReturnType<typeof objectSpecSchema>>;

/** Go's base64 (StdEncoding) of a []byte field: the data, or the decoder's "illegal base64 data at input byte N". */
export function decodeBase64(v: string): Buffer {
  const s = v.replace(/[\r\n]/g, '');
  const bad = s.search(/[^A-Za-z0-9+/=]/);
  const pad = s.indexOf('=');
  if (bad >= 0 && (pad < 0 || bad < pad)) throw invalidArgument(`illegal base64 data at input byte ${bad}`);
  if (s.length % 4 !== 0) throw invalidArgument(`illegal base64 data at input byte ${s.length - (s.length % 4)}`);
  if (pad >= 0 && !/^=*$/.test(s.slice(pad))) throw invalidArgument(`illegal base64 data at input byte ${pad}`);
  return Buffer.from(s, 'base64');
}

/** A body as the routes read it (Go's decoder's refusals). */
export function parseObjectSpec(kind: ObjectKind, raw: unknown): ObjectSpecInput {
  const r = objectSpecSchema(kind).safeParse(raw);
  if (!r.success) throw invalidArgument(r.error.issues[0]?.message ?? 'malformed body');
  return r.data;
}

export interface ObjectSpec {
  Name: string;
  Labels: Record<string, string>;
  /** A config's data, base64 (a secret's is sealed beside the record, never in its spec). */
  Data?: string;
  Driver?: Record<string, unknown>;
  Templating?: Record<string, unknown>;
}

export interface StoredObject {
  ID: string;
  CreatedAt: string;
  UpdatedAt: string;
  Spec: ObjectSpec;
  /** A secret's data, sealed under the swarm's data key. */
  Sealed?: string;
}

/** The data of a spec, decoded; swarmkit's refusals of a name or a size. */
export function checkObjectSpec(kind: ObjectKind, raw: unknown): { spec: ObjectSpec; data: Buffer } {
  // As swarmkit checks it: the body decoded (its base64 too), the name present, its pattern, the size.
  const s = parseObjectSpec(kind, raw);
  const data = decodeBase64(s.Data ?? '');
  const name = s.Name ?? '';
  if (!name) throw invalidArgument(rpc('name must be provided'));
  if (name.length > 64 || !NAME.test(name)) throw invalidArgument(rpc('invalid name, only 64 [a-zA-Z0-9-_.] characters allowed, and the start and end character must be [a-zA-Z0-9]'));
  if (data.length < 1 || data.length >= MAX_SIZE[kind]) throw invalidArgument(rpc(`${kind} data must be larger than 0 and less than ${MAX_SIZE[kind]} bytes`));
  const spec: ObjectSpec = { Name: name, Labels: s.Labels ?? {} };
  if (kind === 'config') spec.Data = data.toString('base64');
  if (kind === 'secret' && s.Driver) spec.Driver = s.Driver;
  if (s.Templating) spec.Templating = s.Templating;
  return { spec, data };
}

/** The object as GET shows it (a secret without its data). */
export function objectView(o: StoredObject, version: number): Record<string, unknown> {
  const { Data, ...rest } = o.Spec;
  return { ID: o.ID, Version: { Index: version }, CreatedAt: o.CreatedAt, UpdatedAt: o.UpdatedAt, Spec: Data === undefined ? rest : { ...rest, Data } };
}

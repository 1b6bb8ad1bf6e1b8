// A swarm's secrets and configs in its etcd (managers only; lib/swarm/swarm-object.ts has the shape):
// `/engine/swarm/<kind>s/<id>` the record (Version.Index its mod revision), `/engine/swarm/<kind>-names/
// <name>` the id a name belongs to (taken once, in the create's transaction). A secret's data is
// sealed under the swarm's data key before it is written (lib/swarm/seal.ts) and never shown; a
// config's is kept in its spec and shown, as the reference. Only labels change by an update; one a
// service uses is not removed (the reference's words).
import type { Etcd3 } from 'etcd3';
import { alreadyExists, internal, invalidArgument, notFound, unavailable } from '../../lib/errors.ts';
import { rfc3339Nano } from '../../lib/ids.ts';
import { newSwarmId } from '../../lib/swarm/ids.ts';
import { lookup } from '../../lib/swarm/lookup.ts';
import { open, seal } from '../../lib/swarm/seal.ts';
import { checkObjectSpec, decodeBase64, objectNamesPrefix, objectsPrefix, parseObjectSpec, type ObjectKind, type StoredObject } from '../../lib/swarm/swarm-object.ts';
import type { SwarmObjectsPort, VersionedObject } from '../../api/secrets/port.ts';

const OUT_OF_SEQUENCE = 'rpc error: code = Unknown desc = update out of sequence';
const rpc = (msg: string) => `rpc error: code = InvalidArgument desc = ${msg}`;

export interface SecretStoreDeps {
  etcd: () => Etcd3;
  /** The swarm's data key (a manager's; undefined: this node holds none). */
  dataKey: () => Promise<string | undefined>;
  /** The services using each object: service names by object id. */
  usedBy: (kind: ObjectKind) => Promise<Map<string, string[]>>;
}

export class SecretStore implements SwarmObjectsPort {
  readonly kind: ObjectKind;
  private readonly d: SecretStoreDeps;

  constructor(kind: ObjectKind, d: SecretStoreDeps) {
    this.kind = kind;
    this.d = d;
  }

  private key(id: string): string {
    return `${objectsPrefix(this.kind)}${id}`;
  }

  /** Names are taken case-insensitively, as swarmkit takes them. */
  private nameKey(name: string): string {
    return `${objectNamesPrefix(this.kind)}${name.toLowerCase()}`;
  }

  async list(): Promise<VersionedObject[]> {
    const r = await this.d.etcd().getAll().prefix(objectsPrefix(this.kind)).exec();
    return r.kvs.map((kv) => ({ object: JSON.parse(kv.value.toString()) as StoredObject, version: Number(kv.mod_revision) })).sort((a, b) => (a.object.ID < b.object.ID ? -1 : 1));
  }

  /** By full id, then exact name (any case), then unique id prefix, as the reference finds them. */
  async find(ref: string): Promise<VersionedObject> {
    const all = await this.list();
    const byName = all.find((x) => x.object.Spec.Name.toLowerCase() === ref.toLowerCase());
    const exact = all.find((x) => x.object.ID === ref) ?? byName;
    if (exact) return exact;
    return lookup(all, ref, {
      id: (x) => x.object.ID,
      notFound: (r) => notFound(`${this.kind} ${r} not found`),
      ambiguous: (r, n) => invalidArgument(`${this.kind} ${r} is ambiguous (${n} matches found)`),
    });
  }

  async create(raw: unknown): Promise<string> {
    const { spec, data } = checkObjectSpec(this.kind, raw);
    const driver = (spec.Driver as { Name?: string } | undefined)?.Name;
    if (driver) throw internal(`rpc error: code = Unknown desc = plugin "${driver}" not found`);
    const now = rfc3339Nano();
    const o: StoredObject = { ID: newSwarmId(), CreatedAt: now, UpdatedAt: now, Spec: spec };
    if (this.kind === 'secret') o.Sealed = seal(await this.requireKey(), data, this.aad(o.ID));
    const etcd = this.d.etcd();
    const r = await etcd
      .if(this.nameKey(spec.Name), 'Create', '==', 0)
      .then(etcd.put(this.nameKey(spec.Name)).value(o.ID), etcd.put(this.key(o.ID)).value(JSON.stringify(o)))
      .commit();
    if (!r.succeeded) throw alreadyExists(`rpc error: code = AlreadyExists desc = ${this.kind} ${spec.Name} already exists`);
    return o.ID;
  }

  async update(ref: string, version: bigint, raw: unknown): Promise<void> {
    const s = parseObjectSpec(this.kind, raw);
    const data = s.Data ? decodeBase64(s.Data) : undefined;
    const cur = await this.find(ref);
    // Only the labels change: the same name, and no data or the same data.
    const sameData = !data || data.equals(await this.data(cur.object.ID));
    if ((s.Name ?? '') !== cur.object.Spec.Name || !sameData) throw invalidArgument(rpc('only updates to Labels are allowed'));
    if (BigInt(cur.version) !== version) throw internal(OUT_OF_SEQUENCE);
    const next: StoredObject = { ...cur.object, UpdatedAt: rfc3339Nano(), Spec: { ...cur.object.Spec, Labels: s.Labels ?? {} } };
    const etcd = this.d.etcd();
    const r = await etcd.if(this.key(cur.object.ID), 'Mod', '==', String(version)).then(etcd.put(this.key(cur.object.ID)).value(JSON.stringify(next))).commit();
    if (!r.succeeded) throw internal(OUT_OF_SEQUENCE);
  }

  async remove(ref: string): Promise<void> {
    const cur = await this.find(ref);
    const users = (await this.d.usedBy(this.kind)).get(cur.object.ID) ?? [];
    if (users.length) throw invalidArgument(rpc(`${this.kind} '${cur.object.Spec.Name}' is in use by the following service${users.length > 1 ? 's' : ''}: ${users.join(', ')}`));
    const etcd = this.d.etcd();
    await etcd.if(this.key(cur.object.ID), 'Create', '!=', 0).then(etcd.delete().key(this.key(cur.object.ID)), etcd.delete().key(this.nameKey(cur.object.Spec.Name))).commit();
  }

  /** An object's data (a secret's opened with the data key): what a node running a task that uses it is given. */
  async data(id: string): Promise<Buffer> {
    const raw = await this.d.etcd().get(this.key(id)).string();
    if (!raw) throw notFound(`${this.kind} ${id} not found`);
    const o = JSON.parse(raw) as StoredObject;
    if (this.kind === 'config') return Buffer.from(o.Spec.Data ?? '', 'base64');
    return open(await this.requireKey(), o.Sealed ?? '', this.aad(o.ID));
  }

  private aad(id: string): string {
    return `${this.kind}/${id}`;
  }

  private async requireKey(): Promise<string> {
    const k = await this.d.dataKey();
    if (!k) throw unavailable('this manager holds no data key of the swarm: secrets cannot be sealed or opened here');
    return k;
  }
}

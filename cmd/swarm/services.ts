// A swarm's services in its etcd (managers only): `/engine/swarm/services/<id>` holds the record
// (its spec, the previous one, when made and updated; Version.Index is the key's mod revision) and
// `/engine/swarm/service-names/<name>` the id a name belongs to, so a name is taken once, by an etcd
// transaction. An update names the version it read (a stale one is the reference's "update out of
// sequence"); a rename is refused as the reference does. The specs are checked by
// lib/swarm/service-spec.ts before anything is written.
import type { Etcd3 } from 'etcd3';
import { generateName } from '../../admission/containers/names.ts';
import { alreadyExists, failedPrecondition, internal, invalidArgument, notFound, notImplemented } from '../../lib/errors.ts';
import { checkObjectRefs, jobOf, modeName, registryAuthOf, serviceSpecOf, withRegistryAuth, type ObjectRef, type ServiceSpec } from '../../lib/swarm/service-spec.ts';
import type { SwarmNetworkRecord } from '../../lib/swarm/network.ts';
import { releaseVips, takeVips } from './vips.ts';
import { endpointPorts } from './ingress-ports.ts';
import { TASKS_PREFIX, type TaskRecord } from '../../lib/swarm/task.ts';
import type { ServiceRecord, ServicesPort } from '../../api/services/port.ts';
import type { LogEntry, LogReadOptions } from '../../lib/ports/logs.ts';
import { SERVICE_NAMES_PREFIX, SERVICES_PREFIX } from '../../lib/swarm/keys.ts';
import { newSwarmId } from '../../lib/swarm/ids.ts';
import { lookup } from '../../lib/swarm/lookup.ts';

const key = (id: string) => `${SERVICES_PREFIX}${id}`;
const nameKey = (name: string) => `${SERVICE_NAMES_PREFIX}${name}`;
const OUT_OF_SEQUENCE = 'rpc error: code = Unknown desc = update out of sequence';

type Stored = Omit<ServiceRecord, 'version'>;

export class SwarmServices implements ServicesPort {
  private readonly etcd: () => Etcd3;
  private readonly taskLogs: ServicesPort['logs'] | undefined;

  private readonly networkRefs: () => Promise<readonly SwarmNetworkRecord[]>;

  /** The swarm's secrets and configs a spec may name (id and name). */
  private readonly objectRefs: () => Promise<{ secrets: ObjectRef[]; configs: ObjectRef[] }>;

  constructor(
    etcd: () => Etcd3,
    taskLogs?: ServicesPort['logs'],
    networkRefs: () => Promise<readonly SwarmNetworkRecord[]> = async () => [],
    objectRefs: () => Promise<{ secrets: ObjectRef[]; configs: ObjectRef[] }> = async () => ({ secrets: [], configs: [] }),
  ) {
    this.etcd = etcd;
    this.taskLogs = taskLogs;
    this.networkRefs = networkRefs;
    this.objectRefs = objectRefs;
  }

  logs(t: TaskRecord, o: LogReadOptions, signal: AbortSignal): AsyncIterable<LogEntry> {
    if (!this.taskLogs) throw notImplemented('this daemon reads no swarm task logs');
    return this.taskLogs(t, o, signal);
  }

  async list(): Promise<ServiceRecord[]> {
    const r = await this.etcd().getAll().prefix(SERVICES_PREFIX).exec();
    return r.kvs.map((kv) => ({ ...(JSON.parse(kv.value.toString()) as Stored), version: Number(kv.mod_revision) })).sort((a, b) => (a.ID < b.ID ? -1 : a.ID > b.ID ? 1 : 0));
  }

  async tasks(): Promise<Array<{ task: TaskRecord; version: number }>> {
    const r = await this.etcd().getAll().prefix(TASKS_PREFIX).exec();
    return r.kvs.map((kv) => ({ task: JSON.parse(kv.value.toString()) as TaskRecord, version: Number(kv.mod_revision) }));
  }

  async find(ref: string): Promise<ServiceRecord> {
    return lookup(await this.list(), ref, { id: (s) => s.ID, names: [(s) => s.Spec.Name], notFound: (r) => notFound(`service ${r} not found`), ambiguous: (r, n) => invalidArgument(`service ${r} is ambiguous (${n} matches found)`) });
  }

  async create(raw: unknown, auth?: string): Promise<string> {
    const taken = new Set((await this.list()).map((s) => s.Spec.Name));
    const networks = await this.networkRefs();
    const spec = withRegistryAuth(serviceSpecOf(raw, () => generateName((n) => taken.has(n.slice(1)), newSwarmId().slice(0, 12)).slice(1), { networks }), auth);
    const now = new Date().toISOString();
    checkObjectRefs(spec, await this.objectRefs());
    const rec: Stored = { ID: newSwarmId(), CreatedAt: now, UpdatedAt: now, Spec: spec, ...(jobOf(spec) ? { JobStatus: { JobIteration: { Index: 0 }, LastExecution: now } } : {}) };
    const etcd = this.etcd();
    if (taken.has(spec.Name)) throw alreadyExists(`rpc error: code = AlreadyExists desc = name conflicts with an existing object: service ${spec.Name} already exists`);
    const ports = endpointPorts(spec, await this.list());
    if (ports.length) rec.EndpointPorts = ports;
    const { vips } = await takeVips(etcd, { ID: rec.ID, Name: spec.Name }, spec, [], networks, ports);
    if (vips.length) rec.VirtualIPs = vips;
    const r = await etcd
      .if(nameKey(spec.Name), 'Create', '==', 0)
      .then(etcd.put(nameKey(spec.Name)).value(rec.ID), etcd.put(key(rec.ID)).value(JSON.stringify(rec)))
      .commit();
    if (!r.succeeded) await releaseVips(etcd, vips);
    if (!r.succeeded) throw alreadyExists(`rpc error: code = AlreadyExists desc = name conflicts with an existing object: service ${spec.Name} already exists`);
    return rec.ID;
  }

  async update(ref: string, version: bigint, raw: unknown, o: { auth?: string; from?: 'spec' | 'previous-spec'; rollback?: boolean } = {}): Promise<void> {
    const cur = await this.find(ref);
    // A rollback takes the previous spec as it is (the body is not read, as the reference).
    const networks = await this.networkRefs();
    const spec: ServiceSpec | undefined = o.rollback ? undefined : withRegistryAuth(serviceSpecOf(raw, () => cur.Spec.Name, { networks }), o.auth ?? registryAuthOf(o.from === 'previous-spec' ? cur.PreviousSpec : cur.Spec));
    if (spec && spec.Name !== cur.Spec.Name) throw notImplemented('rpc error: code = Unimplemented desc = renaming services is not supported');
    if (spec && modeName(spec) !== modeName(cur.Spec)) throw notImplemented('rpc error: code = Unimplemented desc = service mode change is not allowed');
    if (spec) checkObjectRefs(spec, await this.objectRefs());
    if (BigInt(cur.version) !== version) throw internal(OUT_OF_SEQUENCE);
    const { version: _v, UpdateStatus: _u, ...stored } = cur;
    const now = new Date().toISOString();
    let next: Stored;
    if (!spec) {
      // As swarmkit: the previous spec and the current one swap; the rollback is under way.
      if (!cur.PreviousSpec) throw failedPrecondition(`rpc error: code = FailedPrecondition desc = service ${cur.ID} does not have a previous spec`);
      next = { ...stored, UpdatedAt: now, Spec: cur.PreviousSpec, PreviousSpec: cur.Spec, UpdateStatus: { State: 'rollback_started', StartedAt: now, Message: 'manually requested rollback' } };
    } else {
      // A new spec: its update has not started (the orchestrator starts it if tasks need replacing).
      next = { ...stored, UpdatedAt: now, Spec: spec, PreviousSpec: cur.Spec };
    }
    // A job runs again with each change of its spec (its next iteration).
    if (jobOf(next.Spec)) next.JobStatus = { JobIteration: { Index: (cur.JobStatus?.JobIteration.Index ?? 0) + 1 }, LastExecution: now };
    const etcd = this.etcd();
    const ports = endpointPorts(next.Spec, (await this.list()).filter((x) => x.ID !== cur.ID), cur.EndpointPorts);
    if (ports.length) next.EndpointPorts = ports;
    else delete next.EndpointPorts;
    const { vips, drop } = await takeVips(etcd, { ID: cur.ID, Name: next.Spec.Name }, next.Spec, cur.VirtualIPs ?? [], networks, ports);
    if (vips.length) next.VirtualIPs = vips;
    else delete next.VirtualIPs;
    const r = await etcd.if(key(cur.ID), 'Mod', '==', String(version)).then(etcd.put(key(cur.ID)).value(JSON.stringify(next))).commit();
    const added = vips.filter((v) => !(cur.VirtualIPs ?? []).includes(v));
    await releaseVips(etcd, r.succeeded ? drop : added);
    if (!r.succeeded) throw internal(OUT_OF_SEQUENCE);
  }

  async remove(ref: string): Promise<void> {
    const cur = await this.find(ref);
    const etcd = this.etcd();
    const r = await etcd.if(key(cur.ID), 'Create', '!=', 0).then(etcd.delete().key(key(cur.ID)), etcd.delete().key(nameKey(cur.Spec.Name))).commit();
    if (r.succeeded) await releaseVips(etcd, cur.VirtualIPs ?? []);
  }
}

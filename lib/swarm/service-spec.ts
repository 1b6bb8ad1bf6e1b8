// A swarm service's spec (moby's api/types/swarm ServiceSpec) as dockerd 20.10 takes it: checked
// with swarmkit's refusals in its words (docs/reference-services.md §2–3), stored with what the
// reference fills in (Labels {}, Mode Replicated 1, Isolation "default", ForceUpdate 0, Runtime
// "container", a port's protocol tcp unless udp or sctp), and shown with `insertDefaults` as it
// shows it. Ingress-mode ports are (8 of 21)'s: refused until then.
import * as z from 'zod';
import { invalidArgument, internal, notImplemented } from '../errors.ts';

const strMap = z.record(z.string(), z.string());

export const PortConfig = z.looseObject({
  Name: z.string().optional(),
  Protocol: z.string().optional(),
  TargetPort: z.number().int().min(0).max(65535).optional(),
  PublishedPort: z.number().int().min(0).optional(),
  PublishMode: z.string().optional(),
});
export type PortConfig = z.output<typeof PortConfig>;

const NetworkAttachment = z.looseObject({ Target: z.string(), Aliases: z.array(z.string()).nullish(), DriverOpts: strMap.nullish() });

/** The spec as a client sends it: the parts this daemon reads are typed, the rest kept as sent. */
export const ServiceSpecInput = z.looseObject({
  Name: z.string().optional(),
  Labels: strMap.nullish(),
  TaskTemplate: z
    .looseObject({
      ContainerSpec: z.looseObject({ Image: z.string().optional() }).nullish(),
      Resources: z.looseObject({}).nullish(),
      RestartPolicy: z.looseObject({ Condition: z.string().optional(), Delay: z.number().nullish(), MaxAttempts: z.number().nullish(), Window: z.number().nullish() }).nullish(),
      Placement: z.looseObject({ Constraints: z.array(z.string()).nullish() }).nullish(),
      Networks: z.array(NetworkAttachment).nullish(),
      ForceUpdate: z.number().int().nullish(),
      Runtime: z.string().optional(),
    })
    .nullish(),
  Mode: z
    .looseObject({
      Replicated: z.looseObject({ Replicas: z.unknown().optional() }).nullish(),
      Global: z.looseObject({}).nullish(),
      ReplicatedJob: z.looseObject({ MaxConcurrent: z.unknown().optional(), TotalCompletions: z.unknown().optional() }).nullish(),
      GlobalJob: z.looseObject({}).nullish(),
    })
    .nullish(),
  UpdateConfig: z.looseObject({}).nullish(),
  RollbackConfig: z.looseObject({}).nullish(),
  Networks: z.array(NetworkAttachment).nullish(),
  EndpointSpec: z.looseObject({ Mode: z.string().optional(), Ports: z.array(PortConfig).nullish() }).nullish(),
});
export type ServiceSpecInput = z.input<typeof ServiceSpecInput>;

export interface ServiceSpec {
  Name: string;
  Labels: Record<string, string>;
  TaskTemplate: Record<string, unknown> & {
    ContainerSpec: Record<string, unknown> & { Image: string };
    Placement?: { Constraints?: string[] | null } & Record<string, unknown>;
    ForceUpdate: number;
    Runtime: string;
  };
  Mode: { Replicated: { Replicas: number } } | { Global: Record<string, never> } | { ReplicatedJob: { MaxConcurrent?: number; TotalCompletions?: number } } | { GlobalJob: Record<string, never> };
  UpdateConfig?: Record<string, unknown>;
  RollbackConfig?: Record<string, unknown>;
  EndpointSpec?: { Mode?: string; Ports?: PortConfig[] };
  [k: string]: unknown;
}

/** `o` without its null members (Go decodes a JSON null as the zero value, which the reference omits). */
function withoutNulls<T extends object>(o: T): { [K in keyof T]: Exclude<T[K], null> } {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== null)) as { [K in keyof T]: Exclude<T[K], null> };
}

const rpc = (code: string, desc: string) => `rpc error: code = ${code} desc = ${desc}`;
const DNS_NAME = /^[a-zA-Z0-9](?:[-_]*[A-Za-z0-9]+)*$/;
const RESTART_CONDITIONS = new Set(['none', 'on-failure', 'any']);
const PROTOCOLS = new Set(['tcp', 'udp', 'sctp']);

/** swarmkit's constraint syntax: KEY==VALUE or KEY!=VALUE (the reference answers 500 for another). */
export function parseConstraint(c: string): { key: string; op: '==' | '!='; value: string } {
  const m = /^\s*([^=!\s]+)\s*(==|!=)\s*(.*?)\s*$/.exec(c);
  if (!m || !m[3]) throw internal(rpc('Unknown', 'constraint expected one operator from ==, !='));
  return { key: m[1]!, op: m[2] as '==' | '!=', value: m[3] };
}

/** `o`'s member named `name` in any case (Go's JSON decoding matches field names so). */
function member(o: Record<string, unknown>, name: string): unknown {
  const k = Object.keys(o).find((x) => x.toLowerCase() === name.toLowerCase());
  return k === undefined ? undefined : o[k];
}

/** The Mode as Go decodes it: `{"replicated": {"replicas": 3}}` (docker-py's) is Replicated with 3. */
function canonicalMode(raw: unknown): unknown {
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) return raw;
  const mode = member(raw as Record<string, unknown>, 'Mode');
  if (!mode || typeof mode !== 'object' || Array.isArray(mode)) return raw;
  const m = mode as Record<string, unknown>;
  const rep = member(m, 'Replicated');
  const glob = member(m, 'Global');
  const repJob = member(m, 'ReplicatedJob');
  const globJob = member(m, 'GlobalJob');
  const { Mode: _m, mode: _lower, ...rest } = raw as Record<string, unknown>;
  return {
    ...rest,
    Mode: {
      ...(rep !== undefined ? { Replicated: rep && typeof rep === 'object' ? { Replicas: member(rep as Record<string, unknown>, 'Replicas') } : rep } : {}),
      ...(glob !== undefined ? { Global: glob } : {}),
      ...(repJob !== undefined ? { ReplicatedJob: repJob && typeof repJob === 'object' ? { MaxConcurrent: member(repJob as Record<string, unknown>, 'MaxConcurrent'), TotalCompletions: member(repJob as Record<string, unknown>, 'TotalCompletions') } : repJob } : {}),
      ...(globJob !== undefined ? { GlobalJob: globJob } : {}),
    },
  };
}

/** The replicas a Replicated mode asks for, as Go decodes a uint64 (the reference's 400 for another number). */
function replicas(v: unknown, field = 'ReplicatedService.Mode.Replicated.Replicas', dflt = 1): number {
  if (v === undefined || v === null) return dflt;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > Number.MAX_SAFE_INTEGER) {
    throw invalidArgument(`json: cannot unmarshal ${typeof v === 'number' ? `number ${v}` : typeof v} into Go struct field ${field} of type uint64`);
  }
  return v;
}

/** The Mode stored: one of replicated (Replicas, 1 by default), global, replicated-job, global-job. */
function modeOf(m: ServiceSpecInput['Mode']): ServiceSpec['Mode'] {
  const given = m ? (['Replicated', 'Global', 'ReplicatedJob', 'GlobalJob'] as const).filter((k) => m[k]) : [];
  if (given.length > 1) throw invalidArgument('must specify only one service mode');
  if (m?.Global) return { Global: {} };
  if (m?.GlobalJob) return { GlobalJob: {} };
  if (m?.ReplicatedJob) {
    const j = m.ReplicatedJob;
    const max = replicas(j.MaxConcurrent, 'ReplicatedJob.Mode.ReplicatedJob.MaxConcurrent', 1);
    return { ReplicatedJob: { MaxConcurrent: max, TotalCompletions: replicas(j.TotalCompletions, 'ReplicatedJob.Mode.ReplicatedJob.TotalCompletions', max) } };
  }
  return { Replicated: { Replicas: replicas(m?.Replicated?.Replicas) } };
}

/** A job's mode: how many complete at most at once and in all (a global job: one per eligible node). */
export type JobMode = { kind: 'replicated'; maxConcurrent: number; total: number } | { kind: 'global' };

export function jobOf(spec: Pick<ServiceSpec, 'Mode'>): JobMode | undefined {
  const m = spec.Mode as Record<string, { MaxConcurrent?: number; TotalCompletions?: number } | undefined>;
  if (m['GlobalJob']) return { kind: 'global' };
  const j = m['ReplicatedJob'];
  if (!j) return undefined;
  const max = j.MaxConcurrent ?? 1;
  return { kind: 'replicated', maxConcurrent: max, total: j.TotalCompletions ?? max };
}

/** A service's mode as the reference names it (replicated, global, replicated-job, global-job). */
export function modeName(spec: Pick<ServiceSpec, 'Mode'>): string {
  const m = spec.Mode;
  return 'Global' in m ? 'global' : 'GlobalJob' in m ? 'global-job' : 'ReplicatedJob' in m ? 'replicated-job' : 'replicated';
}

/**
 * The spec checked and filled in as the reference stores it; `name` is the one to use when the
 * client gave none. A spec the reference refuses throws its error (nothing is written).
 */
/** A swarm network as a service's spec names it. */
export interface NetworkRef {
  ID: string;
  Name: string;
  Ingress: boolean;
}

function uniquePrefix(known: readonly NetworkRef[], ref: string): NetworkRef | undefined {
  const m = ref ? known.filter((k) => k.ID.startsWith(ref)) : [];
  return m.length === 1 ? m[0] : undefined;
}

export function serviceSpecOf(raw: unknown, name: () => string, opts: { networks?: readonly NetworkRef[] } = {}): ServiceSpec {
  const parsed = ServiceSpecInput.safeParse(canonicalMode(raw ?? {}));
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw invalidArgument(`json: cannot unmarshal ${issue?.path.join('.') || 'body'}: ${issue?.message ?? 'malformed'}`);
  }
  const input = parsed.data;
  const Name = input.Name || name();
  if (!DNS_NAME.test(Name)) throw invalidArgument(rpc('InvalidArgument', 'name must be valid as a DNS name component'));
  if (Name.length > 63) throw invalidArgument(rpc('InvalidArgument', 'name must be 63 characters or fewer'));
  const Mode = modeOf(input.Mode);
  if (jobOf({ Mode }) && input.UpdateConfig) throw invalidArgument(rpc('InvalidArgument', 'Jobs may not have an update config'));
  const tt = input.TaskTemplate ?? {};
  const cond = tt.RestartPolicy?.Condition;
  if (cond && !RESTART_CONDITIONS.has(cond)) throw invalidArgument(`invalid RestartCondition: ${JSON.stringify(cond)}`);
  const ep = input.EndpointSpec;
  if (ep?.Mode && ep.Mode !== 'vip' && ep.Mode !== 'dnsrr') throw invalidArgument(`invalid resolution mode: ${JSON.stringify(ep.Mode)}`);
  const image = tt.ContainerSpec?.Image;
  if (!image) throw invalidArgument(rpc('InvalidArgument', 'ContainerSpec: image reference must be provided'));
  for (const c of tt.Placement?.Constraints ?? []) parseConstraint(c);
  const ports = (ep?.Ports ?? []).map((p) => ({ ...p, Protocol: PROTOCOLS.has((p.Protocol ?? '').toLowerCase()) ? p.Protocol!.toLowerCase() : 'tcp', PublishMode: p.PublishMode || 'ingress' }));
  const seen = new Set<string>();
  for (const p of ports) {
    if (!p.PublishedPort) continue;
    const k = `${p.PublishedPort}/${p.Protocol}/${p.PublishMode}`;
    if (seen.has(k)) throw invalidArgument(rpc('InvalidArgument', 'EndpointSpec: duplicate published ports provided'));
    seen.add(k);
  }
  if (ep?.Mode === 'dnsrr' && ports.some((p) => p.PublishMode === 'ingress')) throw invalidArgument(rpc('InvalidArgument', "EndpointSpec: port published with ingress mode can't be used with dnsrr mode"));
  // Each target resolved to the swarm network's id (full id, full name, id prefix), as the
  // reference stores it; one that is no overlay network of the swarm is unknown (its 500); the
  // deprecated top-level Networks join the TaskTemplate's.
  const known = opts.networks ?? [];
  const networks = [...(tt.Networks ?? []), ...(input.Networks ?? [])].map((n) => {
    const net = known.find((k) => k.ID === n.Target) ?? known.find((k) => k.Name === n.Target) ?? uniquePrefix(known, n.Target);
    if (!net) throw internal(`network ${n.Target} not found`);
    if (net.Ingress) throw invalidArgument(rpc('InvalidArgument', `Service cannot be explicitly attached to the ingress network "${net.Name}"`));
    return { ...withoutNulls(n), Target: net.ID };
  });
  const { Runtime: _runtime, ForceUpdate, ...restTt } = withoutNulls(tt);
  const { Networks: _networks, EndpointSpec: _ep, ...rest } = withoutNulls(input);
  const spec: ServiceSpec = {
    ...rest,
    Name,
    Labels: input.Labels ?? {},
    TaskTemplate: {
      ...restTt,
      ContainerSpec: { ...withoutPullOptions(tt.ContainerSpec ?? {}), Image: image, Isolation: (tt.ContainerSpec?.Isolation as string | undefined) || 'default' },
      ...(networks.length ? { Networks: networks } : {}),
      ForceUpdate: ForceUpdate ?? 0,
      Runtime: 'container',
    },
    Mode,
  };
  if (ep) {
    const { Ports: _ports, ...epRest } = withoutNulls(ep);
    spec.EndpointSpec = { ...epRest, ...(ep.Ports ? { Ports: ports } : {}) };
  }
  return spec;
}

/**
 * The registry credentials a service's tasks pull with: the X-Registry-Auth the client sent
 * (`--with-registry-auth`), kept where moby keeps it, in ContainerSpec.PullOptions.RegistryAuth; a
 * client never sets it in a spec and never sees it (the views take it out).
 */
export function registryAuthOf(spec: Pick<ServiceSpec, 'TaskTemplate'> | undefined): string | undefined {
  const po = (spec?.TaskTemplate.ContainerSpec['PullOptions'] ?? undefined) as { RegistryAuth?: string } | undefined;
  return po?.RegistryAuth || undefined;
}

export function withRegistryAuth(spec: ServiceSpec, auth: string | undefined): ServiceSpec {
  const cs = withoutPullOptions(spec.TaskTemplate.ContainerSpec);
  return { ...spec, TaskTemplate: { ...spec.TaskTemplate, ContainerSpec: auth ? { ...cs, PullOptions: { RegistryAuth: auth } } : cs } };
}

export function withoutPullOptions<T extends Record<string, unknown>>(cs: T): T {
  const { PullOptions: _po, ...rest } = cs;
  return rest as T;
}

/** A task template as shown (GET /tasks, a service's Spec): without the pull credentials. */
export function shownTaskSpec(tt: Record<string, unknown>): Record<string, unknown> {
  const cs = tt['ContainerSpec'];
  return cs && typeof cs === 'object' && 'PullOptions' in cs ? { ...tt, ContainerSpec: withoutPullOptions(cs as Record<string, unknown>) } : tt;
}

const UPDATE_DEFAULTS = { Parallelism: 1, FailureAction: 'pause', Monitor: 5_000_000_000, MaxFailureRatio: 0, Order: 'stop-first' };

/** The spec as `GET /services/{id}?insertDefaults=true` shows it (swarmkit's defaults filled in). */
export function withDefaults(spec: ServiceSpec): ServiceSpec {
  const tt = spec.TaskTemplate;
  const cs = tt.ContainerSpec;
  return {
    ...spec,
    TaskTemplate: {
      ...tt,
      ContainerSpec: { ...cs, StopGracePeriod: cs['StopGracePeriod'] ?? 10_000_000_000, DNSConfig: cs['DNSConfig'] ?? {} },
      Resources: tt['Resources'] ?? {},
      RestartPolicy: { Condition: 'any', Delay: 5_000_000_000, MaxAttempts: 0, ...(tt['RestartPolicy'] as object | undefined) },
      Placement: tt.Placement ?? {},
    },
    UpdateConfig: { ...UPDATE_DEFAULTS, ...spec.UpdateConfig },
    RollbackConfig: { ...UPDATE_DEFAULTS, ...spec.RollbackConfig },
  };
}

/** The number of tasks a replicated service asks for (undefined for a global one). */
export function replicasOf(spec: ServiceSpec): number | undefined {
  return 'Replicated' in spec.Mode ? spec.Mode.Replicated.Replicas : undefined;
}

/** The services using each secret (or config), by its id: their names. */
export function usersOf(services: ReadonlyArray<{ Spec: Pick<ServiceSpec, 'Name' | 'TaskTemplate'> }>, kind: 'secret' | 'config'): Map<string, string[]> {
  const out = new Map<string, string[]>();
  const [list, idKey] = kind === 'secret' ? ['Secrets', 'SecretID'] : ['Configs', 'ConfigID'];
  for (const s of services) {
    const refs = (s.Spec.TaskTemplate.ContainerSpec[list] as Array<Record<string, unknown>> | undefined) ?? [];
    for (const r of refs) {
      const id = String(r[idKey] ?? '');
      if (!id) continue;
      const names = out.get(id) ?? [];
      if (!names.includes(s.Spec.Name)) names.push(s.Spec.Name);
      out.set(id, names);
    }
  }
  return out;
}

/** A secret or config as a service's spec names it. */
export interface ObjectRef {
  ID: string;
  Name: string;
}

/**
 * A spec's secret and config references checked as swarmkit checks them: each with an id, a name
 * and a target, no two at one target, each naming an existing one by id and name.
 */
export function checkObjectRefs(spec: ServiceSpec, known: { secrets: readonly ObjectRef[]; configs: readonly ObjectRef[] }): void {
  const cs = spec.TaskTemplate.ContainerSpec;
  for (const kind of ['secret', 'config'] as const) {
    const [list, idKey, nameKey] = kind === 'secret' ? ['Secrets', 'SecretID', 'SecretName'] : ['Configs', 'ConfigID', 'ConfigName'];
    const refs = (cs[list] as Array<Record<string, unknown>> | undefined) ?? [];
    const targets = new Map<string, string>();
    for (const r of refs) {
      const name = String(r[nameKey] ?? '');
      if (!r[idKey] || !name) throw invalidArgument(rpc('InvalidArgument', `malformed ${kind} reference`));
      const file = r['File'] as { Name?: string } | undefined;
      if (!file) {
        if (kind === 'config' && r['Runtime']) continue;
        throw invalidArgument(rpc('InvalidArgument', `malformed ${kind} reference, no target provided`));
      }
      const target = String(file.Name ?? '');
      const other = targets.get(target);
      if (other !== undefined) throw invalidArgument(rpc('InvalidArgument', `${kind} references '${other}' and '${name}' have a conflicting target: '${target}'`));
      targets.set(target, name);
    }
    const have = kind === 'secret' ? known.secrets : known.configs;
    const missing = refs.filter((r) => !have.some((h) => h.ID === r[idKey] && h.Name === r[nameKey])).map((r) => String(r[nameKey]));
    if (missing.length) throw invalidArgument(rpc('InvalidArgument', `${kind} not found: ${missing.join(', ')}`));
  }
}

// The shape of a container create body, checked as the reference daemon's JSON decoder checks it:
// keys matched case-insensitively, unknown keys kept (Go ignores them), null wherever Go takes
// null, and a value of the wrong type refused with the decoder's own message. What the values
// mean (restart rules, modes, resources) is create-request.ts's business.
import { z } from 'zod';
import { invalidArgument } from '../../lib/errors.ts';

/** The JSON type Go names in an unmarshal error; a number a Go integer cannot hold is quoted, as Go quotes it. */
function jsonType(v: unknown, integer: boolean): string {
  if (typeof v === 'number') return integer ? `number ${v}` : 'number';
  if (typeof v === 'boolean') return 'bool';
  if (Array.isArray(v)) return 'array';
  return typeof v === 'object' ? 'object' : typeof v;
}

/**
 * Go's UnmarshalTypeError text: `struct` is the innermost Go struct holding the field, `path` the
 * JSON path from the body's top (Go's field stack), `goType` the field's Go type.
 */
const unmarshal = (struct: string, path: string, goType: string, integer = false) => (iss: { input?: unknown }) =>
  `json: cannot unmarshal ${jsonType(iss.input, integer)} into Go struct field ${struct}.${path} of type ${goType}`;

/** Where a field sits: the Go struct that holds it and its JSON path from the top. */
interface At {
  struct: string;
  path: string;
}
const at = (struct: string, prefix: string) => (name: string): At => ({ struct, path: prefix ? `${prefix}.${name}` : name });

const str = (f: At, goType = 'string') => z.string({ error: unmarshal(f.struct, f.path, goType) }).nullish();
/**
 * A flag: any value is taken and only `true` counts, as this daemon has always read them (Go
 * would refuse a non-boolean; Init, newer, is checked as Go checks it).
 */
const bool = () => z.unknown().optional();
// int64 bounds are JavaScript's safe integers: a larger JSON number has already lost its value.
const GO_INTS = { int: [-(2 ** 31), 2 ** 31 - 1], int64: [Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER], uint16: [0, 65535], uint64: [0, Number.MAX_SAFE_INTEGER] } as const;
function int(f: At, goType: keyof typeof GO_INTS | 'time.Duration' = 'int64') {
  const [min, max] = GO_INTS[goType === 'time.Duration' ? 'int64' : goType];
  const error = unmarshal(f.struct, f.path, goType, true);
  return z.number({ error }).int({ error }).min(min, { error }).max(max, { error }).nullish();
}

/**
 * A list of strings; a lone string is taken as a one-element list (the reference's StrSlice
 * fields do so, and this daemon has always done it for every list). Go names the element type
 * when an element is wrong and the list type when the whole value is.
 */
const strList = (f: At, goType = '[]string') =>
  z.preprocess(
    (v) => (typeof v === 'string' ? [v] : v),
    z.array(z.string({ error: unmarshal(f.struct, f.path, 'string') }), { error: unmarshal(f.struct, f.path, goType) }).nullish(),
  ).optional();
/** A Go []string, lists this daemon never took a lone string for. */
const strArray = (f: At) =>
  z.array(z.string({ error: unmarshal(f.struct, f.path, 'string') }), { error: unmarshal(f.struct, f.path, '[]string') }).nullish();
/** The reference's strslice.StrSlice: on any failure Go reports its fallback decode, into a string. */
const strSlice = (f: At) => strList(f, 'string');
const strMap = (f: At, goType = 'map[string]string') =>
  z.record(z.string(), z.string({ error: unmarshal(f.struct, f.path, 'string') }), { error: unmarshal(f.struct, f.path, goType) }).nullish();
/** A map whose values this daemon does not read (Go decodes them into empty structs). */
const anyMap = (f: At, goType: string) => z.record(z.string(), z.unknown(), { error: unmarshal(f.struct, f.path, goType) }).nullish();
const list = (f: At, goType: string) => z.array(z.unknown(), { error: unmarshal(f.struct, f.path, goType) }).nullish();

/** Keys matched to the shape's names case-insensitively, as Go's decoder matches them; an exact match wins. */
function canonicalKeys(v: unknown, names: readonly string[]): unknown {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return v;
  const byLower = new Map(names.map((n) => [n.toLowerCase(), n]));
  const out: Record<string, unknown> = {};
  for (const [k, val] of Object.entries(v)) {
    const canon = byLower.get(k.toLowerCase()) ?? k;
    if (!(canon in out) || k === canon) out[canon] = val;
  }
  return out;
}

/** A Go struct: a JSON object (or null) whose known keys are matched as Go matches them. */
function struct<S extends z.ZodRawShape>(f: At, goType: string, shape: S) {
  const names = Object.keys(shape);
  return z.preprocess((v) => canonicalKeys(v, names), z.looseObject(shape, { error: unmarshal(f.struct, f.path, goType) }).nullish()).optional();
}

const hc = at('HostConfig', 'HostConfig');
const rp = at('RestartPolicy', 'HostConfig.RestartPolicy');
const lc = at('LogConfig', 'HostConfig.LogConfig');
const pb = at('PortBinding', 'HostConfig.PortBindings');
const health = at('HealthConfig', 'Healthcheck');
const top = at('CreateRequest', '');

/** HostConfig fields Go decodes as integers, with their Go types (Resources is embedded, so its fields sit here). */
const HOST_INTS = {
  Memory: 'int64', MemorySwap: 'int64', MemoryReservation: 'int64', KernelMemory: 'int64', KernelMemoryTCP: 'int64',
  CpuShares: 'int64', CpuPeriod: 'int64', CpuQuota: 'int64', NanoCpus: 'int64', CpuRealtimePeriod: 'int64',
  CpuRealtimeRuntime: 'int64', CpuCount: 'int64', CpuPercent: 'int64', PidsLimit: 'int64', BlkioWeight: 'uint16',
  ShmSize: 'int64', OomScoreAdj: 'int', MemorySwappiness: 'int64', IOMaximumIOps: 'uint64', IOMaximumBandwidth: 'uint64',
} as const;
const hostInts = Object.fromEntries(Object.entries(HOST_INTS).map(([k, t]) => [k, int(hc(k), t)])) as { [K in keyof typeof HOST_INTS]: ReturnType<typeof int> };

const hostConfig = struct(top('HostConfig'), 'container.HostConfig', {
  ...hostInts,
  Binds: strList(hc('Binds')),
  NetworkMode: str(hc('NetworkMode'), 'container.NetworkMode'),
  RestartPolicy: struct(hc('RestartPolicy'), 'container.RestartPolicy', {
    Name: str(rp('Name'), 'container.RestartPolicyMode'),
    MaximumRetryCount: int(rp('MaximumRetryCount'), 'int'),
  }),
  AutoRemove: bool(),
  LogConfig: struct(hc('LogConfig'), 'container.LogConfig', { Type: str(lc('Type')), Config: strMap(lc('Config')) }),
  Privileged: bool(),
  ReadonlyRootfs: bool(),
  PublishAllPorts: bool(),
  Init: z.boolean({ error: unmarshal('HostConfig', 'HostConfig.Init', 'bool') }).nullish(),
  Runtime: str(hc('Runtime')),
  CapAdd: strSlice(hc('CapAdd')),
  CapDrop: strSlice(hc('CapDrop')),
  Dns: strList(hc('Dns')),
  DnsOptions: strList(hc('DnsOptions')),
  DnsSearch: strList(hc('DnsSearch')),
  ExtraHosts: strList(hc('ExtraHosts')),
  Links: strArray(hc('Links')),
  VolumesFrom: strArray(hc('VolumesFrom')),
  PortBindings: z
    .record(
      z.string(),
      // Go's field stack leaves out map keys and list indexes: HostConfig.PortBindings.HostIp.
      z.array(struct(hc('PortBindings'), 'nat.PortBinding', { HostIp: str(pb('HostIp')), HostPort: str(pb('HostPort')) }), {
        error: unmarshal('HostConfig', 'HostConfig.PortBindings', '[]nat.PortBinding'),
      }).nullable(),
      { error: unmarshal('HostConfig', 'HostConfig.PortBindings', 'nat.PortMap') },
    )
    .nullish(),
  IpcMode: str(hc('IpcMode'), 'container.IpcMode'),
  PidMode: str(hc('PidMode'), 'container.PidMode'),
  CgroupnsMode: str(hc('CgroupnsMode'), 'container.CgroupnsMode'),
  CpusetCpus: str(hc('CpusetCpus')),
  CpusetMems: str(hc('CpusetMems')),
  Mounts: list(hc('Mounts'), '[]mount.Mount'),
  Tmpfs: strMap(hc('Tmpfs')),
  Ulimits: list(hc('Ulimits'), '[]*units.Ulimit'),
  BlkioWeightDevice: list(hc('BlkioWeightDevice'), '[]*blkiodev.WeightDevice'),
  Devices: list(hc('Devices'), '[]container.DeviceMapping'),
  // Go's [2]uint: fewer elements leave zeros, more are dropped; stored as the pair the runtime reads.
  ConsoleSize: z
    .array(int(hc('ConsoleSize'), 'uint64').unwrap().unwrap(), { error: unmarshal('HostConfig', 'HostConfig.ConsoleSize', '[2]uint') })
    .nullish()
    .transform((a) => (a ? ([a[0] ?? 0, a[1] ?? 0] as [number, number]) : a))
    .optional(),
});

export const createSchema = struct({ struct: 'CreateRequest', path: '' }, 'container.CreateRequest', {
  Image: str(top('Image')),
  Cmd: strSlice(top('Cmd')),
  Entrypoint: strSlice(top('Entrypoint')),
  Env: strList(top('Env')),
  Labels: strMap(top('Labels')),
  ExposedPorts: anyMap(top('ExposedPorts'), 'nat.PortSet'),
  Volumes: anyMap(top('Volumes'), 'map[string]struct {}'),
  WorkingDir: str(top('WorkingDir')),
  User: str(top('User')),
  Hostname: str(top('Hostname')),
  Domainname: str(top('Domainname')),
  Tty: bool(),
  OpenStdin: bool(),
  StdinOnce: bool(),
  AttachStdin: bool(),
  AttachStdout: bool(),
  AttachStderr: bool(),
  StopSignal: str(top('StopSignal')),
  StopTimeout: int(top('StopTimeout'), 'int'),
  Healthcheck: struct(top('Healthcheck'), 'container.HealthConfig', {
    Test: strArray(health('Test')),
    Interval: int(health('Interval'), 'time.Duration'),
    Timeout: int(health('Timeout'), 'time.Duration'),
    StartPeriod: int(health('StartPeriod'), 'time.Duration'),
    StartInterval: int(health('StartInterval'), 'time.Duration'),
    Retries: int(health('Retries'), 'int'),
  }),
  Shell: strSlice(top('Shell')),
  MacAddress: str(top('MacAddress')),
  NetworkDisabled: bool(),
  OnBuild: strArray(top('OnBuild')),
  HostConfig: hostConfig,
  NetworkingConfig: struct(top('NetworkingConfig'), 'network.NetworkingConfig', {
    EndpointsConfig: z
      .record(z.string(), z.looseObject({}, { error: unmarshal('NetworkingConfig', 'NetworkingConfig.EndpointsConfig', 'network.EndpointSettings') }).nullable(), {
        error: unmarshal('NetworkingConfig', 'NetworkingConfig.EndpointsConfig', 'map[string]*network.EndpointSettings'),
      })
      .nullish(),
  }),
});

export type CreateBody = NonNullable<z.output<typeof createSchema>>;
export type CreateHostConfig = NonNullable<CreateBody['HostConfig']>;

/** The body checked; no body (or JSON null) is an empty request, as Go decodes it. */
export function parseCreateBody(body: unknown): CreateBody {
  if (body !== undefined && body !== null && (typeof body !== 'object' || Array.isArray(body))) {
    throw invalidArgument(`json: cannot unmarshal ${jsonType(body, false)} into Go value of type container.CreateRequest`);
  }
  const r = createSchema.safeParse(body ?? {});
  if (!r.success) throw invalidArgument(r.error.issues[0].message);
  return r.data ?? {};
}

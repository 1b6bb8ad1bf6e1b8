// The shape of a container create body, checked as the reference daemon's JSON decoder checks it
// (see go-json.ts). What the values mean (restart rules, modes, resources) is
// create-request.ts's business; Init, newer than the loosely read flags, is checked as Go checks it.
import * as z from 'zod';
import { anyMap, at, bool, body, goBody, int, list, parseWith, str, strArray, strList, strMap, strSlice, struct, unmarshal } from '../../lib/go-json.ts';
import { resourceFields } from './resources-schema.ts';

const hc = at('HostConfig', 'HostConfig');
const rp = at('RestartPolicy', 'HostConfig.RestartPolicy');
const lc = at('LogConfig', 'HostConfig.LogConfig');
const pb = at('PortBinding', 'HostConfig.PortBindings');
const health = at('HealthConfig', 'Healthcheck');
const top = at('ContainerConfigWrapper', '');

/**
 * The schema, made on the first create: ~0.6 MiB of schema objects that an idle daemon does not
 * need to hold.
 */
function buildCreateSchema() {
  const hostConfig = struct(top('HostConfig'), 'container.HostConfig', {
    ...resourceFields(hc),
    ShmSize: int(hc('ShmSize'), 'int64'),
    OomScoreAdj: int(hc('OomScoreAdj'), 'int'),
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
    Mounts: list(hc('Mounts'), '[]mount.Mount'),
    Tmpfs: strMap(hc('Tmpfs')),
    GroupAdd: strList(hc('GroupAdd')),
    SecurityOpt: strList(hc('SecurityOpt')),
    StorageOpt: strMap(hc('StorageOpt')),
    Sysctls: strMap(hc('Sysctls')),
    UTSMode: str(hc('UTSMode'), 'container.UTSMode'),
    UsernsMode: str(hc('UsernsMode'), 'container.UsernsMode'),
    Cgroup: str(hc('Cgroup'), 'container.CgroupSpec'),
    ContainerIDFile: str(hc('ContainerIDFile')),
    VolumeDriver: str(hc('VolumeDriver')),
    Isolation: str(hc('Isolation'), 'container.Isolation'),
    MaskedPaths: strList(hc('MaskedPaths')),
    ReadonlyPaths: strList(hc('ReadonlyPaths')),
    // Go's [2]uint: fewer elements leave zeros, more are dropped; stored as the pair the runtime reads.
    ConsoleSize: z
      .array(int(hc('ConsoleSize'), 'uint64').unwrap().unwrap(), { error: unmarshal('HostConfig', 'HostConfig.ConsoleSize', '[2]uint') })
      .nullish()
      .transform((a) => (a ? ([a[0] ?? 0, a[1] ?? 0] as [number, number]) : a))
      .optional(),
  });

  return struct(body('ContainerConfigWrapper'), 'runconfig.ContainerConfigWrapper', {
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
}

let createSchema: ReturnType<typeof buildCreateSchema> | undefined;

export type CreateBody = NonNullable<z.output<ReturnType<typeof buildCreateSchema>>>;
export type CreateHostConfig = NonNullable<CreateBody['HostConfig']>;

const schema = () => (createSchema ??= buildCreateSchema());

/** The route's body schema; the schema itself is made on the first request that needs it. */
export const createBody = goBody(z.lazy(schema));

/** The body checked outside a route (the builder's RUN containers, tests). */
export function parseCreateBody(input: unknown): CreateBody {
  return parseWith(schema(), input);
}

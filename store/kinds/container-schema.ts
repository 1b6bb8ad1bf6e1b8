// The zod schema of the container kind (container.ts) and the migrations of its older records. Client-shaped parts
// (Config, HostConfig) keep unknown keys, as the reference keeps fields it does not know; every
// field the daemon reads is typed.
import * as z from 'zod';
import { ownerRefSchema } from '../owner.ts';
import type { StoredRecord } from '../kind.ts';
import type { ContainerConfig, ContainerSpec, ContainerStatus, HostConfig } from './container.ts';

const strings = z.array(z.string());
const stringMap = z.record(z.string(), z.string());

/** ExposedPorts, Volumes: only the keys mean something (Go decodes the values into empty structs); values are kept as sent. */
const keySet = z.record(z.string(), z.unknown()).nullish() as unknown as z.ZodType<Record<string, object> | null | undefined>;

const containerConfig = z.looseObject({
  Hostname: z.string(),
  Domainname: z.string(),
  User: z.string(),
  AttachStdin: z.boolean(),
  AttachStdout: z.boolean(),
  AttachStderr: z.boolean(),
  ExposedPorts: keySet,
  Tty: z.boolean(),
  OpenStdin: z.boolean(),
  StdinOnce: z.boolean(),
  Env: strings.nullable(),
  Cmd: strings.nullable(),
  Healthcheck: z.unknown().optional(),
  ArgsEscaped: z.boolean().optional(),
  Image: z.string(),
  Volumes: keySet,
  WorkingDir: z.string(),
  Entrypoint: strings.nullable(),
  NetworkDisabled: z.boolean().optional(),
  MacAddress: z.string().optional(),
  OnBuild: strings.nullish(),
  Labels: stringMap,
  StopSignal: z.string().optional(),
  StopTimeout: z.number().int().nullish(),
  Shell: strings.nullish(),
}) satisfies z.ZodType<ContainerConfig>;

const portBinding = z.object({ HostIp: z.string(), HostPort: z.string() });

const hostConfig = z.looseObject({
  Binds: strings.nullable(),
  NetworkMode: z.string(),
  RestartPolicy: z.object({
    Name: z.enum(['', 'no', 'always', 'unless-stopped', 'on-failure']),
    MaximumRetryCount: z.number().int(),
  }),
  AutoRemove: z.boolean(),
  LogConfig: z.object({ Type: z.string(), Config: stringMap }),
  Privileged: z.boolean(),
  ReadonlyRootfs: z.boolean(),
  ShmSize: z.number(),
  Runtime: z.string(),
  CapAdd: strings.nullable(),
  CapDrop: strings.nullable(),
  Dns: strings.nullable(),
  DnsOptions: strings.nullable(),
  DnsSearch: strings.nullable(),
  ExtraHosts: strings.nullable(),
  Init: z.boolean().nullish(),
  ConsoleSize: z.tuple([z.number(), z.number()]).nullish(),
  PortBindings: z.record(z.string(), z.array(portBinding).nullable()).nullish(),
  PublishAllPorts: z.boolean().optional(),
  Links: strings.nullish(),
}) satisfies z.ZodType<HostConfig>;

const mountPoint = z.object({
  type: z.enum(['volume', 'bind']),
  name: z.string(),
  source: z.string(),
  destination: z.string(),
  readOnly: z.boolean(),
  mode: z.string(),
  propagation: z.string(),
  noCopy: z.boolean(),
  subpath: z.string().optional(),
});

export const containerSpecSchema = z.object({
  id: z.string().regex(/^[0-9a-f]{64}$/),
  name: z.string().startsWith('/'),
  ownerRef: ownerRefSchema.optional(),
  created: z.string(),
  imageId: z.string(),
  config: containerConfig,
  hostConfig,
  networkingConfig: z.unknown().optional(),
  path: z.string(),
  args: strings,
  desired: z.enum(['created', 'running', 'paused', 'stopped', 'removed']),
  runGeneration: z.number().int().nonnegative(),
  stopOptions: z.object({ signal: z.string().optional(), timeout: z.number().nullish() }).optional(),
  mountPoints: z.array(mountPoint).optional(),
  labels: z.object({ processLabel: z.string(), mountLabel: z.string() }).optional(),
  remove: z.object({ force: z.boolean(), volumes: z.boolean() }).optional(),
  manuallyStopped: z.boolean(),
}) satisfies z.ZodType<ContainerSpec>;

const endpoint = z.object({
  NetworkID: z.string(),
  EndpointID: z.string(),
  Gateway: z.string(),
  IPAddress: z.string(),
  IPPrefixLen: z.number().int(),
  MacAddress: z.string(),
  GlobalIPv6Address: z.string().optional(),
  GlobalIPv6PrefixLen: z.number().int().optional(),
  IPv6Gateway: z.string().optional(),
  Bridge: z.string().optional(),
});

const healthLogEntry = z.object({ Start: z.string(), End: z.string(), ExitCode: z.number().int(), Output: z.string() });

export const containerStatusSchema = z.object({
  observedGeneration: z.number().int().nonnegative(),
  phase: z.enum(['created', 'running', 'paused', 'restarting', 'removing', 'exited', 'dead']),
  pid: z.number().int().nonnegative(),
  exitCode: z.number().int(),
  error: z.string(),
  errorCode: z.string(),
  startedAt: z.string(),
  finishedAt: z.string(),
  oomKilled: z.boolean(),
  restartCount: z.number().int().nonnegative(),
  runGeneration: z.number().int().nonnegative(),
  stopDeadline: z.number().nullish(),
  stopKilled: z.boolean().optional(),
  restartAt: z.number().nullish(),
  restartDelayMs: z.number().optional(),
  timers: z.array(z.object({ id: z.string(), event: z.object({ type: z.string() }), at: z.number() })).optional(),
  exitSeq: z.number().int().nonnegative(),
  logPath: z.string(),
  hostnamePath: z.string(),
  hostsPath: z.string(),
  resolvConfPath: z.string(),
  driver: z.string(),
  rootfs: z.string(),
  prepared: z.boolean(),
  endpoint: endpoint.nullish(),
  ports: z
    .array(z.object({ containerPort: z.number().int(), proto: z.enum(['tcp', 'udp', 'sctp']), hostIp: z.string(), hostPort: z.number().int() }))
    .optional(),
  restartOnBoot: z.boolean().optional(),
  sandboxKey: z.string().optional(),
  removed: z.boolean().optional(),
  health: z.object({ Status: z.enum(['starting', 'healthy', 'unhealthy']), FailingStreak: z.number().int(), Log: z.array(healthLogEntry) }).optional(),
  healthRun: z.string().optional(),
  healthNextAt: z.number().optional(),
  appliedResources: z.string().optional(),
  updateError: z.string().optional(),
}) satisfies z.ZodType<ContainerStatus>;

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Version 0 → 1: records written before desired state became a level carried request counters
 * (spec.startSeq, spec.stop.seq, spec.kill.seq against status.startSeq/stopSeq/killSeq). The start
 * counter becomes the run generation (a start asked for and not yet seen stays pending), the stop
 * options stay, a pending kill is dropped (a one-off signal, not state). Records without counters
 * pass unchanged.
 */
export function levelsFromCounters(r: StoredRecord): StoredRecord {
  if (!isObj(r.spec) || !isObj(r.status)) return r;
  const { startSeq: specStart, stop, kill: _kill, ...spec } = r.spec;
  const { startSeq: statusStart, stopSeq: _stop, killSeq: _killSeq, ...status } = r.status;
  if (typeof spec.runGeneration !== 'number') spec.runGeneration = typeof specStart === 'number' ? specStart : 0;
  if (typeof status.runGeneration !== 'number') status.runGeneration = typeof statusStart === 'number' ? statusStart : 0;
  if (isObj(stop)) spec.stopOptions = { signal: stop.signal, timeout: stop.timeout ?? null };
  return { spec, status };
}

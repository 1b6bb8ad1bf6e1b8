// The Compose application a stack's spec holds: the subset of the Compose specification this
// daemon acts on, as zod schemas. Strict throughout: a key it does not act on is refused by name,
// as is a wrong type, with the path of the offending value (`services.web.deploy.replicas:
// expected integer`). Short and long syntaxes are both accepted here and normalised by
// lib/compose/normalize.ts. The client (bin/engine) has already interpolated variables, read
// env_file, configs and secrets files, and made relative bind paths absolute.
import * as z from 'zod';

const str = z.string();
/** An integer, refused as "expected integer" whether the value is a string or a fraction. */
const int = () => z.number({ error: 'expected integer' }).int({ error: 'expected integer' });
const strings = z.array(z.string());
/** A list of strings or a string (command, entrypoint, healthcheck test). */
const command = z.union([str, strings]);
/** `KEY=VALUE` list or a map whose values may be strings, numbers, booleans or null. */
const envLike = z.union([strings, z.record(z.string(), z.union([str, z.number(), z.boolean(), z.null()]))]);
/** A Go-style duration as Compose writes them ("1m30s", "10s", "500ms"). */
const duration = z.string().regex(/^(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+$/, 'expected a duration such as 10s or 1m30s');
const byteSize = z.union([int().nonnegative(), z.string().regex(/^\d+(\.\d+)?\s*([kmgt]i?b?|b)?$/i, 'expected a size such as 512m')]);

const portLong = z.strictObject({
  target: int().min(1).max(65535),
  published: z.union([int().min(0).max(65535), z.string().regex(/^\d+(-\d+)?$/)]).optional(),
  protocol: z.enum(['tcp', 'udp', 'sctp']).optional(),
  host_ip: z.string().optional(),
  mode: z.literal('host').optional(),
});

const volumeLong = z.strictObject({
  type: z.enum(['volume', 'bind', 'tmpfs']),
  source: z.string().optional(),
  target: z.string(),
  read_only: z.boolean().optional(),
  volume: z.strictObject({ nocopy: z.boolean().optional() }).optional(),
  tmpfs: z.strictObject({ size: byteSize.optional() }).optional(),
});

const healthcheck = z.strictObject({
  test: command.optional(),
  interval: duration.optional(),
  timeout: duration.optional(),
  retries: int().nonnegative().optional(),
  start_period: duration.optional(),
  disable: z.boolean().optional(),
});

const resources = z.strictObject({
  cpus: z.union([z.number().nonnegative(), z.string().regex(/^\d+(\.\d+)?$/, 'expected a number of CPUs')]).optional(),
  memory: byteSize.optional(),
});

/** reservations.generic_resources: discrete counts of a kind (a node's named units of that kind serve them too). */
const genericResources = z.array(z.strictObject({ discrete_resource_spec: z.strictObject({ kind: z.string().min(1), value: int().min(1) }) }));

/** deploy.update_config: how a changed service rolls (the Compose specification's keys and defaults). */
const updateConfig = z.strictObject({
  parallelism: int().nonnegative().optional(),
  delay: duration.optional(),
  order: z.enum(['start-first', 'stop-first']).optional(),
  failure_action: z.enum(['rollback', 'pause', 'continue']).optional(),
  monitor: duration.optional(),
});

const deploy = z.strictObject({
  replicas: int().nonnegative().optional(),
  update_config: updateConfig.optional(),
  resources: z.strictObject({ limits: resources.optional(), reservations: resources.extend({ generic_resources: genericResources.optional() }).optional() }).optional(),
  placement: z.strictObject({ constraints: strings.optional() }).optional(),
});

export const DEPENDENCY_CONDITIONS = ['service_started', 'service_healthy', 'service_completed_successfully'] as const;

/** depends_on: a list of services (service_started), or a map with the condition each must meet. */
const dependsOn = z.union([
  z.array(str),
  z.record(z.string(), z.strictObject({ condition: z.enum(DEPENDENCY_CONDITIONS).optional(), restart: z.boolean().optional(), required: z.boolean().optional() })),
]);

const fileRef = z.union([str, z.strictObject({ source: str, target: str.optional(), mode: int().optional() })]);

export const composeService = z.strictObject({
  image: str,
  command: command.optional(),
  entrypoint: command.optional(),
  environment: envLike.optional(),
  working_dir: str.optional(),
  user: str.optional(),
  ports: z.array(z.union([str, int(), portLong])).optional(),
  expose: z.array(z.union([str, int()])).optional(),
  volumes: z.array(z.union([str, volumeLong])).optional(),
  tmpfs: z.union([str, strings]).optional(),
  networks: z.union([strings, z.record(z.string(), z.union([z.null(), z.strictObject({ aliases: strings.optional() })]))]).optional(),
  healthcheck: healthcheck.optional(),
  restart: z.string().regex(/^(no|always|unless-stopped|on-failure(:\d+)?)$/, "expected no, always, unless-stopped or on-failure[:N]").optional(),
  labels: envLike.optional(),
  init: z.boolean().optional(),
  stop_signal: str.optional(),
  stop_grace_period: duration.optional(),
  deploy: deploy.optional(),
  depends_on: dependsOn.optional(),
  configs: z.array(fileRef).optional(),
  secrets: z.array(fileRef).optional(),
});

const networkDef = z.strictObject({
  driver: z.literal('bridge').optional(),
  labels: envLike.optional(),
  internal: z.boolean().optional(),
  ipam: z.strictObject({ config: z.array(z.strictObject({ subnet: str.optional(), gateway: str.optional() })).optional() }).optional(),
});

const volumeDef = z.strictObject({
  driver: z.literal('local').optional(),
  labels: envLike.optional(),
  driver_opts: z.record(z.string(), z.string()).optional(),
});

/** A config's or a secret's content, as the client read it from its file (or wrote it inline). */
const contentDef = z.strictObject({ content: str });

export const composeApp = z.strictObject({
  /** Accepted and ignored, as Compose v2 does. */
  version: z.union([str, z.number()]).optional(),
  name: str.optional(),
  services: z.record(z.string().regex(/^[a-zA-Z0-9._-]+$/, 'expected a service name of letters, digits, ".", "_" or "-"'), composeService.nullable()).refine((s) => Object.keys(s).length > 0, 'expected at least one service'),
  networks: z.record(z.string(), networkDef.nullable()).optional(),
  volumes: z.record(z.string(), volumeDef.nullable()).optional(),
  configs: z.record(z.string(), contentDef).optional(),
  secrets: z.record(z.string(), contentDef).optional(),
});

export type ComposeApp = z.infer<typeof composeApp>;
export type ComposeService = z.infer<typeof composeService>;

/** Compose's project names: lower-case letters, digits, dashes and underscores, starting with a letter or digit. */
export const PROJECT_NAME = /^[a-z0-9][a-z0-9_-]*$/;

/** The first problem of a failed parse, as `path: what` (the path dotted, list indexes in brackets). */
export function composeIssue(error: z.ZodError): string {
  return describe(error.issues[0]!, []);
}

type Issue = z.ZodError['issues'][number];

function describe(issue: Issue, base: readonly PropertyKey[]): string {
  const path = [...base, ...issue.path];
  const at = (p: readonly PropertyKey[]) => p.reduce<string>((acc, k) => (typeof k === 'number' ? `${acc}[${k}]` : acc ? `${acc}.${String(k)}` : String(k)), '');
  if (issue.code === 'unrecognized_keys') {
    const where = at(path);
    const keys = issue.keys.map((k) => (where ? `${where}.${k}` : k));
    return `${keys.join(', ')}: ${keys.length > 1 ? 'keys' : 'key'} not supported by this daemon`;
  }
  const where = at(path) || '(document)';
  if (issue.code === 'invalid_type') return `${where}: ${issue.message.startsWith('expected ') ? issue.message : `expected ${issue.expected === 'int' ? 'integer' : issue.expected}`}`;
  if (issue.code === 'invalid_union') {
    // The alternative that got furthest into the value says what is wrong with it; when none did
    // (the value is of no alternative's type), the types the place takes.
    const deepest = issue.errors.map((alt) => alt[0]).filter((i): i is Issue => !!i).sort((a, b) => b.path.length - a.path.length)[0];
    if (deepest && (deepest.path.length > 0 || deepest.code !== 'invalid_type')) return describe(deepest, path);
    const types = issue.errors.map((alt) => alt[0]).filter((i): i is Issue => !!i && i.code === 'invalid_type').map((i) => (i as { expected: string }).expected);
    return `${where}: expected ${[...new Set(types)].join(' or ') || 'another value'}`;
  }
  return `${where}: ${issue.message}`;
}

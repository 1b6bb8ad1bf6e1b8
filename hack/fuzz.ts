// Throws seeded, reproducible malformed requests at a running engined and reports what should never
// happen on bad input: a 5xx, a request that hangs past its deadline, or a daemon that stops
// answering /_ping. Well-formed HTTP goes through node:http; malformed HTTP through raw sockets.
//   node_modules/.bin/node hack/fuzz.ts --socket /var/run/engine.sock [--seconds 30] [--requests N] [--seed 1] [--image busybox] [--swarm]
// With --swarm (the daemon is a swarm manager) the swarm-mode routes (swarm, nodes, services, tasks,
// secrets, configs) and the stacks routes are fuzzed too (SWARM_GENERATORS).
import { connect } from 'node:net';
import { request } from 'node:http';
import { parseArgs } from 'node:util';
import { buildBody, buildQuery } from './fuzz-build.ts';
import { fileURLToPath } from 'node:url';

export interface FuzzOptions {
  socketPath: string;
  seconds?: number;
  requests?: number;
  seed?: number;
  /** A local image name, so container creates get past the image lookup. */
  image?: string;
  /** Per-request deadline. Default 5 s. */
  timeoutMs?: number;
  /** Requests in flight at once. Default 4. */
  concurrency?: number;
  /** Findings to leave out of the report (known, with a reason). */
  known?: KnownFinding[];
  /**
   * The daemon is a swarm manager: also send the swarm-mode and stacks cases (services it creates
   * are removed at the end). Off, none of these cases is drawn.
   */
  swarm?: boolean;
}

/** One request, as data: replayable and printable. */
export type FuzzCase =
  | { kind: 'http'; label: string; method: string; path: string; headers?: Record<string, string>; body?: Buffer; mayBlock?: boolean }
  | { kind: 'raw'; label: string; bytes: Buffer };

export interface Finding {
  type: '5xx' | 'timeout' | 'crash';
  index: number;
  label: string;
  status?: number;
  /** A minimal description of the request (method, path, a body excerpt). */
  request: string;
  /** An excerpt of the answer. */
  response?: string;
  /** For a request on a container the fuzzer made: the create request that made it. */
  createdBy?: string;
}

export interface KnownFinding {
  reason: string;
  match: (f: Finding) => boolean;
}

export interface Report {
  seed: number;
  requests: number;
  elapsedMs: number;
  byStatus: Record<string, number>;
  byLabel: Record<string, number>;
  findings: Finding[];
  known: Array<Finding & { reason: string }>;
  /** Streaming requests (events, attach, wait) still open at the deadline: expected, not findings. */
  blocked: number;
  crashed: boolean;
}

// ---------------------------------------------------------------- PRNG and value pools

/** mulberry32: small, fast, and the same sequence everywhere for a seed. */
export function prng(seed: number): Rng {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const rng: Rng = {
    next,
    int: (n) => Math.floor(next() * n),
    pick: (xs) => xs[Math.floor(next() * xs.length)]!,
    chance: (p) => next() < p,
    bytes: (n) => {
      const b = Buffer.alloc(n);
      for (let i = 0; i < n; i++) b[i] = Math.floor(next() * 256);
      return b;
    },
  };
  return rng;
}

export interface Rng {
  next(): number;
  int(n: number): number;
  pick<T>(xs: readonly T[]): T;
  chance(p: number): boolean;
  bytes(n: number): Buffer;
}

export const WEIRD_STRINGS = [
  '', ' ', 'a', '-1', '0', '1e309', 'null', 'true', '{}', '[]', '::::', ':', '/', '//', '../../..', '/etc/passwd',
  '\u0000', 'a\u0000b', '\n', '\r\n', '\ud800', '😀', 'é', '%', '%zz', '%00', '${HOME}', '$(id)', 'a=b', '=', 'a:b:c:d:e',
  'host', 'none', 'bridge', 'container:', 'container:nope', 'default', 'always', 'on-failure', 'unless-stopped', 'no:1',
  '1-0', '0-', '99999', 'z'.repeat(300), 'x'.repeat(70_000), 'SIGKILL', 'SIGNOPE', '999', 'tcp', '80/tcp', '80/xyz',
  '-80/tcp', '65536/tcp', '0.0.0.0', '::1', '999.1.1.1', '10.0.0.0/33', '1000000000000000000000000', 'ro', 'rw,z,Z,ro',
];

const WEIRD_NUMBERS = [
  0, -1, 1, -2147483648, 2147483647, 4294967296, -9007199254740991, 9007199254740991, 1e308, -1e308, 1.5, 0.000001,
  // eslint-disable-next-line @typescript-eslint/no-loss-of-precision
  123456789012345678901234567890,
];

/** A wrong-or-odd value of any JSON type. Depth keeps nested values small. */
export function weirdValue(rng: Rng, depth = 0): unknown {
  switch (rng.int(depth > 1 ? 6 : 9)) {
    case 0: return rng.pick(WEIRD_STRINGS);
    case 1: return rng.pick(WEIRD_NUMBERS);
    case 2: return null;
    case 3: return rng.chance(0.5);
    case 4: return rng.pick(WEIRD_STRINGS);
    case 5: return rng.pick(WEIRD_NUMBERS);
    case 6: return [weirdValue(rng, depth + 1), weirdValue(rng, depth + 1)];
    case 7: return { [rng.pick(WEIRD_STRINGS).slice(0, 40) || 'k']: weirdValue(rng, depth + 1), Name: weirdValue(rng, depth + 1) };
    default: return Array.from({ length: rng.int(4) }, () => rng.pick(WEIRD_STRINGS).slice(0, 40));
  }
}

const CONFIG_FIELDS = [
  'Hostname', 'Domainname', 'User', 'AttachStdin', 'AttachStdout', 'AttachStderr', 'ExposedPorts', 'Tty', 'OpenStdin',
  'StdinOnce', 'Env', 'Cmd', 'Healthcheck', 'ArgsEscaped', 'Image', 'Volumes', 'WorkingDir', 'Entrypoint',
  'NetworkDisabled', 'MacAddress', 'OnBuild', 'Labels', 'StopSignal', 'StopTimeout', 'Shell', 'NetworkingConfig', 'HostConfig',
];

const HOST_CONFIG_FIELDS = [
  'Binds', 'ContainerIDFile', 'LogConfig', 'NetworkMode', 'PortBindings', 'RestartPolicy', 'AutoRemove', 'VolumeDriver',
  'VolumesFrom', 'Mounts', 'CapAdd', 'CapDrop', 'CgroupnsMode', 'Dns', 'DnsOptions', 'DnsSearch', 'ExtraHosts', 'GroupAdd',
  'IpcMode', 'Cgroup', 'Links', 'OomScoreAdj', 'PidMode', 'Privileged', 'PublishAllPorts', 'ReadonlyRootfs', 'SecurityOpt',
  'StorageOpt', 'Tmpfs', 'UTSMode', 'UsernsMode', 'ShmSize', 'Sysctls', 'Runtime', 'Isolation', 'CpuShares', 'Memory',
  'NanoCpus', 'CgroupParent', 'BlkioWeight', 'BlkioWeightDevice', 'BlkioDeviceReadBps', 'BlkioDeviceWriteBps',
  'BlkioDeviceReadIOps', 'CpuPeriod', 'CpuQuota', 'CpuRealtimePeriod', 'CpuRealtimeRuntime', 'CpusetCpus', 'CpusetMems',
  'Devices', 'DeviceCgroupRules', 'DeviceRequests', 'KernelMemory', 'MemoryReservation', 'MemorySwap', 'MemorySwappiness',
  'OomKillDisable', 'Init', 'PidsLimit', 'Ulimits', 'CpuCount', 'CpuPercent', 'MaskedPaths', 'ReadonlyPaths', 'ConsoleSize',
];

/** Nested shapes whose inner fields get wrong types too. */
const NESTED: Record<string, () => Record<string, unknown>> = {
  RestartPolicy: () => ({ Name: 'on-failure', MaximumRetryCount: 1 }),
  LogConfig: () => ({ Type: 'json-file', Config: { 'max-size': '1m' } }),
  PortBindings: () => ({ '80/tcp': [{ HostIp: '127.0.0.1', HostPort: '0' }] }),
  Healthcheck: () => ({ Test: ['CMD', 'true'], Interval: 1_000_000_000, Timeout: 1_000_000_000, Retries: 1, StartPeriod: 0 }),
  NetworkingConfig: () => ({ EndpointsConfig: { bridge: { Aliases: ['a'], IPAMConfig: { IPv4Address: '10.0.0.2' } } } }),
};

function mutateObject(rng: Rng, obj: Record<string, unknown>, fields: readonly string[]): string[] {
  const touched: string[] = [];
  for (let i = 0, n = 1 + rng.int(3); i < n; i++) {
    const f = rng.pick(fields);
    const nested = NESTED[f];
    if (nested && rng.chance(0.5)) {
      const inner = nested();
      const k = rng.pick(Object.keys(inner));
      inner[k] = weirdValue(rng);
      obj[f] = inner;
      touched.push(`${f}.${k}`);
    } else if (f === 'Mounts' && rng.chance(0.5)) {
      const m: Record<string, unknown> = { Type: 'volume', Source: '', Target: '/m', ReadOnly: false };
      const k = rng.pick(['Type', 'Source', 'Target', 'ReadOnly', 'BindOptions', 'VolumeOptions', 'TmpfsOptions', 'Consistency']);
      m[k] = weirdValue(rng);
      obj[f] = [m];
      touched.push(`Mounts[0].${k}`);
    } else if (f === 'Ulimits' && rng.chance(0.5)) {
      const u: Record<string, unknown> = { Name: 'nofile', Soft: 1024, Hard: 1024 };
      const k = rng.pick(['Name', 'Soft', 'Hard']);
      u[k] = weirdValue(rng);
      obj[f] = [u];
      touched.push(`Ulimits[0].${k}`);
    } else {
      obj[f] = weirdValue(rng);
      touched.push(f);
    }
  }
  if (rng.chance(0.2)) {
    obj[`Unknown${rng.int(1000)}`] = weirdValue(rng);
    touched.push('unknown-field');
  }
  return touched;
}

// ---------------------------------------------------------------- case generators

/** State the generators draw on: ids of things successful creates made, and a unique prefix. */
export interface FuzzContext {
  image: string;
  prefix: string;
  containers: string[];
  networks: string[];
  volumes: string[];
  execs: string[];
  /** Swarm-mode state (with FuzzOptions.swarm): ids learned from creates and lists. */
  services: string[];
  /** A service's name (from its create request), for updates that keep it. */
  serviceNames: Map<string, string>;
  nodes: string[];
  tasks: string[];
  /** Version.Index last seen for an object (a service, a node, or 'swarm'). */
  versions: Map<string, number>;
  /** Stacks PUT made, as name and scope. */
  stacks: Array<{ name: string; scope: string }>;
  /** Secrets and configs created (swarm mode), and each one's name, for updates that keep it. */
  secrets: string[];
  configs: string[];
  objectNames: Map<string, string>;
  swarm: boolean;
  counter: number;
  /** id -> the request that created it, so a finding on a later request can be replayed. */
  origin: Map<string, string>;
}

export function newContext(image: string, seed: number, swarm = false): FuzzContext {
  return {
    image, prefix: `fz${seed}x${Date.now().toString(36)}`, containers: [], networks: [], volumes: [], execs: [],
    services: [], serviceNames: new Map(), nodes: [], tasks: [], versions: new Map(), stacks: [], secrets: [], configs: [], objectNames: new Map(), swarm, counter: 0, origin: new Map(),
  };
}

const VERSIONS = ['/v1.41', '/v1.41', '/v1.41', '', '/v1.99', '/v0.1', '/v1.12', '/vabc', '/v', '/v1.41/v1.41', '/V1.41', '/v1.', '/v1.41.0', '/v-1.41'];

function version(rng: Rng): string {
  return rng.chance(0.7) ? '/v1.41' : rng.pick(VERSIONS);
}

function uniqueName(rng: Rng, ctx: FuzzContext): string {
  return `${ctx.prefix}-${ctx.counter++}`;
}

function someContainer(rng: Rng, ctx: FuzzContext): string {
  if (ctx.containers.length && rng.chance(0.7)) return rng.pick(ctx.containers);
  return rng.pick(['nope', '', 'a'.repeat(500), '%2F', '..', 'ff', '0', ctx.prefix]);
}

/** encodeURIComponent, but a lone surrogate (a weird string on purpose) goes through as is. */
export function enc(s: string): string {
  try {
    return encodeURIComponent(s);
  } catch {
    return s;
  }
}

function json(v: unknown): Buffer {
  return Buffer.from(JSON.stringify(v));
}

const JSON_HEADERS = { 'Content-Type': 'application/json' };

function validCreate(ctx: FuzzContext): Record<string, unknown> {
  return { Image: ctx.image, Cmd: ['true'], HostConfig: { NetworkMode: 'none' } };
}

function badJson(rng: Rng): Buffer {
  const depth = rng.pick([100, 1000, 10_000, 100_000]);
  switch (rng.int(9)) {
    case 0: return Buffer.from('{');
    case 1: return Buffer.from('{"Image": "x",}');
    case 2: return Buffer.from('[' .repeat(depth) + ']'.repeat(depth));
    case 3: return Buffer.from('{"a":'.repeat(depth) + '1' + '}'.repeat(depth));
    case 4: return Buffer.from('{"a":'.repeat(depth)); // deep and unterminated
    case 5: return rng.bytes(1 + rng.int(2000));
    case 6: return Buffer.from(rng.pick(['null', '1', '"x"', 'true', '[]', '[1,2]', '', ' ', '\u0000', 'NaN', '1e999']));
    case 7: return Buffer.from('{"Image":"' + '\\u0000'.repeat(100) + '"}');
    default: return Buffer.from('{"__proto__":{"polluted":1},"constructor":{"prototype":{"x":1}}}');
  }
}

/** An oversized JSON body (a few MB), valid or not. */
function bigBody(rng: Rng, ctx: FuzzContext): Buffer {
  const mb = 1 + rng.int(4);
  if (rng.chance(0.5)) return json({ ...validCreate(ctx), Env: [`X=${'a'.repeat(mb * 1024 * 1024)}`] });
  return Buffer.alloc(mb * 1024 * 1024, rng.pick(['a', '{', '[', ' ']));
}

/** exclude: keys never to send (fromImage on /images/create would pull from the network). */
function garbageQuery(rng: Rng, exclude: readonly string[] = []): string {
  const parts: string[] = [];
  for (let i = 0, n = 1 + rng.int(4); i < n; i++) {
    const k = rng.pick(['filters', 'all', 'force', 't', 'signal', 'condition', 'v', 'link', 'limit', 'size', 'since', 'until', 'name', 'tag', 'repo', 'fromImage', 'fromSrc', 'stream', 'logs', 'stdout', 'x', '', '%', '%zz', 'a[b]', '__proto__']);
    const v = rng.pick([
      '', '1', '0', 'true', 'yes', '-1', '99999999999999999999', '%', '%zz', '%00', '%ff%fe', '%25', '%E0%A4%A', '{', '{"label":{"a":true}}',
      '{"status":["nope"]}', '{"x":"y"}', '[]', 'null', enc('{"label":["' + 'a'.repeat(1000) + '"]}'), 'a&b=c', '==', 'SIGNOPE', 'next-exit', 'removed',
    ]);
    if (exclude.includes(k)) continue;
    parts.push(rng.chance(0.1) ? k : `${k}=${v}`);
  }
  return '?' + parts.join('&');
}

type Gen = (rng: Rng, ctx: FuzzContext) => FuzzCase;

const http = (label: string, method: string, path: string, body?: Buffer, extra: Partial<Extract<FuzzCase, { kind: 'http' }>> = {}): FuzzCase => ({
  kind: 'http', label, method, path, body, headers: body ? { ...JSON_HEADERS } : undefined, ...extra,
});

const GENERATORS: Array<[weight: number, gen: Gen]> = [
  // Container create: a valid base with wrong types in a few fields.
  [14, (rng, ctx) => {
    const body = validCreate(ctx);
    const into = rng.chance(0.5) ? (body.HostConfig as Record<string, unknown>) : body;
    const touched = mutateObject(rng, into, into === body ? CONFIG_FIELDS : HOST_CONFIG_FIELDS);
    const q = rng.chance(0.8) ? `?name=${uniqueName(rng, ctx)}` : garbageQuery(rng);
    return http(`create-wrong-type:${touched.join(',')}`, 'POST', `${version(rng)}/containers/create${q}`, json(body));
  }],
  [3, (rng, ctx) => http('create-valid', 'POST', `/v1.41/containers/create?name=${uniqueName(rng, ctx)}`, json(validCreate(ctx)))],
  [5, (rng, ctx) => http('create-bad-json', 'POST', `${version(rng)}/containers/create?name=${uniqueName(rng, ctx)}`, badJson(rng))],
  [1, (rng, ctx) => http('create-oversized', 'POST', `/v1.41/containers/create?name=${uniqueName(rng, ctx)}`, bigBody(rng, ctx))],
  [2, (rng, ctx) => http('create-bad-content-type', 'POST', `/v1.41/containers/create`, json(validCreate(ctx)), {
    headers: { 'Content-Type': rng.pick(['text/plain', 'application/x-tar', 'application/json; charset=utf-16', 'multipart/form-data', '', 'a/b/c']) },
  })],
  // Lifecycle verbs on real and bogus ids, with garbage queries.
  [10, (rng, ctx) => {
    const verb = rng.pick(['start', 'stop', 'kill', 'restart', 'pause', 'unpause', 'rename', 'resize']);
    const q = rng.chance(0.6) ? garbageQuery(rng) : '';
    const body = rng.chance(0.3) ? badJson(rng) : undefined;
    return http(`container-${verb}`, 'POST', `${version(rng)}/containers/${enc(someContainer(rng, ctx))}/${verb}${q}`, body);
  }],
  [3, (rng, ctx) => http('container-wait', 'POST', `${version(rng)}/containers/${enc(someContainer(rng, ctx))}/wait${rng.chance(0.5) ? garbageQuery(rng) : '?condition=not-running'}`, undefined, { mayBlock: true })],
  [4, (rng, ctx) => http('container-rm', 'DELETE', `${version(rng)}/containers/${enc(someContainer(rng, ctx))}${rng.chance(0.5) ? garbageQuery(rng) : '?force=1'}`)],
  [6, (rng, ctx) => {
    const body: Record<string, unknown> = { Memory: 64 * 1024 * 1024 };
    const touched = mutateObject(rng, body, HOST_CONFIG_FIELDS);
    return http(`container-update:${touched.join(',')}`, 'POST', `${version(rng)}/containers/${enc(someContainer(rng, ctx))}/update`, rng.chance(0.8) ? json(body) : badJson(rng));
  }],
  [5, (rng, ctx) => {
    const body: Record<string, unknown> = { Cmd: ['true'], AttachStdout: true };
    const touched = mutateObject(rng, body, ['Cmd', 'Env', 'User', 'WorkingDir', 'Tty', 'AttachStdin', 'AttachStdout', 'AttachStderr', 'Privileged', 'DetachKeys', 'ConsoleSize']);
    return http(`exec-create:${touched.join(',')}`, 'POST', `${version(rng)}/containers/${enc(someContainer(rng, ctx))}/exec`, rng.chance(0.8) ? json(body) : badJson(rng));
  }],
  [3, (rng, ctx) => {
    const id = ctx.execs.length && rng.chance(0.7) ? rng.pick(ctx.execs) : rng.pick(['nope', '', 'x'.repeat(300)]);
    const body = rng.chance(0.5) ? json({ Detach: weirdValue(rng), Tty: weirdValue(rng), ConsoleSize: weirdValue(rng) }) : badJson(rng);
    return http('exec-start', 'POST', `${version(rng)}/exec/${enc(id)}/${rng.pick(['start', 'resize', 'json'])}${garbageQuery(rng)}`, body, { mayBlock: true });
  }],
  [3, (rng, ctx) => http('container-attach', 'POST', `${version(rng)}/containers/${enc(someContainer(rng, ctx))}/attach${garbageQuery(rng)}`, undefined, {
    mayBlock: true, headers: rng.chance(0.5) ? { Upgrade: 'tcp', Connection: 'Upgrade' } : undefined,
  })],
  [4, (rng, ctx) => http('container-read', 'GET', `${version(rng)}/containers/${enc(someContainer(rng, ctx))}/${rng.pick(['json', 'top', 'changes', 'logs', 'stats', 'archive'])}${garbageQuery(rng)}`, undefined, { mayBlock: true })],
  // Images.
  [4, (rng, ctx) => {
    // Pull only from a registry that refuses at once, so nothing waits on the network.
    const from = rng.pick(['', ':', '@', 'UPPER/case', 'a'.repeat(300), '127.0.0.1:1/x', '127.0.0.1:1/x:tag', '127.0.0.1:1/x@sha256:zz', '%00', '-']);
    const q = rng.chance(0.5) ? `?fromImage=${enc(from)}&tag=${enc(rng.pick(['', 'a', '::', 'x'.repeat(200)]))}` : garbageQuery(rng, ['fromImage']);
    return http('image-create', 'POST', `${version(rng)}/images/create${q}`, rng.chance(0.3) ? rng.bytes(100) : undefined, { headers: { 'X-Registry-Auth': rng.pick(['', '!!!', 'e30=', Buffer.from('{"username":1}').toString('base64')]) } });
  }],
  [3, (rng, ctx) => http('image-tag', 'POST', `${version(rng)}/images/${enc(rng.chance(0.5) ? ctx.image : rng.pick(WEIRD_STRINGS.slice(0, 30)))}/tag?repo=${enc(rng.pick(['', 'UPPER', ':', 'a/b/c/d', `${ctx.prefix}/img`, '%']))}&tag=${enc(rng.pick(['', 'a', ':', 'x'.repeat(200), '-']))}`)],
  [3, (rng, ctx) => http('image-rmi', 'DELETE', `${version(rng)}/images/${enc(rng.pick(['nope', '', ':', 'sha256:', 'sha256:zz', 'x'.repeat(300), `${ctx.prefix}/img:a`]))}${garbageQuery(rng)}`)],
  [2, (rng) => http('image-load', 'POST', `${version(rng)}/images/load${garbageQuery(rng)}`, rng.bytes(rng.int(5000)), { headers: { 'Content-Type': 'application/x-tar' } })],
  [2, (rng, ctx) => {
    // Builds: junk bodies and Dockerfiles; nothing that reaches outside loopback (FROM and ADD name 127.0.0.1:1, never `pull`).
    const q = rng.chance(0.6) ? buildQuery(rng, ctx) : garbageQuery(rng, ['pull', 'remote']);
    return http('build', 'POST', `${version(rng)}/build${q}`, buildBody(rng, ctx), { headers: { 'Content-Type': 'application/x-tar' } });
  }],
  // Networks and volumes.
  [5, (rng, ctx) => {
    const body: Record<string, unknown> = { Name: uniqueName(rng, ctx), Driver: 'bridge' };
    const touched = mutateObject(rng, body, ['Name', 'Driver', 'Internal', 'Attachable', 'IPAM', 'EnableIPv6', 'Options', 'Labels', 'CheckDuplicate', 'Scope', 'ConfigOnly', 'Ingress']);
    if (rng.chance(0.3)) body.IPAM = { Config: [{ Subnet: rng.pick(['10.0.0.0/33', 'x', '::/200', '0.0.0.0/0', '10.250.0.0/24']), Gateway: weirdValue(rng) }] };
    return http(`network-create:${touched.join(',')}`, 'POST', `${version(rng)}/networks/create`, rng.chance(0.8) ? json(body) : badJson(rng));
  }],
  [4, (rng, ctx) => {
    const net = ctx.networks.length && rng.chance(0.6) ? rng.pick(ctx.networks) : rng.pick(['none', 'host', 'bridge', 'nope', '']);
    const body = rng.chance(0.7) ? json({ Container: rng.chance(0.6) ? someContainer(rng, ctx) : weirdValue(rng), EndpointConfig: weirdValue(rng), Force: weirdValue(rng) }) : badJson(rng);
    return http('network-' + rng.pick(['connect', 'disconnect']), 'POST', `${version(rng)}/networks/${enc(net)}/${rng.pick(['connect', 'disconnect'])}`, body);
  }],
  [3, (rng, ctx) => {
    const body: Record<string, unknown> = { Name: uniqueName(rng, ctx) };
    const touched = mutateObject(rng, body, ['Name', 'Driver', 'DriverOpts', 'Labels']);
    return http(`volume-create:${touched.join(',')}`, 'POST', `${version(rng)}/volumes/create`, rng.chance(0.8) ? json(body) : badJson(rng));
  }],
  // Reads and lists with garbage filters.
  [6, (rng) => http('list', 'GET', `${version(rng)}${rng.pick(['/containers/json', '/images/json', '/networks', '/volumes', '/info', '/version', '/system/df', '/_ping'])}${rng.chance(0.7) ? garbageQuery(rng) : ''}`)],
  [2, (rng) => http('events', 'GET', `${version(rng)}/events${garbageQuery(rng)}`, undefined, { mayBlock: true })],
  // Unroutable and odd requests that node:http still sends.
  [3, (rng) => http('long-path', rng.pick(['GET', 'POST', 'DELETE']), `${version(rng)}/${'a/'.repeat(rng.pick([100, 5000, 30_000]))}`)],
  [3, (rng) => http('odd-method', rng.pick(['PATCH', 'OPTIONS', 'PUT', 'PROPFIND', 'TRACE', 'HEAD', 'CONNECTX']), `${version(rng)}${rng.pick(['/containers/create', '/info', '/_ping', '/images/json', '/'])}`)],
  [3, (rng) => http('percent-path', 'GET', `${version(rng)}/${rng.pick(['containers', 'images', 'networks', 'volumes'])}/${rng.pick(['%', '%zz', '%00', '%2e%2e', '%ff%fe', '%C0%AF', '%E0%A4%A', '%25%25'])}/json`)],
  // Routes added since the first cut: volumes and networks by name, prunes, commit, image reads
  // and exports, archive HEAD/PUT, export, link removal, attach over a websocket, build prune and
  // cancel, registry routes and POST /session. Nothing reaches past loopback: every registry named
  // is 127.0.0.1:1 (refused at once), and requests that would default to Docker Hub (an /auth
  // without a server address, a search term or a push without a registry host) are never sent.
  [3, (rng, ctx) => {
    const name = ctx.volumes.length && rng.chance(0.6) ? rng.pick(ctx.volumes) : rng.pick(['nope', '', 'a'.repeat(300), '%00', '..', '%2F', 'UPPER', 'a b']);
    const method = rng.pick(['GET', 'GET', 'DELETE', 'PUT']);
    const q = method === 'DELETE' ? rng.pick(['', '?force=1', '?force=x', '?force=']) : rng.chance(0.3) ? garbageQuery(rng) : '';
    return http(`volume-${method.toLowerCase()}`, method, `${version(rng)}/volumes/${enc(name)}${q}`, method === 'PUT' ? (rng.chance(0.5) ? json({ Spec: weirdValue(rng) }) : badJson(rng)) : undefined);
  }],
  [3, (rng, ctx) => {
    const net = ctx.networks.length && rng.chance(0.6) ? rng.pick(ctx.networks) : rng.pick(['none', 'host', 'bridge', 'nope', '', 'a'.repeat(300), '%00']);
    if (rng.chance(0.7)) {
      const q = rng.pick(['', '?verbose=1', '?verbose=x', '?scope=local', '?scope=swarm', '?scope=nope', `?verbose=${enc(rng.pick(WEIRD_STRINGS))}`]);
      return http('network-inspect', 'GET', `${version(rng)}/networks/${enc(net)}${q}`);
    }
    return http('network-rm', 'DELETE', `${version(rng)}/networks/${enc(net)}`);
  }],
  [3, (rng) => {
    // Filters the prunes take, with odd values; never dangling=false on images (it would remove the test image).
    const what = rng.pick(['containers', 'images', 'networks', 'volumes']);
    const f = rng.chance(0.7)
      ? `?filters=${enc(JSON.stringify({ [rng.pick(['until', 'label', 'label!', 'dangling', 'all', 'nope', ''])]: rng.chance(0.8) ? [rng.pick(['x', '', '1h', '-1', '99999999999999999999', '2020-01-01', 'a=b', 'maybe', 'true'])] : weirdValue(rng) }))}`
      : rng.pick(['', '?filters=', '?filters={', '?filters=null', '?filters=%zz', '?filters=[]']);
    return http(`prune-${what}`, 'POST', `${version(rng)}/${what}/prune${f}`);
  }],
  [2, (rng, ctx) => {
    const body = rng.chance(0.6) ? json({ Cmd: weirdValue(rng), Env: weirdValue(rng), Labels: weirdValue(rng), ExposedPorts: weirdValue(rng) }) : rng.chance(0.5) ? badJson(rng) : undefined;
    const q = [
      `container=${enc(someContainer(rng, ctx))}`, rng.chance(0.7) ? `repo=${enc(rng.pick(['', `${ctx.prefix}/c`, 'UPPER', ':', 'a/b/c/d', '127.0.0.1:1/x']))}` : '',
      rng.chance(0.5) ? `tag=${enc(rng.pick(['', 'a', ':', 'x'.repeat(200)]))}` : '', rng.chance(0.4) ? `pause=${rng.pick(['1', '0', 'x'])}` : '',
      rng.chance(0.4) ? `changes=${enc(rng.pick(['CMD ["true"]', 'ENV A=b', 'FROM x', 'EXPOSE 99999', 'NOPE x', '', 'ENV', 'USER']))}` : '',
    ].filter(Boolean).join('&');
    return http('commit', 'POST', `${version(rng)}/commit?${rng.chance(0.1) ? garbageQuery(rng).slice(1) : q}`, body);
  }],
  [3, (rng, ctx) => {
    const name = rng.chance(0.5) ? ctx.image : rng.pick(['nope', ':', 'sha256:', 'sha256:zz', 'x'.repeat(300), `${ctx.prefix}/img:a`, `${ctx.prefix}/c`, 'UPPER', '%00', '']);
    const what = rng.pick(['json', 'history', 'get']);
    if (what === 'get') return http('image-get', 'GET', `${version(rng)}/images/get?${rng.chance(0.8) ? `names=${enc(name)}${rng.chance(0.3) ? `&names=${enc(rng.pick(WEIRD_STRINGS))}` : ''}` : garbageQuery(rng).slice(1)}`);
    return http(`image-${what}`, 'GET', `${version(rng)}/images/${rng.chance(0.8) ? name : enc(name)}/${what}${rng.chance(0.3) ? garbageQuery(rng) : ''}`);
  }],
  [2, (rng, ctx) => {
    // Push only to 127.0.0.1:1 (refused at once); the tag case makes one there to push.
    const name = rng.pick([`127.0.0.1:1/${ctx.prefix}`, `127.0.0.1:1/${ctx.prefix}:t`, '127.0.0.1:1/nope', '127.0.0.1:1/UPPER', '127.0.0.1:1/x@sha256:zz', '127.0.0.1:1/']);
    if (rng.chance(0.3)) return http('image-tag-registry', 'POST', `/v1.41/images/${ctx.image}/tag?repo=${enc(`127.0.0.1:1/${ctx.prefix}`)}&tag=t`);
    return http('image-push', 'POST', `${version(rng)}/images/${name}/push${rng.chance(0.5) ? `?tag=${enc(rng.pick(['', 't', ':', 'x'.repeat(200)]))}` : ''}`, undefined, {
      headers: { 'X-Registry-Auth': rng.pick(['', '!!!', 'e30=', Buffer.from('{"username":1}').toString('base64'), Buffer.from('{"serveraddress":"127.0.0.1:1"}').toString('base64')]) },
    });
  }],
  [3, (rng, ctx) => {
    const c = enc(someContainer(rng, ctx));
    const path = `path=${enc(rng.pick(['/', '/etc', '/etc/passwd', '', 'rel', '/nope', '/../../..', '/proc/self', '/dev/null', '%00', 'a'.repeat(300)]))}`;
    const r = rng.int(4);
    if (r === 0) return http('archive-head', 'HEAD', `${version(rng)}/containers/${c}/archive?${rng.chance(0.8) ? path : garbageQuery(rng).slice(1)}`);
    if (r === 1) return http('container-export', 'GET', `${version(rng)}/containers/${c}/export`);
    const q = `${path}${rng.chance(0.3) ? `&noOverwriteDirNonDir=${rng.pick(['1', 'x'])}` : ''}${rng.chance(0.3) ? `&copyUIDGID=${rng.pick(['1', 'x'])}` : ''}`;
    const body = rng.chance(0.7) ? rng.bytes(rng.pick([0, 1, 511, 512, 1024, 3000])) : Buffer.alloc(1024);
    return http('archive-put', 'PUT', `${version(rng)}/containers/${c}/archive?${q}`, body, { headers: { 'Content-Type': rng.pick(['application/x-tar', 'application/json', '']) } });
  }],
  [1, (rng, ctx) => http('container-link-rm', 'DELETE', `${version(rng)}/containers/${enc(someContainer(rng, ctx))}/${enc(rng.pick(['nope', 'a', '', '%00', 'x'.repeat(300)]))}${rng.pick(['', '?link=1', '?link=x', '?link=0'])}`)],
  [1, (rng, ctx) => http('attach-ws', 'GET', `${version(rng)}/containers/${enc(someContainer(rng, ctx))}/attach/ws${garbageQuery(rng)}`, undefined, {
    mayBlock: true,
    headers: rng.chance(0.6) ? { Upgrade: rng.pick(['websocket', 'tcp', '']), Connection: 'Upgrade', 'Sec-WebSocket-Version': rng.pick(['13', '8', 'x']), 'Sec-WebSocket-Key': rng.pick(['dGhlIHNhbXBsZSBub25jZQ==', '', '!!!']) } : undefined,
  })],
  [1, (rng) => rng.chance(0.5)
    ? http('build-prune', 'POST', `${version(rng)}/build/prune${rng.pick(['', '?keep-storage=x', '?keep-storage=-1', '?keep-storage=99999999999999999999', '?all=x', '?filters={', garbageQuery(rng)])}`)
    : http('build-cancel', 'POST', `${version(rng)}/build/cancel${rng.pick(['', '?id=', '?id=nope', `?id=${enc(rng.pick(WEIRD_STRINGS))}`])}`)],
  [2, (rng) => {
    // Always a server address on loopback, a type Go refuses, or junk that never decodes (an empty /auth is Docker Hub's).
    const r = rng.int(3);
    if (r === 0) return http('auth', 'POST', `${version(rng)}/auth`, Buffer.from(rng.pick(['{', '{"serveraddress":', '[1,2]', '"x"', '1', 'true', '\u0000', '{"serveraddress":"127.0.0.1:1",}'])));
    const body: Record<string, unknown> = {
      username: oddOf(rng, ['u', '', 'x'.repeat(1000)]), password: oddOf(rng, ['p', '']),
      serveraddress: rng.chance(0.85) ? rng.pick(['127.0.0.1:1', 'http://127.0.0.1:1', 'https://127.0.0.1:1/v2/', '[::1]:1', '127.0.0.1:1/x', 'tcp://127.0.0.1:1']) : rng.pick([1, true, [], {}, 1.5]),
    };
    if (r === 2) body[rng.pick(['auth', 'email', 'identitytoken', 'registrytoken', 'Username', 'nope'])] = weirdValue(rng);
    return http('auth', 'POST', `${version(rng)}/auth`, json(body));
  }],
  [2, (rng) => {
    // Search terms and distribution names always name 127.0.0.1:1 (or fail before any lookup).
    if (rng.chance(0.5)) {
      const term = rng.pick(['127.0.0.1:1/x', '127.0.0.1:1/', '127.0.0.1:99999/x', '[::1]:1/x', `127.0.0.1:1/${'a'.repeat(300)}`, '127.0.0.1:1/UPPER', '', '127.0.0.1:1/%00']);
      const extra = [rng.chance(0.4) ? `limit=${rng.pick(['0', '101', '-1', 'x', '25', '99999999999999999999'])}` : '', rng.chance(0.4) ? `filters=${enc(rng.pick(['{"stars":["x"]}', '{"is-official":["maybe"]}', '{"nope":["1"]}', '{', 'null']))}` : ''].filter(Boolean);
      return http('image-search', 'GET', `${version(rng)}/images/search?term=${enc(term)}${extra.length ? '&' + extra.join('&') : ''}`);
    }
    const name = rng.pick(['127.0.0.1:1/x', '127.0.0.1:1/x:tag', '127.0.0.1:1/x@sha256:zz', `127.0.0.1:1/x@sha256:${'0'.repeat(64)}`, ':', 'UPPER', '-', '127.0.0.1:1/', '%zz']);
    return http('distribution', 'GET', `${version(rng)}/distribution/${name}${rng.pick(['/json', '/json', '', '/nope'])}`, undefined, { headers: { 'X-Registry-Auth': rng.pick(['', '!!!', 'e30=']) } });
  }],
  [2, (rng) => {
    // POST /session: refusals (no upgrade, another protocol, no Connection: Upgrade); now and then an
    // upgrade the client drops at once after the 101.
    const headers: Record<string, string> = {};
    if (rng.chance(0.8)) headers['X-Docker-Expose-Session-Uuid'] = rng.pick(['', 'fz', 'a'.repeat(500), 'x y']);
    if (rng.chance(0.5)) headers['X-Docker-Expose-Session-Name'] = rng.pick(['', 'n', 'é']);
    if (rng.chance(0.3)) headers['X-Docker-Expose-Session-Grpc-Method'] = rng.pick(['', '/moby.filesync.v1.FileSync/DiffCopy', 'x']);
    if (rng.chance(0.3)) headers['X-Buildkit-Session-Health-Custom-Timeout'] = rng.pick(['-1', 'x', '0', '99999999999999999999', '1.5']);
    const up = rng.int(5);
    if (up === 1) headers.Upgrade = rng.pick(['tcp', 'h2', 'websocket', 'H2C']);
    if (up === 2) headers.Upgrade = 'h2c'; // no Connection: Upgrade
    if (up === 3 || (up === 4 && rng.chance(0.3))) Object.assign(headers, { Upgrade: up === 3 ? rng.pick(['tcp', 'h2']) : 'h2c', Connection: 'Upgrade' });
    const body = rng.chance(0.3) ? badJson(rng) : undefined;
    return http('session', 'POST', `${version(rng)}/session${rng.chance(0.2) ? garbageQuery(rng) : ''}`, body, { headers, mayBlock: true });
  }],
  [2, (rng) => {
    // Routes the daemon has not (plugins, /grpc, debug pages): a 404, never a 5xx.
    const p = rng.pick(['/plugins', '/plugins/privileges?remote=127.0.0.1:1/x', '/plugins/pull?remote=127.0.0.1:1/x', '/plugins/nope/json', '/plugins/nope/enable', '/plugins/nope', '/plugins/create?name=x', '/grpc', '/debug/vars', '/debug/pprof/', '/distribution', '/system/df?type=nope', '/system/df?type=container&type=x']);
    const method = rng.pick(['GET', 'POST', 'DELETE']);
    return http('unrouted', method, `${version(rng)}${p}`, method === 'POST' && rng.chance(0.5) ? badJson(rng) : undefined, { headers: p === '/grpc' ? { 'Content-Type': 'application/grpc' } : undefined });
  }],
  // Malformed HTTP through a raw socket.
  [3, (rng) => ({ kind: 'raw', label: 'raw-random-bytes', bytes: rng.bytes(1 + rng.int(4096)) })],
  [6, (rng, ctx) => rawMalformed(rng, ctx)],
];

// ---------------------------------------------------------------- swarm mode and stacks (FuzzOptions.swarm)

/** Replica and job counts: wrong types and out-of-range numbers, never a huge count Go would take. */
const ODD_COUNTS: readonly unknown[] = [0, 1, 2, -1, 1.5, 0.000001, 1e308, -1e308, '1', null, true, [], {}, -2147483648, 18446744073709551616, 123456789012345678901234567890];
/** Durations (int64 nanoseconds): wrong types and odd values. */
const ODD_DURATIONS: readonly unknown[] = [0, -1, 1, 1.5, 1e308, -9007199254740991, 9007199254740991, '5s', '1', null, true, {}, -1e9, 1_000_000_000];
const SWARM_IDS = ['nope', '', 'a'.repeat(500), '%2F', '..', 'x', '0', 'self', 'a b', '%00', 'abcdefghijklmnopqrstuvwxy'];
const CONSTRAINTS = [
  'node.role==manager', 'node.role!=worker', 'node.labels.zone=b', 'node.labels.zone==', '==x', 'node.hostname', 'node.platform.os==linux',
  'engine.labels.x!=y', 'node.id==nope', 'node.role==boss', 'node.labels.' + 'z'.repeat(300) + '==1', '', ' == ', 'node.role===manager', 'node.role<>manager',
];
const ODD_ADDRS = ['', ':', '127.0.0.1:1', '127.0.0.1:99999', '[::1]:1', '999.1.1.1:2377', 'nosuchiface', 'lo', '0.0.0.0:-1', 'a:b:c', '127.0.0.1', 'tcp://127.0.0.1:1'];
const AUTH_HEADERS = ['', '!!!', 'e30=', Buffer.from('{"username":1}').toString('base64'), Buffer.from('{"username":"u","password":"p","serveraddress":"127.0.0.1:1"}').toString('base64'), 'x'.repeat(5000)];

/** One of the listed values, or now and then any odd value at all. */
function oddOf(rng: Rng, xs: readonly unknown[]): unknown {
  return rng.chance(0.8) ? rng.pick(xs) : weirdValue(rng);
}

/** A `filters` query for these keys: mostly well-formed JSON with odd values, sometimes junk. */
function swarmFilters(rng: Rng, keys: readonly string[], values: readonly string[]): string {
  if (rng.chance(0.2)) return garbageQuery(rng);
  const f: Record<string, unknown> = {};
  for (let i = 0, n = 1 + rng.int(2); i < n; i++) {
    const k = rng.chance(0.9) ? rng.pick(keys) : rng.pick(['nope', '', 'x'.repeat(100)]);
    f[k] = rng.chance(0.85) ? [rng.pick(values)] : rng.chance(0.5) ? { [rng.pick(values)]: rng.pick([true, false, 1, 'x']) } : weirdValue(rng);
  }
  return `?filters=${enc(JSON.stringify(f))}`;
}

function someService(rng: Rng, ctx: FuzzContext): string {
  if (ctx.services.length && rng.chance(0.7)) {
    const id = rng.pick(ctx.services);
    if (rng.chance(0.15)) return ctx.serviceNames.get(id) ?? id;
    return rng.chance(0.1) ? id.slice(0, 1 + rng.int(6)) : id;
  }
  return rng.pick(SWARM_IDS);
}

function someNode(rng: Rng, ctx: FuzzContext): string {
  if (ctx.nodes.length && rng.chance(0.7)) {
    const id = rng.pick(ctx.nodes);
    return rng.chance(0.1) ? id.slice(0, 1 + rng.int(6)) : id;
  }
  return rng.pick(SWARM_IDS);
}

/** ?version=: mostly the last one seen (so the update is applied), else stale, odd or absent. */
function versionQuery(rng: Rng, ctx: FuzzContext, key: string): string {
  const seen = ctx.versions.get(key);
  if (seen !== undefined && rng.chance(0.6)) return `?version=${seen}`;
  return rng.pick(['', '?version=', '?version=1', '?version=0', '?version=-1', '?version=abc', '?version=99999999999999999999', '?version=1.5', '?version=%00', `?version=${enc(rng.pick(WEIRD_STRINGS))}`]);
}

function validServiceSpec(ctx: FuzzContext, name: string): Record<string, unknown> {
  return { Name: name, TaskTemplate: { ContainerSpec: { Image: ctx.image, Command: ['sleep', '600'] } }, Mode: { Replicated: { Replicas: 1 } } };
}

/** Each part of a ServiceSpec as a wrong-or-odd value (nested parts keep a valid shape around the odd field). */
const SERVICE_MUTATIONS: Record<string, (rng: Rng, ctx: FuzzContext) => unknown> = {
  Name: (rng) => oddOf(rng, ['', 'bad name!', 'a'.repeat(64), '-x', 'x-', 'UPPER', '😀', 'a.b', 'ingress']),
  Labels: (rng) => oddOf(rng, [{ a: 'b' }, { '': '' }, { a: 1 }, { ['z'.repeat(300)]: 'x' }, []]),
  Mode: (rng) => rng.pick([
    () => ({ Replicated: { Replicas: oddOf(rng, ODD_COUNTS) } }),
    () => ({ Global: oddOf(rng, [{}, null, { Replicas: 2 }]) }),
    () => ({ ReplicatedJob: { MaxConcurrent: oddOf(rng, ODD_COUNTS), TotalCompletions: oddOf(rng, ODD_COUNTS) } }),
    () => ({ GlobalJob: oddOf(rng, [{}, null]) }),
    () => ({ Replicated: { Replicas: 1 }, Global: {} }),
    () => ({ ReplicatedJob: {}, GlobalJob: {} }),
    () => ({}),
    () => weirdValue(rng),
  ])(),
  'TaskTemplate.ContainerSpec': (rng, ctx) => {
    const cs: Record<string, unknown> = { Image: ctx.image, Command: ['sleep', '600'] };
    const field = rng.pick([
      'Image', 'Labels', 'Command', 'Args', 'Hostname', 'Env', 'Dir', 'User', 'Groups', 'Privileges', 'Init', 'TTY', 'OpenStdin', 'ReadOnly',
      'Mounts', 'StopSignal', 'StopGracePeriod', 'Healthcheck', 'Hosts', 'DNSConfig', 'Secrets', 'Configs', 'Isolation', 'Sysctls',
      'CapabilityAdd', 'CapabilityDrop', 'Ulimits', 'Duration',
    ]);
    const odd: Record<string, () => unknown> = {
      Image: () => oddOf(rng, ['', 'UPPER', ':', '127.0.0.1:1/x', 'a@sha256:zz', ctx.image + '@sha256:' + '0'.repeat(64)]),
      StopGracePeriod: () => oddOf(rng, ODD_DURATIONS),
      Healthcheck: () => ({ Test: oddOf(rng, [['CMD', 'true'], ['NONE'], [], ['BOGUS'], 'true']), Interval: oddOf(rng, ODD_DURATIONS), Retries: oddOf(rng, ODD_COUNTS) }),
      Mounts: () => [{ Type: oddOf(rng, ['volume', 'bind', 'tmpfs', 'npipe', 'nope', '']), Source: oddOf(rng, ['', '/', '/nonexistent', 'v', '../x']), Target: oddOf(rng, ['/m', '', '/', 'rel']), ReadOnly: oddOf(rng, [true, false]) }],
      Privileges: () => ({ CredentialSpec: weirdValue(rng), SELinuxContext: weirdValue(rng), Seccomp: oddOf(rng, [{ Mode: 'unconfined' }, { Mode: 'custom', Profile: '{' }]), NoNewPrivileges: weirdValue(rng) }),
      DNSConfig: () => ({ Nameservers: oddOf(rng, [['1.1.1.1'], ['x'], [1]]), Search: weirdValue(rng), Options: weirdValue(rng) }),
      Secrets: () => [{ SecretID: oddOf(rng, ['nope', '']), SecretName: weirdValue(rng), File: { Name: 'x', UID: '0', GID: '0', Mode: oddOf(rng, [292, -1, 1.5]) } }],
      Configs: () => [{ ConfigID: oddOf(rng, ['nope', '']), ConfigName: weirdValue(rng), Runtime: weirdValue(rng) }],
      Ulimits: () => [{ Name: oddOf(rng, ['nofile', 'nope', '']), Soft: oddOf(rng, ODD_COUNTS), Hard: oddOf(rng, ODD_COUNTS) }],
      Isolation: () => oddOf(rng, ['default', 'process', 'hyperv', 'nope', '']),
      StopSignal: () => oddOf(rng, ['SIGKILL', 'SIGNOPE', '0', '99', '']),
      Hosts: () => oddOf(rng, [['1.2.3.4 a'], ['x'], ['a:b'], [''], 'x']),
      Sysctls: () => oddOf(rng, [{ 'net.ipv4.ip_forward': '1' }, { 'kernel.nope': 'x' }, { '': '' }]),
    };
    cs[field] = odd[field]?.() ?? weirdValue(rng);
    if (rng.chance(0.2)) cs[`Unknown${rng.int(1000)}`] = weirdValue(rng);
    return { ContainerSpec: rng.chance(0.9) ? cs : weirdValue(rng) };
  },
  'TaskTemplate.RestartPolicy': (rng) => ({
    Condition: oddOf(rng, ['none', 'on-failure', 'any', 'always', '']), Delay: oddOf(rng, ODD_DURATIONS), MaxAttempts: oddOf(rng, ODD_COUNTS), Window: oddOf(rng, ODD_DURATIONS),
  }),
  'TaskTemplate.Placement': (rng) => ({
    Constraints: rng.chance(0.8) ? [rng.pick(CONSTRAINTS), ...(rng.chance(0.3) ? [rng.pick(CONSTRAINTS)] : [])] : weirdValue(rng),
    Preferences: oddOf(rng, [[{ Spread: { SpreadDescriptor: 'node.labels.zone' } }], [{ Spread: { SpreadDescriptor: '' } }], [{ Spread: {} }], [{}], [{ Spread: { SpreadDescriptor: 'nope' } }]]),
    Platforms: oddOf(rng, [[{ Architecture: 'amd64', OS: 'linux' }], [{ Architecture: 'nope', OS: 'plan9' }], [{}], [{ OS: 1 }]]),
    MaxReplicas: oddOf(rng, ODD_COUNTS),
  }),
  'TaskTemplate.Resources': (rng) => ({
    Limits: { NanoCPUs: oddOf(rng, ODD_COUNTS), MemoryBytes: oddOf(rng, [0, 1, 4096, -1, 1.5, 4 * 1024 * 1024, 1e308]), Pids: oddOf(rng, ODD_COUNTS) },
    Reservations: {
      NanoCPUs: oddOf(rng, [0, 1, -1, 1e18, 1.5]), MemoryBytes: oddOf(rng, [0, -1, 1e18, 1.5]),
      GenericResources: oddOf(rng, [
        [{ NamedResourceSpec: { Kind: 'gpu', Value: 'g0' } }], [{ DiscreteResourceSpec: { Kind: 'gpu', Value: 2 } }], [{ DiscreteResourceSpec: { Kind: 'gpu', Value: -1 } }],
        [{ NamedResourceSpec: { Kind: '', Value: '' } }], [{}], [{ NamedResourceSpec: { Kind: 'gpu', Value: 'a' }, DiscreteResourceSpec: { Kind: 'gpu', Value: 1 } }], [{ DiscreteResourceSpec: { Kind: 'gpu', Value: 1.5 } }],
      ]),
    },
  }),
  'TaskTemplate.LogDriver': (rng) => ({ Name: oddOf(rng, ['json-file', 'none', 'nope', '', 'syslog']), Options: oddOf(rng, [{ 'max-size': 'x' }, { 'max-size': '1m' }, { a: 1 }]) }),
  'TaskTemplate.Networks': (rng, ctx) => [{ Target: ctx.networks.length && rng.chance(0.3) ? rng.pick(ctx.networks) : oddOf(rng, ['nope', 'bridge', 'host', 'none', 'ingress', '']), Aliases: weirdValue(rng) }],
  'TaskTemplate.ForceUpdate': (rng) => oddOf(rng, ODD_COUNTS),
  'TaskTemplate.Runtime': (rng) => oddOf(rng, ['container', 'plugin', 'attachment', 'nope', '']),
  'TaskTemplate.PluginSpec': (rng) => ({ Name: weirdValue(rng), Remote: weirdValue(rng) }),
  UpdateConfig: (rng) => ({
    Parallelism: oddOf(rng, ODD_COUNTS), Delay: oddOf(rng, ODD_DURATIONS), FailureAction: oddOf(rng, ['continue', 'pause', 'rollback', 'nope', '']),
    Monitor: oddOf(rng, ODD_DURATIONS), MaxFailureRatio: oddOf(rng, [0, 0.5, 1, 1.5, -0.1, 1e308, '0.5']), Order: oddOf(rng, ['stop-first', 'start-first', 'nope', '']),
  }),
  RollbackConfig: (rng) => SERVICE_MUTATIONS['UpdateConfig']!(rng, undefined as unknown as FuzzContext),
  EndpointSpec: (rng) => ({
    Mode: oddOf(rng, ['vip', 'dnsrr', 'nope', '']),
    Ports: rng.chance(0.8)
      ? Array.from({ length: 1 + rng.int(2) }, () => ({
        Name: weirdValue(rng), Protocol: oddOf(rng, ['tcp', 'udp', 'sctp', 'nope', '']), TargetPort: oddOf(rng, [80, 0, -1, 65536, 1.5, 4294967296]),
        PublishedPort: oddOf(rng, [0, 30000 + rng.int(20000), -1, 65536, 1.5, 4294967296]), PublishMode: oddOf(rng, ['host', 'host', 'ingress', 'nope', '']),
      }))
      : weirdValue(rng),
  }),
  Networks: (rng, ctx) => SERVICE_MUTATIONS['TaskTemplate.Networks']!(rng, ctx),
};

/** A valid ServiceSpec with one to three of its parts replaced by odd ones; the touched parts. */
function mutatedServiceSpec(rng: Rng, ctx: FuzzContext, name: string): [Record<string, unknown>, string[]] {
  const spec = validServiceSpec(ctx, name);
  const touched: string[] = [];
  for (let i = 0, n = 1 + rng.int(3); i < n; i++) {
    const k = rng.pick(Object.keys(SERVICE_MUTATIONS));
    const v = SERVICE_MUTATIONS[k]!(rng, ctx);
    if (k.startsWith('TaskTemplate.')) {
      const tt = spec.TaskTemplate as Record<string, unknown>;
      if (k === 'TaskTemplate.ContainerSpec') Object.assign(tt, v);
      else tt[k.slice('TaskTemplate.'.length)] = v;
    } else spec[k] = v;
    touched.push(k);
  }
  if (rng.chance(0.1)) {
    spec.TaskTemplate = weirdValue(rng);
    touched.push('TaskTemplate');
  }
  if (rng.chance(0.1)) {
    spec[`Unknown${rng.int(1000)}`] = weirdValue(rng);
    touched.push('unknown-field');
  }
  return [spec, touched];
}

/** A random swarm spec (POST /swarm/update, init's Spec): odd values in its parts. */
function oddSwarmSpec(rng: Rng): Record<string, unknown> {
  const spec: Record<string, unknown> = {};
  const parts: Record<string, () => unknown> = {
    Name: () => oddOf(rng, ['default', '', 'other']),
    Labels: () => oddOf(rng, [{ a: 'b' }, { a: 1 }, []]),
    Orchestration: () => ({ TaskHistoryRetentionLimit: oddOf(rng, ODD_COUNTS) }),
    Raft: () => ({ SnapshotInterval: oddOf(rng, ODD_COUNTS), KeepOldSnapshots: oddOf(rng, ODD_COUNTS), LogEntriesForSlowFollowers: oddOf(rng, ODD_COUNTS), ElectionTick: oddOf(rng, ODD_COUNTS), HeartbeatTick: oddOf(rng, ODD_COUNTS) }),
    Dispatcher: () => ({ HeartbeatPeriod: oddOf(rng, ODD_DURATIONS) }),
    CAConfig: () => ({
      NodeCertExpiry: oddOf(rng, ODD_DURATIONS),
      ExternalCAs: oddOf(rng, [[{ Protocol: 'cfssl', URL: 'https://127.0.0.1:1' }], [{ Protocol: 'nope', URL: '' }], [{}], 'x']),
      SigningCACert: oddOf(rng, ['', '-----BEGIN CERTIFICATE-----\nzz\n-----END CERTIFICATE-----\n', 'x']),
      SigningCAKey: oddOf(rng, ['', 'x']),
    }),
    TaskDefaults: () => ({ LogDriver: oddOf(rng, [{ Name: 'json-file' }, { Name: '' }, { Name: 'nope', Options: { a: 'b' } }, { Options: {} }]) }),
    // Never true: autolock would lock the swarm for the rest of the run.
    EncryptionConfig: () => ({ AutoLockManagers: rng.pick([false, 'x', 1, null, {}]) }),
  };
  for (let i = 0, n = 1 + rng.int(3); i < n; i++) {
    const k = rng.pick(Object.keys(parts));
    spec[k] = parts[k]!();
  }
  if (rng.chance(0.15)) spec[`Unknown${rng.int(1000)}`] = weirdValue(rng);
  return spec;
}

const LOGS_KEYS = ['stdout', 'stderr', 'follow', 'timestamps', 'details', 'since', 'until', 'tail'];
const LOGS_VALUES = ['', '1', '0', 'true', 'x', '-1', 'all', '99999999999999999999', '1.5', '1e3', '%', '%zz', '2020-01-01T00:00:00Z', 'nope'];

function logsQueryOf(rng: Rng): string {
  const parts = rng.chance(0.8) ? ['stdout=1'] : [];
  for (let i = 0, n = rng.int(4); i < n; i++) parts.push(`${rng.pick(LOGS_KEYS)}=${rng.pick(LOGS_VALUES)}`);
  return parts.length ? '?' + parts.join('&') : '';
}

/** A Compose document for PUT /stacks: a valid one with odd values, or junk. */
function stackDocument(rng: Rng, ctx: FuzzContext): { body: Buffer; contentType: string; touched: string } {
  const svc: Record<string, unknown> = { image: ctx.image, command: ['sleep', '600'] };
  const doc: Record<string, unknown> = { services: { web: svc } };
  const keys: Record<string, () => unknown> = {
    image: () => oddOf(rng, ['', 'UPPER', '127.0.0.1:1/x', ':']),
    command: () => weirdValue(rng),
    ports: () => oddOf(rng, [['80'], ['99999:80'], ['a:b'], [{ target: 80, published: 'x' }], [{ target: 0 }], [{ target: 80, mode: 'ingress' }]]),
    deploy: () => ({ replicas: oddOf(rng, ODD_COUNTS), mode: oddOf(rng, ['replicated', 'global', 'nope']), placement: { constraints: [rng.pick(CONSTRAINTS)] } }),
    depends_on: () => oddOf(rng, [['nope'], ['web'], { web: { condition: 'nope' } }]),
    networks: () => oddOf(rng, [['nope'], ['default'], { x: null }]),
    volumes: () => oddOf(rng, [['v:/m'], ['/etc:/etc:zz'], [{ type: 'nope', target: '/m' }], ['../x:/m']]),
    healthcheck: () => ({ test: ['CMD', 'true'], interval: oddOf(rng, ['1s', '1x', '', '-1s', 1]) }),
    environment: () => weirdValue(rng),
    restart: () => oddOf(rng, ['always', 'no', 'on-failure:x', 'nope']),
  };
  const k = rng.pick(Object.keys(keys));
  svc[k] = keys[k]!();
  if (rng.chance(0.2)) doc[rng.pick(['networks', 'volumes', 'name', 'version', 'x-extra', 'nope'])] = weirdValue(rng);
  if (rng.chance(0.1)) doc.services = weirdValue(rng);
  const yaml = rng.chance(0.3);
  if (rng.chance(0.15)) return { body: rng.chance(0.5) ? badJson(rng) : Buffer.from(rng.pick(['a: [', ': :', '- - -', '*x', '!!binary zz', 'a: &a [*a]', '{{{', '\t\tx'])), contentType: yaml ? 'application/yaml' : 'application/json', touched: 'junk' };
  // JSON is YAML: the YAML content type takes it too.
  return { body: json(doc), contentType: yaml ? 'application/yaml' : 'application/json', touched: k };
}

const STACK_NAMES = ['', 'UPPER', '-x', '_x', 'a b', '%00', '..', 'x'.repeat(300), 'nope'];

function someStack(rng: Rng, ctx: FuzzContext): string {
  if (ctx.stacks.length && rng.chance(0.6)) return rng.pick(ctx.stacks).name;
  return rng.pick(STACK_NAMES);
}

/** A secret's or config's id (sometimes its name or an id prefix) the run made, else a bogus one. */
function someObject(rng: Rng, ctx: FuzzContext, kind: string): string {
  const ids = kind === 'secret' ? ctx.secrets : ctx.configs;
  if (ids.length && rng.chance(0.7)) {
    const id = rng.pick(ids);
    if (rng.chance(0.15)) return ctx.objectNames.get(id) ?? id;
    return rng.chance(0.1) ? id.slice(0, 1 + rng.int(6)) : id;
  }
  return rng.pick(SWARM_IDS);
}

const scopeQuery = (rng: Rng) => rng.pick(['', 'scope=local', 'scope=cluster', 'scope=cluster', 'scope=nope', 'scope=']);

/** The swarm-mode and stacks cases, drawn only with FuzzOptions.swarm. */
const SWARM_GENERATORS: Array<[weight: number, gen: Gen]> = [
  // Swarm: inspect, init and join (refused: the node is in a swarm), leave never forced, update at the version, unlock.
  [2, (rng) => http('swarm-read', 'GET', `${version(rng)}${rng.pick(['/swarm', '/swarm/unlockkey'])}${rng.chance(0.3) ? garbageQuery(rng) : ''}`)],
  [2, (rng) => {
    const body: Record<string, unknown> = { ListenAddr: rng.pick(ODD_ADDRS), AdvertiseAddr: rng.pick(ODD_ADDRS) };
    const k = rng.pick(['ListenAddr', 'AdvertiseAddr', 'DataPathAddr', 'DataPathPort', 'Spec', 'AutoLockManagers', 'Availability', 'DefaultAddrPool', 'SubnetSize', 'ForceNewCluster']);
    // ForceNewCluster is never true: it would re-make the swarm under the run.
    body[k] = k === 'Spec' ? oddSwarmSpec(rng) : k === 'ForceNewCluster' ? rng.pick([false, 'x', 1, null, {}]) : k === 'DefaultAddrPool' ? oddOf(rng, [['10.0.0.0/33'], ['x'], [], ['10.10.0.0/16']]) : weirdValue(rng);
    return http(`swarm-init:${k}`, 'POST', `${version(rng)}/swarm/init${rng.chance(0.2) ? garbageQuery(rng) : ''}`, rng.chance(0.85) ? json(body) : badJson(rng));
  }],
  [2, (rng) => {
    const body: Record<string, unknown> = {
      ListenAddr: rng.pick(ODD_ADDRS), RemoteAddrs: oddOf(rng, [['127.0.0.1:1'], [], ['x'], ['[::1]:1'], [''], ['999.1.1.1:2377']]),
      JoinToken: oddOf(rng, ['', 'SWMTKN-1-abc', `SWMTKN-1-${'0'.repeat(50)}-${'a'.repeat(25)}`, 'x'.repeat(1000)]),
    };
    const k = rng.pick(['ListenAddr', 'AdvertiseAddr', 'DataPathAddr', 'RemoteAddrs', 'JoinToken', 'Availability']);
    body[k] = weirdValue(rng);
    return http(`swarm-join:${k}`, 'POST', `${version(rng)}/swarm/join`, rng.chance(0.85) ? json(body) : badJson(rng));
  }],
  [1, (rng) => http('swarm-leave', 'POST', `${version(rng)}/swarm/leave${rng.pick(['', '?force=0', '?force=false', '?force=no', '?force=', '?force=none'])}`)],
  [3, (rng, ctx) => {
    const q = versionQuery(rng, ctx, 'swarm');
    const rot = rng.chance(0.3) ? `${q ? '&' : '?'}${rng.pick(['rotateWorkerToken', 'rotateManagerToken', 'rotateManagerUnlockKey'])}=${rng.pick(['1', '0', 'x', ''])}` : '';
    return http('swarm-update', 'POST', `${version(rng)}/swarm/update${q}${rot}`, rng.chance(0.85) ? json(oddSwarmSpec(rng)) : badJson(rng));
  }],
  [1, (rng) => http('swarm-unlock', 'POST', `${version(rng)}/swarm/unlock`, rng.chance(0.7) ? json({ UnlockKey: oddOf(rng, ['', 'SWMKEY-1-abc', 'x'.repeat(1000)]) }) : badJson(rng))],
  // Nodes.
  [3, (rng, ctx) => http('node-read', 'GET', rng.chance(0.4)
    ? `${version(rng)}/nodes${swarmFilters(rng, ['id', 'label', 'node.label', 'membership', 'name', 'role'], ['manager', 'worker', 'boss', 'accepted', 'pending', 'x', 'a=b', '', ...ctx.nodes.slice(0, 2)])}`
    : `${version(rng)}/nodes/${enc(someNode(rng, ctx))}`)],
  [3, (rng, ctx) => {
    const node = someNode(rng, ctx);
    const spec: Record<string, unknown> = { Role: 'manager', Availability: 'active', Labels: {} };
    const k = rng.pick(['Name', 'Labels', 'Role', 'Availability']);
    // Never a drain; now and then a demotion of the sole manager, which the reference refuses (the last manager).
    spec[k] = oddOf(rng, k === 'Role' ? ['manager', 'boss', '', 'Manager'] : k === 'Availability' ? ['active', 'pause', 'nope', ''] : k === 'Labels' ? [{ a: 'b' }, { a: 1 }, { '': '' }] : ['', 'x', 'z'.repeat(300)]);
    if (typeof spec.Role === 'string' && !['manager', 'worker', ''].includes(spec.Role) && rng.chance(0.1)) spec.Role = 'worker';
    return http(`node-update:${k}`, 'POST', `${version(rng)}/nodes/${enc(node)}/update${versionQuery(rng, ctx, node)}`, rng.chance(0.85) ? json(spec) : badJson(rng));
  }],
  [1, (rng, ctx) => http('node-rm', 'DELETE', `${version(rng)}/nodes/${enc(someNode(rng, ctx))}${rng.pick(['', '?force=0', '?force=x', '?force='])}`)],
  // Services: create from random and mutated specs, read, update at the version (with and without X-Registry-Auth), remove.
  [12, (rng, ctx) => {
    const [spec, touched] = mutatedServiceSpec(rng, ctx, uniqueName(rng, ctx));
    const headers: Record<string, string> = { ...JSON_HEADERS };
    if (rng.chance(0.3)) headers['X-Registry-Auth'] = rng.pick(AUTH_HEADERS);
    return http(`service-create:${touched.join(',')}`, 'POST', `${version(rng)}/services/create${rng.chance(0.1) ? garbageQuery(rng) : ''}`, json(spec), { headers });
  }],
  [2, (rng, ctx) => http('service-create-valid', 'POST', `/v1.41/services/create`, json(validServiceSpec(ctx, uniqueName(rng, ctx))))],
  [3, (rng, ctx) => {
    const body = rng.chance(0.5) ? badJson(rng) : json(rng.chance(0.5) ? weirdValue(rng) : { Name: uniqueName(rng, ctx), TaskTemplate: weirdValue(rng), Mode: weirdValue(rng) });
    return http('service-create-junk', 'POST', `${version(rng)}/services/create`, body);
  }],
  [4, (rng, ctx) => {
    const p = rng.chance(0.4)
      ? `/services${swarmFilters(rng, ['id', 'label', 'mode', 'name'], ['replicated', 'global', 'replicated-job', 'global-job', 'bad', 'a=b', 'a', ctx.prefix, '', ...ctx.services.slice(0, 2)])}${rng.chance(0.3) ? '&status=' + rng.pick(['1', '0', 'x']) : ''}`
      : `/services/${enc(someService(rng, ctx))}${rng.chance(0.6) ? `?insertDefaults=${rng.pick(['1', 'true', '0', 'x', '', '%zz'])}` : ''}`;
    return http('service-read', 'GET', `${version(rng)}${p}`);
  }],
  [8, (rng, ctx) => {
    const id = someService(rng, ctx);
    const name = ctx.serviceNames.get(id) ?? (rng.chance(0.5) ? id : uniqueName(rng, ctx));
    const [spec, touched] = rng.chance(0.2) ? [validServiceSpec(ctx, name), ['none']] : mutatedServiceSpec(rng, ctx, name);
    if (!touched.includes('Name') && rng.chance(0.9)) spec.Name = name;
    let q = versionQuery(rng, ctx, id);
    const extra: string[] = [];
    if (rng.chance(0.3)) extra.push(`rollback=${rng.pick(['', 'none', 'previous', 'bogus', '%00'])}`);
    if (rng.chance(0.3)) extra.push(`registryAuthFrom=${rng.pick(['', 'spec', 'previous-spec', 'bogus'])}`);
    if (extra.length) q += `${q ? '&' : '?'}${extra.join('&')}`;
    const headers: Record<string, string> = { ...JSON_HEADERS };
    if (rng.chance(0.4)) headers['X-Registry-Auth'] = rng.pick(AUTH_HEADERS);
    return http(`service-update:${touched.join(',')}`, 'POST', `${version(rng)}/services/${enc(id)}/update${q}`, rng.chance(0.9) ? json(spec) : badJson(rng), { headers });
  }],
  [2, (rng, ctx) => http('service-rm', 'DELETE', `${version(rng)}/services/${enc(someService(rng, ctx))}${rng.chance(0.2) ? garbageQuery(rng) : ''}`)],
  [3, (rng, ctx) => http('service-logs', 'GET', `${version(rng)}/services/${enc(someService(rng, ctx))}/logs${logsQueryOf(rng)}`, undefined, { mayBlock: true })],
  // Tasks.
  [4, (rng, ctx) => {
    const r = rng.int(3);
    const some = () => (ctx.tasks.length && rng.chance(0.7) ? rng.pick(ctx.tasks) : rng.pick(SWARM_IDS));
    if (r === 0) {
      return http('task-list', 'GET', `${version(rng)}/tasks${rng.chance(0.8) ? swarmFilters(rng, ['id', 'name', 'service', 'node', 'label', 'desired-state', 'up-to-date', 'runtime'], ['running', 'shutdown', 'accepted', 'bad', 'a=b', ctx.prefix, '', ...ctx.services.slice(0, 2), ...ctx.nodes.slice(0, 1)]) : ''}`);
    }
    if (r === 1) return http('task-read', 'GET', `${version(rng)}/tasks/${enc(some())}`);
    return http('task-logs', 'GET', `${version(rng)}/tasks/${enc(some())}/logs${logsQueryOf(rng)}`, undefined, { mayBlock: true });
  }],
  // Stacks (the API extension): put a Compose document, list, inspect, remove; local and cluster scope.
  [4, (rng, ctx) => {
    const name = rng.chance(0.8) ? (ctx.stacks.length && rng.chance(0.3) ? rng.pick(ctx.stacks).name : uniqueName(rng, ctx)) : rng.pick(STACK_NAMES);
    const { body, contentType, touched } = stackDocument(rng, ctx);
    const q = [scopeQuery(rng), rng.chance(0.2) ? `dryRun=${rng.pick(['1', '0', 'x'])}` : ''].filter(Boolean).join('&');
    return http(`stack-put:${touched}`, 'PUT', `${version(rng)}/stacks/${enc(name)}${q ? '?' + q : ''}`, rng.chance(0.9) ? body : undefined, { headers: { 'Content-Type': contentType } });
  }],
  [2, (rng, ctx) => {
    const q = scopeQuery(rng);
    return http('stack-read', 'GET', `${version(rng)}/stacks${rng.chance(0.5) ? `/${enc(someStack(rng, ctx))}` : ''}${q ? '?' + q : ''}`);
  }],
  [1, (rng, ctx) => {
    const q = [scopeQuery(rng), rng.chance(0.3) ? `volumes=${rng.pick(['1', '0', 'x'])}` : ''].filter(Boolean).join('&');
    return http('stack-rm', 'DELETE', `${version(rng)}/stacks/${enc(someStack(rng, ctx))}${q ? '?' + q : ''}`);
  }],
  // Secrets and configs: create from odd specs (Name, Data in base64 or not, Labels, Driver,
  // Templating), list with filters, inspect, update at the version seen (labels only), remove; and
  // services that use them (so a remove meets one in use).
  [5, (rng, ctx) => {
    const kind = rng.pick(['secret', 'config']);
    const spec: Record<string, unknown> = { Name: uniqueName(rng, ctx), Data: Buffer.from(`fz ${ctx.counter}`).toString('base64') };
    const touched = rng.chance(0.25) ? 'none' : rng.pick(['Name', 'Data', 'Labels', 'Driver', 'Templating', 'unknown-field']);
    const odd: Record<string, () => unknown> = {
      Name: () => oddOf(rng, ['', 'bad name!', 'a'.repeat(65), '-x', 'x-', '.x', 'UPPER', '😀', 'a.b_c-d', ...(ctx.objectNames.size ? [rng.pick([...ctx.objectNames.values()])] : [])]),
      Data: () => oddOf(rng, ['', '!!!', 'YQ', 'YQ==', 'YQ==YQ==', 'Y Q==', '====', 'YQ==\n', Buffer.alloc(rng.pick([500 * 1024, 1024 * 1024]), 'a').toString('base64'), 'x'.repeat(1001)]),
      Labels: () => oddOf(rng, [{ a: 'b' }, { '': '' }, { a: 1 }, { ['z'.repeat(300)]: 'x' }, [], null]),
      Driver: () => oddOf(rng, [{ Name: 'nope' }, { Name: '' }, { Name: 'x', Options: { a: 1 } }, 'x', null, {}]),
      Templating: () => oddOf(rng, [{ Name: 'golang' }, { Name: 'nope' }, { Name: '' }, { Name: 'golang', Options: { a: 'b' } }, 'golang', null]),
      'unknown-field': () => undefined,
    };
    if (touched === 'unknown-field') spec[`Unknown${rng.int(1000)}`] = weirdValue(rng);
    else if (touched !== 'none') spec[touched] = odd[touched]!();
    return http(`${kind}-create:${touched}`, 'POST', `${version(rng)}/${kind}s/create${rng.chance(0.1) ? garbageQuery(rng) : ''}`, rng.chance(0.9) ? json(spec) : badJson(rng));
  }],
  [3, (rng, ctx) => {
    const kind = rng.pick(['secret', 'config']);
    if (rng.chance(0.4)) {
      const ids = kind === 'secret' ? ctx.secrets : ctx.configs;
      const values = ['a=b', 'a', '', 'x'.repeat(100), ctx.prefix, 'UPPER', ...ids.slice(0, 2), ...ids.slice(0, 1).map((x) => x.slice(0, 3))];
      return http(`${kind}-list`, 'GET', `${version(rng)}/${kind}s${swarmFilters(rng, ['id', 'label', 'name', 'names'], values)}`);
    }
    return http(`${kind}-inspect`, 'GET', `${version(rng)}/${kind}s/${enc(someObject(rng, ctx, kind))}`);
  }],
  [3, (rng, ctx) => {
    const kind = rng.pick(['secret', 'config']);
    const id = someObject(rng, ctx, kind);
    const name = ctx.objectNames.get(id) ?? id;
    const spec: Record<string, unknown> = { Name: name, Labels: { fz: String(ctx.counter++) } };
    const k = rng.pick(['none', 'none', 'Name', 'Labels', 'Data', 'Driver', 'Templating']);
    if (k === 'Name') spec.Name = oddOf(rng, ['', 'other', name.toUpperCase(), 'x'.repeat(65)]);
    else if (k === 'Labels') spec.Labels = oddOf(rng, [{ '': '' }, { a: 1 }, [], null]);
    else if (k === 'Data') spec.Data = oddOf(rng, ['', '!!!', 'YQ==', 'YQ']);
    else if (k !== 'none') spec[k] = weirdValue(rng);
    return http(`${kind}-update:${k}`, 'POST', `${version(rng)}/${kind}s/${enc(id)}/update${versionQuery(rng, ctx, id)}`, rng.chance(0.9) ? json(spec) : badJson(rng));
  }],
  [1, (rng, ctx) => {
    const kind = rng.pick(['secret', 'config']);
    return http(`${kind}-rm`, 'DELETE', `${version(rng)}/${kind}s/${enc(someObject(rng, ctx, kind))}${rng.chance(0.2) ? garbageQuery(rng) : ''}`);
  }],
  [1, (rng, ctx) => {
    // A valid service that uses a secret and a config the run made (or names one that is not there).
    const spec = validServiceSpec(ctx, uniqueName(rng, ctx));
    const cs = (spec.TaskTemplate as { ContainerSpec: Record<string, unknown> }).ContainerSpec;
    const sid = someObject(rng, ctx, 'secret');
    const cid = someObject(rng, ctx, 'config');
    cs.Secrets = [{ SecretID: sid, SecretName: ctx.objectNames.get(sid) ?? sid, File: { Name: oddOf(rng, ['s', '/etc/x', '../x', '']), UID: '0', GID: '0', Mode: 0o444 } }];
    cs.Configs = [{ ConfigID: cid, ConfigName: ctx.objectNames.get(cid) ?? cid, File: { Name: oddOf(rng, ['/c', 'c', '']), UID: '0', GID: '0', Mode: 0o444 } }];
    return http('service-create-objects', 'POST', `/v1.41/services/create`, json(spec));
  }],
];

/**
 * 5xx answers in swarm mode that are the reference's own (dockerd 20.10, docs/reference-services.md
 * and docs/reference-swarm.md): a 5xx for a client's fault, but the same status and words as the
 * reference gives. Pass them as FuzzOptions.known to see only what differs.
 */
export const SWARM_REFERENCE_5XX: KnownFinding[] = [
  ['reference 503: init or join while in a swarm', 503, /already part of a swarm/],
  ['reference 503: the sole manager leaves without force', 503, /You are attempting to leave the swarm/],
  ['reference 500: a stale version', 500, /update out of sequence/],
  ['reference 500: a constraint without == or !=', 500, /constraint expected one operator|malformed constraint|invalid constraint/],
  ['reference 500: a network the spec names does not exist', 500, /network .* not found/],
  ['reference 500: unsupported registryAuthFrom value', 500, /^\{"message":"unsupported registryAuthFrom value"\}$/],
  ['reference 500: unrecognized rollback option', 500, /unrecognized rollback option/],
  ['reference 500: logs without a stream', 500, /you must choose at least one stream/],
  ['reference 500: a bad filter value (desired-state, role, membership)', 500, /Invalid (desired-state|role|membership) filter/],
  ['reference 501: renaming a service, changing its mode', 501, /renaming services is not supported|service mode change is not allowed/],
  ['reference 501: ports in ingress mode (no routing mesh yet)', 501, /ingress mode .* not supported yet/],
  ['reference 500: a secret driver plugin that is not installed (swarmkit: code = Unknown)', 500, /rpc error: code = Unknown desc = plugin .* not found/],
].map(([reason, status, re]) => ({ reason: reason as string, match: (f: Finding) => f.type === '5xx' && f.status === status && (re as RegExp).test(f.response ?? '') }));

/**
 * 5xx answers on the routes added with the registry, archive and volume cases that are not a
 * client's fault or are the reference's own (dockerd answers 500 for each): a registry on
 * 127.0.0.1:1 refuses (pull, push, /auth, /distribution, search), a registry port out of range
 * (dockerd: dial "invalid port"; here the message is Node's bare "Invalid URL"), a PUT archive
 * body that is not a tar. fuzz() leaves these out always (listed under `known`), so the runs made
 * before these cases existed keep their verdicts.
 */
export const REFERENCE_5XX: KnownFinding[] = [
  // (A long search term cuts the excerpt before "connection refused": the URL on loopback is enough.)
  ['upstream 500: a registry on 127.0.0.1:1 refuses', 500, /dial tcp .*connection refused|^\{"message":"Get \\"http:\/\/(127\.0\.0\.1|\[::1\]):1\//, /^(image-create|image-push|auth|distribution|image-search)$/],
  ['reference 500: a registry port out of range (the message differs)', 500, /^\{"message":"Invalid URL"\}$/, /^(image-create|image-push|auth|distribution|image-search)$/],
  ['reference 501: image import (fromSrc) is not implemented', 501, /importing from a URL is not supported/, /^image-create$/],
  ['reference 500: a PUT archive body that is not a tar', 500, /Invalid tar header|Unexpected end of data|TAR_BAD_ARCHIVE/, /^archive-put$/],
].map(([reason, status, re, label]) => ({
  reason: reason as string,
  match: (f: Finding) => f.type === '5xx' && f.status === status && (label as RegExp).test(f.label.split(':')[0]!) && (re as RegExp).test(f.response ?? ''),
}));

/** As REFERENCE_5XX, on a daemon in no swarm: a cluster volume's update (PUT /volumes/{name}) is the reference's 503. */
const PLAIN_REFERENCE_5XX: KnownFinding[] = [
  { reason: 'reference 503: PUT /volumes/{name} (cluster volumes) on a node in no swarm', match: (f) => f.type === '5xx' && f.status === 503 && f.label === 'volume-put' && /not a swarm manager/.test(f.response ?? '') },
];

const CRLF = '\r\n';

function rawMalformed(rng: Rng, ctx: FuzzContext): FuzzCase {
  const body = JSON.stringify(validCreate(ctx));
  const variants: Array<[string, () => string | Buffer]> = [
    ['raw-truncated-body', () => `POST /v1.41/containers/create HTTP/1.1${CRLF}Host: d${CRLF}Content-Type: application/json${CRLF}Content-Length: ${body.length + 1000}${CRLF}${CRLF}${body}`],
    ['raw-truncated-headers', () => `POST /v1.41/containers/create HTTP/1.1${CRLF}Host: d${CRLF}Content-Le`],
    ['raw-bad-content-length', () => `POST /v1.41/containers/create HTTP/1.1${CRLF}Host: d${CRLF}Content-Length: ${rng.pick(['-1', 'abc', '1e3', '99999999999999999999', '1, 2'])}${CRLF}${CRLF}${body}`],
    ['raw-double-content-length', () => `POST /v1.41/networks/create HTTP/1.1${CRLF}Host: d${CRLF}Content-Length: 2${CRLF}Content-Length: 20${CRLF}${CRLF}{}`],
    ['raw-bad-chunked', () => `POST /v1.41/volumes/create HTTP/1.1${CRLF}Host: d${CRLF}Transfer-Encoding: chunked${CRLF}${CRLF}${rng.pick(['zz', 'ffffffffffffffff', '5', '-1'])}${CRLF}{"a"${CRLF}`],
    ['raw-bad-request-line', () => rng.pick(['GET\r\n\r\n', 'GET /_ping\r\n\r\n', 'GET /_ping HTTP/9.9\r\n\r\n', ' / HTTP/1.1\r\n\r\n', 'GET  HTTP/1.1\r\n\r\n', 'G\u0000T /_ping HTTP/1.1\r\n\r\n', '\r\n\r\n\r\n'])],
    ['raw-invalid-method', () => `${rng.pick(['FOO', 'G@T', 'get', 'X'.repeat(1000), 'CONNECT'])} /v1.41/info HTTP/1.1${CRLF}Host: d${CRLF}${CRLF}`],
    ['raw-bad-path', () => `GET ${rng.pick(['/v1.41/containers/a b/json', '/v1.41/info\u0000', 'v1.41/info', '*', 'http://x/v1.41/info', '/v1.41/containers/\u00ff/json', '/' + 'a'.repeat(100_000)])} HTTP/1.1${CRLF}Host: d${CRLF}${CRLF}`],
    ['raw-huge-header', () => `GET /v1.41/info HTTP/1.1${CRLF}Host: d${CRLF}X-Big: ${'a'.repeat(rng.pick([10_000, 100_000]))}${CRLF}${CRLF}`],
    ['raw-many-headers', () => `GET /v1.41/info HTTP/1.1${CRLF}Host: d${CRLF}${Array.from({ length: 3000 }, (_, i) => `X-${i}: v`).join(CRLF)}${CRLF}${CRLF}`],
    ['raw-bad-header', () => `GET /v1.41/info HTTP/1.1${CRLF}Host: d${CRLF}${rng.pick(['NoColon', ': empty', 'X: a\u0000b', 'X Y: z', ' folded: x'])}${CRLF}${CRLF}`],
    ['raw-upgrade-garbage', () => `POST /v1.41/containers/nope/attach?stream=1 HTTP/1.1${CRLF}Host: d${CRLF}Upgrade: tcp${CRLF}Connection: Upgrade${CRLF}${CRLF}${'\u0000'.repeat(100)}`],
  ];
  const [label, make] = rng.pick(variants);
  const v = make();
  return { kind: 'raw', label, bytes: Buffer.isBuffer(v) ? v : Buffer.from(v, 'latin1') };
}

const TOTAL_WEIGHT = GENERATORS.reduce((s, [w]) => s + w, 0);
const WITH_SWARM = [...GENERATORS, ...SWARM_GENERATORS];
const TOTAL_WEIGHT_SWARM = WITH_SWARM.reduce((s, [w]) => s + w, 0);

/** The next case for this PRNG state. */
export function generateCase(rng: Rng, ctx: FuzzContext): FuzzCase {
  const gens = ctx.swarm ? WITH_SWARM : GENERATORS;
  let r = rng.int(ctx.swarm ? TOTAL_WEIGHT_SWARM : TOTAL_WEIGHT);
  for (const [w, gen] of gens) {
    if (r < w) return gen(rng, ctx);
    r -= w;
  }
  throw new Error('unreachable');
}

// ---------------------------------------------------------------- sending

export interface Outcome {
  /** 0 when no status line came back (closed, or timed out). */
  status: number;
  timedOut: boolean;
  /** A streaming request still open at its deadline after a status line. */
  blocked: boolean;
  body: string;
  error?: string;
}

const EXCERPT = 300;

function sendHttp(socketPath: string, c: Extract<FuzzCase, { kind: 'http' }>, timeoutMs: number): Promise<Outcome> {
  return new Promise((resolve) => {
    let done = false;
    let status = 0;
    let body = '';
    const finish = (o: Partial<Outcome>) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      req.destroy();
      resolve({ status, timedOut: false, blocked: false, body: body.slice(0, EXCERPT), ...o });
    };
    const headers: Record<string, string | number> = { ...c.headers };
    if (c.body) headers['Content-Length'] = c.body.length;
    let req: ReturnType<typeof request>;
    try {
      req = request({ socketPath, method: c.method, path: c.path, headers, agent: false });
    } catch (err) {
      // node:http refused to send it (e.g. a method token it rejects): nothing reached the daemon.
      resolve({ status: 0, timedOut: false, blocked: false, body: '', error: `client: ${(err as Error).message}` });
      return;
    }
    const timer = setTimeout(() => {
      if (status && c.mayBlock) finish({ blocked: true });
      else finish({ timedOut: true });
    }, timeoutMs);
    req.on('response', (res) => {
      status = res.statusCode ?? 0;
      // Streams (events, attach, follow) never end by themselves; the status is what we check.
      if (c.mayBlock && status < 300) return finish({ blocked: true });
      res.setEncoding('latin1');
      res.on('data', (d: string) => {
        if (body.length < EXCERPT) body += d;
      });
      res.on('end', () => finish({}));
      res.on('error', (err) => finish({ error: err.message }));
    });
    req.on('upgrade', (res, socket) => {
      status = res.statusCode ?? 101;
      socket.destroy();
      finish({ blocked: true });
    });
    req.on('error', (err) => finish({ error: err.message }));
    req.end(c.body);
  });
}

function sendRaw(socketPath: string, c: Extract<FuzzCase, { kind: 'raw' }>, timeoutMs: number): Promise<Outcome> {
  return new Promise((resolve) => {
    let done = false;
    let got = Buffer.alloc(0);
    const sock = connect(socketPath);
    const statusOf = () => {
      const m = /^HTTP\/1\.[01] (\d{3})/.exec(got.subarray(0, 20).toString('latin1'));
      return m ? Number(m[1]) : 0;
    };
    const finish = (o: Partial<Outcome>) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      sock.destroy();
      resolve({ status: statusOf(), timedOut: false, blocked: false, body: got.subarray(0, EXCERPT).toString('latin1'), ...o });
    };
    const timer = setTimeout(() => finish(statusOf() ? {} : { timedOut: true }), timeoutMs);
    sock.on('data', (d: Buffer) => {
      if (got.length < 4096) got = Buffer.concat([got, d]);
    });
    sock.on('close', () => finish({}));
    sock.on('error', (err) => finish({ error: err.message }));
    // Send, then half-close: a well-behaved server answers or closes, it does not wait for more.
    sock.end(c.bytes);
  });
}

export function sendCase(socketPath: string, c: FuzzCase, timeoutMs: number): Promise<Outcome> {
  return c.kind === 'http' ? sendHttp(socketPath, c, timeoutMs) : sendRaw(socketPath, c, timeoutMs);
}

/** How a case is shown in a finding: enough to reproduce it by hand. */
export function describeCase(c: FuzzCase): string {
  const show = (b: Buffer) => {
    const s = JSON.stringify(b.subarray(0, 200).toString('latin1'));
    return b.length > 200 ? `${s}... (${b.length} bytes)` : s;
  };
  if (c.kind === 'raw') return `raw ${show(c.bytes)}`;
  const path = c.path.length > 200 ? `${c.path.slice(0, 200)}... (${c.path.length} chars)` : c.path;
  const hdr = c.headers && Object.keys(c.headers).length ? ` headers=${JSON.stringify(c.headers)}` : '';
  return `${c.method} ${path}${hdr}${c.body ? ` body=${show(c.body)}` : ''}`;
}

export function ping(socketPath: string, timeoutMs = 5000): Promise<boolean> {
  return sendHttp(socketPath, { kind: 'http', label: 'ping', method: 'GET', path: '/_ping' }, timeoutMs).then((o) => o.status === 200 && o.body === 'OK');
}

/** Learns ids from successful creates so later cases hit real objects. */
function learn(ctx: FuzzContext, c: FuzzCase, o: Outcome): void {
  if (c.kind !== 'http') return;
  if (ctx.swarm && o.status === 200) learnSwarm(ctx, c, o);
  if (o.status !== 201 && !(o.status === 200 && c.method === 'PUT' && c.path.includes('/stacks/'))) return;
  let id: unknown;
  try {
    const b = JSON.parse(o.body) as { Id?: unknown; ID?: unknown; Name?: unknown };
    id = b.Id ?? b.ID ?? b.Name;
  } catch {
    return;
  }
  if (typeof id !== 'string') return;
  ctx.origin.set(id, describeCase(c));
  if (c.path.includes('/services/create')) {
    ctx.services.push(id);
    try {
      const name = (JSON.parse(c.body?.toString() ?? '') as { Name?: unknown }).Name;
      if (typeof name === 'string') ctx.serviceNames.set(id, name);
    } catch {
      // not JSON the daemon took: no name to keep
    }
  } else if (/\/(secrets|configs)\/create/.test(c.path)) {
    (c.path.includes('/secrets/') ? ctx.secrets : ctx.configs).push(id);
    try {
      const name = (JSON.parse(c.body?.toString() ?? '') as { Name?: unknown }).Name;
      if (typeof name === 'string') ctx.objectNames.set(id, name);
    } catch {
      // not JSON the daemon took: no name to keep
    }
  } else if (c.path.includes('/stacks/')) {
    const scope = /[?&]scope=cluster(&|$)/.test(c.path) ? 'cluster' : 'local';
    if (!ctx.stacks.some((s) => s.name === id && s.scope === scope)) ctx.stacks.push({ name: id, scope });
  } else if (c.path.includes('/containers/create')) ctx.containers.push(id);
  else if (c.path.includes('/networks/create')) ctx.networks.push(id);
  else if (c.path.includes('/volumes/create')) ctx.volumes.push(id);
  else if (/\/containers\/[^/]+\/exec/.test(c.path)) ctx.execs.push(id);
}

/** Ids and versions from the answers to swarm reads (the first object in an excerpt is enough). */
function learnSwarm(ctx: FuzzContext, c: Extract<FuzzCase, { kind: 'http' }>, o: Outcome): void {
  const path = c.path.split('?')[0]!;
  const id = /"ID":"([a-z0-9]{25})"/.exec(o.body)?.[1];
  const ver = /"Version":\{"Index":(\d+)\}/.exec(o.body)?.[1];
  const push = (xs: string[], x: string | undefined) => {
    if (x && !xs.includes(x)) xs.push(x);
  };
  if (/\/nodes(\/[^/]+)?$/.test(path)) {
    push(ctx.nodes, id);
    if (id && ver) ctx.versions.set(id, Number(ver));
  } else if (/\/tasks$/.test(path)) push(ctx.tasks, id);
  else if (/\/(services|secrets|configs)\/[^/]+$/.test(path) && id && ver) ctx.versions.set(id, Number(ver));
  else if (/\/swarm$/.test(path) && ver) ctx.versions.set('swarm', Number(ver));
}

async function cleanupCreated(socketPath: string, ctx: FuzzContext, timeoutMs: number): Promise<void> {
  const del = (path: string) => sendHttp(socketPath, { kind: 'http', label: 'cleanup', method: 'DELETE', path }, timeoutMs).catch(() => undefined);
  for (const id of ctx.services) await del(`/v1.41/services/${id}`);
  for (const id of ctx.secrets) await del(`/v1.41/secrets/${id}`);
  for (const id of ctx.configs) await del(`/v1.41/configs/${id}`);
  for (const s of ctx.stacks) await del(`/v1.41/stacks/${s.name}?volumes=1${s.scope === 'cluster' ? '&scope=cluster' : ''}`);
  for (const id of ctx.containers) await del(`/v1.41/containers/${id}?force=1&v=1`);
  for (const id of ctx.networks) await del(`/v1.41/networks/${id}`);
  for (const id of ctx.volumes) await del(`/v1.41/volumes/${id}?force=1`);
}

export async function fuzz(opts: FuzzOptions): Promise<Report> {
  const seed = opts.seed ?? 1;
  const timeoutMs = opts.timeoutMs ?? 5000;
  const maxRequests = opts.requests ?? (opts.seconds ? Infinity : 2000);
  const deadline = opts.seconds ? Date.now() + opts.seconds * 1000 : Infinity;
  const rng = prng(seed);
  const ctx = newContext(opts.image ?? 'busybox', seed, !!opts.swarm);
  const report: Report = { seed, requests: 0, elapsedMs: 0, byStatus: {}, byLabel: {}, findings: [], known: [], blocked: 0, crashed: false };
  const start = Date.now();
  let index = 0;
  const known = [...(opts.known ?? []), ...REFERENCE_5XX, ...(opts.swarm ? [] : PLAIN_REFERENCE_5XX)];
  const record = (f: Finding) => {
    const id = /\/(?:containers|exec|networks|volumes)\/([0-9a-f]{64})\b/.exec(f.request)?.[1] ?? /\/(?:services|secrets|configs)\/([a-z0-9]{25})\b/.exec(f.request)?.[1];
    if (id && ctx.origin.has(id)) f.createdBy = ctx.origin.get(id);
    const k = known.find((kf) => kf.match(f));
    if (k) report.known.push({ ...f, reason: k.reason });
    else report.findings.push(f);
  };

  const worker = async () => {
    while (!report.crashed && index < maxRequests && Date.now() < deadline) {
      const i = index++;
      // Cases are generated in order from one PRNG, so a seed gives the same sequence of requests
      // (learned ids may differ in timing under concurrency; use --concurrency 1 for exact replay).
      const c = generateCase(rng, ctx);
      const o = await sendCase(opts.socketPath, c, timeoutMs);
      report.requests++;
      const base = c.label.split(':')[0]!;
      report.byLabel[base] = (report.byLabel[base] ?? 0) + 1;
      report.byStatus[o.status || (o.timedOut ? 'timeout' : 'none')] = (report.byStatus[o.status || (o.timedOut ? 'timeout' : 'none')] ?? 0) + 1;
      if (o.blocked) report.blocked++;
      learn(ctx, c, o);
      if (o.status >= 500) record({ type: '5xx', index: i, label: c.label, status: o.status, request: describeCase(c), response: o.body });
      if (o.timedOut) record({ type: 'timeout', index: i, label: c.label, request: describeCase(c), response: o.body });
      if (o.timedOut || (o.status === 0 && o.error) || i % 100 === 99) {
        if (!(await ping(opts.socketPath))) {
          report.crashed = true;
          report.findings.push({ type: 'crash', index: i, label: c.label, request: describeCase(c), response: o.error });
        }
      }
    }
  };
  await Promise.all(Array.from({ length: opts.concurrency ?? 4 }, worker));
  if (!report.crashed && !(await ping(opts.socketPath))) {
    report.crashed = true;
    report.findings.push({ type: 'crash', index, label: 'after-run', request: 'GET /_ping' });
  }
  if (!report.crashed) await cleanupCreated(opts.socketPath, ctx, timeoutMs);
  report.elapsedMs = Date.now() - start;
  return report;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const { values } = parseArgs({
    options: {
      socket: { type: 'string', default: '/var/run/engine.sock' },
      seconds: { type: 'string' },
      requests: { type: 'string' },
      seed: { type: 'string', default: '1' },
      image: { type: 'string', default: 'busybox' },
      concurrency: { type: 'string', default: '4' },
      timeout: { type: 'string', default: '5000' },
      swarm: { type: 'boolean', default: false },
    },
  });
  const report = await fuzz({
    socketPath: values.socket,
    seconds: values.seconds ? Number(values.seconds) : undefined,
    requests: values.requests ? Number(values.requests) : undefined,
    seed: Number(values.seed),
    image: values.image,
    concurrency: Number(values.concurrency),
    timeoutMs: Number(values.timeout),
    swarm: values.swarm,
    known: values.swarm ? SWARM_REFERENCE_5XX : undefined,
  });
  console.log(JSON.stringify(report, null, 2));
  process.exitCode = report.crashed || report.findings.length ? 1 : 0;
}

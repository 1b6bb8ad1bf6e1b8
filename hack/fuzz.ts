// Throws seeded, reproducible malformed requests at a running engined and reports what should never
// happen on bad input: a 5xx, a request that hangs past its deadline, or a daemon that stops
// answering /_ping. Well-formed HTTP goes through node:http; malformed HTTP through raw sockets.
//   node_modules/.bin/node hack/fuzz.ts --socket /var/run/engine.sock [--seconds 30] [--requests N] [--seed 1] [--image busybox]
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
  counter: number;
  /** id -> the request that created it, so a finding on a later request can be replayed. */
  origin: Map<string, string>;
}

export function newContext(image: string, seed: number): FuzzContext {
  return { image, prefix: `fz${seed}x${Date.now().toString(36)}`, containers: [], networks: [], volumes: [], execs: [], counter: 0, origin: new Map() };
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
  // Malformed HTTP through a raw socket.
  [3, (rng) => ({ kind: 'raw', label: 'raw-random-bytes', bytes: rng.bytes(1 + rng.int(4096)) })],
  [6, (rng, ctx) => rawMalformed(rng, ctx)],
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

/** The next case for this PRNG state. */
export function generateCase(rng: Rng, ctx: FuzzContext): FuzzCase {
  let r = rng.int(TOTAL_WEIGHT);
  for (const [w, gen] of GENERATORS) {
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
  if (c.kind !== 'http' || o.status !== 201) return;
  let id: unknown;
  try {
    id = (JSON.parse(o.body) as { Id?: unknown; Name?: unknown }).Id ?? (JSON.parse(o.body) as { Name?: unknown }).Name;
  } catch {
    return;
  }
  if (typeof id !== 'string') return;
  ctx.origin.set(id, describeCase(c));
  if (c.path.includes('/containers/create')) ctx.containers.push(id);
  else if (c.path.includes('/networks/create')) ctx.networks.push(id);
  else if (c.path.includes('/volumes/create')) ctx.volumes.push(id);
  else if (/\/containers\/[^/]+\/exec/.test(c.path)) ctx.execs.push(id);
}

async function cleanupCreated(socketPath: string, ctx: FuzzContext, timeoutMs: number): Promise<void> {
  const del = (path: string) => sendHttp(socketPath, { kind: 'http', label: 'cleanup', method: 'DELETE', path }, timeoutMs).catch(() => undefined);
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
  const ctx = newContext(opts.image ?? 'busybox', seed);
  const report: Report = { seed, requests: 0, elapsedMs: 0, byStatus: {}, byLabel: {}, findings: [], known: [], blocked: 0, crashed: false };
  const start = Date.now();
  let index = 0;
  const record = (f: Finding) => {
    const id = /\/(?:containers|exec|networks|volumes)\/([0-9a-f]{64})\b/.exec(f.request)?.[1];
    if (id && ctx.origin.has(id)) f.createdBy = ctx.origin.get(id);
    const k = opts.known?.find((kf) => kf.match(f));
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
  });
  console.log(JSON.stringify(report, null, 2));
  process.exitCode = report.crashed || report.findings.length ? 1 : 0;
}

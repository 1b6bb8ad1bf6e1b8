// POST /build's query, read and checked as the reference does before any output: the tags, the
// JSON-valued parameters, the options the classic builder refuses on Linux, and the HostConfig
// every RUN container gets.
import type { FastifyRequest } from 'fastify';
import { invalidArgument } from '../../lib/errors.ts';
import type { BuildOptions } from '../../lib/build-ports.ts';
import { formatReference, parseReference, withTag } from '../../lib/reference.ts';
import { apiVersionNumber, qBool, qList, qStr, queryOf, type Query } from '../images/query.ts';

export interface BuildRequest {
  options: BuildOptions;
  /** Fully normalised references to tag the result with. */
  tags: string[];
  quiet: boolean;
}

export function parseBuildRequest(req: FastifyRequest, experimental: boolean): BuildRequest {
  const q = queryOf(req);
  const version = apiVersionNumber(req);
  const builder = qStr(q, 'version') ?? '';
  if (builder === '2') throw invalidArgument('buildkit is not enabled on daemon');
  if (builder !== '' && builder !== '1') throw invalidArgument(`invalid version ${builder}`);
  if (qStr(q, 'remote')) throw invalidArgument('remote build contexts are not supported: send the context as the request body');
  if (qBool(q, 'squash') && !experimental) throw invalidArgument('squash is only supported with experimental mode');
  if (qList(q, 'securityopt').length) throw invalidArgument('The daemon on this platform does not support setting security options on build');
  const isolation = qStr(q, 'isolation') ?? '';
  if (isolation !== '' && isolation.toLowerCase() !== 'default') throw invalidArgument(`Unsupported isolation: ${JSON.stringify(isolation)}`);

  const forceRemove = qBool(q, 'forcerm');
  const rmGiven = qStr(q, 'rm');
  const remove = forceRemove || (rmGiven === undefined || rmGiven === '' ? true : qBool(q, 'rm'));
  const options: BuildOptions = {
    dockerfile: qStr(q, 'dockerfile') || 'Dockerfile',
    buildArgs: jsonParam(q, 'buildargs', 'error reading build args', isArgMap) ?? {},
    labels: jsonParam(q, 'labels', 'error reading labels', isStringMap) ?? {},
    noCache: qBool(q, 'nocache'),
    remove,
    forceRemove,
    pull: qBool(q, 'pull'),
    target: qStr(q, 'target') ?? '',
    platform: version >= 1.32 ? (qStr(q, 'platform') ?? '') : '',
    cacheFrom: jsonParam(q, 'cachefrom', 'error reading cache-from', isStringList) ?? [],
    hostConfig: hostConfigOf(q),
  };
  if (options.platform && !/^linux(\/|$)/.test(options.platform)) {
    throw invalidArgument(`"${options.platform}": unsupported platform: only linux images can be built here`);
  }
  return { options, tags: qList(q, 't').map(buildTag), quiet: qBool(q, 'q') };
}

/** A `t` value as the reference's tagger reads it: a name with an optional tag, never a digest. */
function buildTag(t: string): string {
  const ref = parseReference(t);
  if (ref.digest) throw invalidArgument('build tag cannot contain a digest');
  return formatReference(ref.tag === undefined ? withTag(ref, 'latest') : ref);
}

function jsonParam<T>(q: Query, key: string, what: string, check: (v: unknown) => v is T): T | undefined {
  const raw = qStr(q, key);
  if (raw === undefined || raw === '') return undefined;
  let v: unknown;
  try {
    v = JSON.parse(raw);
  } catch (err) {
    throw invalidArgument(`${what}: ${(err as Error).message}`);
  }
  if (v === null) return undefined;
  if (!check(v)) throw invalidArgument(`${what}: json: cannot unmarshal ${typeName(v)} into the expected type`);
  return v;
}

const typeName = (v: unknown): string => (Array.isArray(v) ? 'array' : v === null ? 'null' : typeof v === 'object' ? 'object' : typeof v);
const isObject = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);
const isStringMap = (v: unknown): v is Record<string, string> => isObject(v) && Object.values(v).every((x) => typeof x === 'string');
const isArgMap = (v: unknown): v is Record<string, string | null> => isObject(v) && Object.values(v).every((x) => typeof x === 'string' || x === null);
const isStringList = (v: unknown): v is string[] => Array.isArray(v) && v.every((x) => typeof x === 'string');

function intParam(q: Query, key: string): number | undefined {
  const raw = qStr(q, key);
  if (raw === undefined || raw === '') return undefined;
  if (!/^-?\d+$/.test(raw)) throw invalidArgument(`strconv.ParseInt: parsing ${JSON.stringify(raw)}: invalid syntax`);
  return Number(raw);
}

/** The HostConfig of each RUN container: network, extra hosts, /dev/shm and resource limits. */
function hostConfigOf(q: Query): Record<string, unknown> {
  const h: Record<string, unknown> = {};
  const mode = qStr(q, 'networkmode') ?? '';
  if (mode !== '' && mode !== 'default') h.NetworkMode = mode;
  const hosts = qList(q, 'extrahosts');
  if (hosts.length) h.ExtraHosts = hosts;
  const ints: Array<[string, string]> = [
    ['shmsize', 'ShmSize'], ['memory', 'Memory'], ['memswap', 'MemorySwap'], ['cpushares', 'CpuShares'],
    ['cpuperiod', 'CpuPeriod'], ['cpuquota', 'CpuQuota'],
  ];
  for (const [key, field] of ints) {
    const v = intParam(q, key);
    if (v) h[field] = v;
  }
  const strs: Array<[string, string]> = [['cpusetcpus', 'CpusetCpus'], ['cpusetmems', 'CpusetMems'], ['cgroupparent', 'CgroupParent']];
  for (const [key, field] of strs) {
    const v = qStr(q, key);
    if (v) h[field] = v;
  }
  const ulimits = jsonParam(q, 'ulimits', 'error reading ulimit settings', (v): v is unknown[] => Array.isArray(v));
  if (ulimits?.length) h.Ulimits = ulimits;
  return h;
}

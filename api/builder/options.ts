// POST /build's query, read and checked as the reference does before any output: the tags, the
// JSON-valued parameters, the options the classic builder refuses on Linux, and the HostConfig
// every RUN container gets.
import * as z from 'zod';
import { invalidArgument } from '../../lib/errors.ts';
import type { BuildOptions } from '../../lib/ports/build.ts';
import { formatReference, parseReference, withTag } from '../../lib/reference.ts';
import { boolValue, first, q } from '../request.ts';

export interface BuildRequest {
  options: BuildOptions;
  /** Fully normalised references to tag the result with. */
  tags: string[];
  quiet: boolean;
  /** `version=2`: progress as BuildKit's trace messages (the classic builder still runs it). */
  buildkit: boolean;
}

/**
 * A JSON-valued parameter: absent, empty or `null` is undefined; bad JSON or the wrong shape is
 * refused with `what` as the reference prefixes its decoder's error (a 400).
 */
function jsonQ<T>(what: string, check: (v: unknown) => v is T) {
  return z.preprocess(first, z.string().optional()).transform((raw, ctx): T | undefined => {
    if (raw === undefined || raw === '') return undefined;
    let v: unknown;
    try {
      v = JSON.parse(raw);
    } catch (err) {
      ctx.addIssue({ code: 'custom', message: `${what}: ${(err as Error).message}`, input: raw });
      return z.NEVER;
    }
    if (v === null) return undefined;
    if (!check(v)) {
      ctx.addIssue({ code: 'custom', message: `${what}: json: cannot unmarshal ${typeName(v)} into the expected type`, input: raw });
      return z.NEVER;
    }
    return v;
  });
}

const typeName = (v: unknown): string => (Array.isArray(v) ? 'array' : v === null ? 'null' : typeof v === 'object' ? 'object' : typeof v);
const isObject = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);
const isStringMap = (v: unknown): v is Record<string, string> => isObject(v) && Object.values(v).every((x) => typeof x === 'string');
const isArgMap = (v: unknown): v is Record<string, string | null> => isObject(v) && Object.values(v).every((x) => typeof x === 'string' || x === null);
const isStringList = (v: unknown): v is string[] => Array.isArray(v) && v.every((x) => typeof x === 'string');
const isList = (v: unknown): v is unknown[] => Array.isArray(v);

/**
 * POST /build's query as the reference reads it: `t`, `extrahosts` and `securityopt` every value,
 * the rest the first; memory and CPU limits Int64ValueOrZero (a bad one is 0); shmsize strconv
 * ParseInt (refused in Go's words, a 400 here as every bad input is).
 */
export const buildQuery = z.looseObject({
  t: q.list(),
  dockerfile: q.str(),
  q: q.bool(),
  nocache: q.bool(),
  rm: q.str(),
  forcerm: q.bool(),
  pull: q.bool(),
  squash: q.bool(),
  memory: q.intOr(0),
  memswap: q.intOr(0),
  cpushares: q.intOr(0),
  cpuperiod: q.intOr(0),
  cpuquota: q.intOr(0),
  shmsize: q.parseInt(),
  cpusetcpus: q.str(),
  cpusetmems: q.str(),
  cgroupparent: q.str(),
  networkmode: q.str(),
  target: q.str(),
  remote: q.str(),
  platform: q.str(),
  isolation: q.str(),
  version: q.str(),
  // A BuildKit session (POST /session) the build belongs to.
  session: q.str(),
  extrahosts: q.list(),
  securityopt: q.list(),
  buildargs: jsonQ('error reading build args', isArgMap),
  labels: jsonQ('error reading labels', isStringMap),
  cachefrom: jsonQ('error reading cache-from', isStringList),
  ulimits: jsonQ('error reading ulimit settings', isList),
});
export type BuildQuery = z.output<typeof buildQuery>;

/** The checks the reference makes before reading the context; `version` is the request's API version as a number. */
export function parseBuildRequest(query: BuildQuery, version: number, experimental: boolean): BuildRequest {
  const builder = query.version ?? '';
  if (builder !== '' && builder !== '1' && builder !== '2') throw invalidArgument(`invalid version ${builder}`);
  // The context over a BuildKit session's file sync (the docker CLI's BuildKit builder) is not read:
  // the classic builder takes its context from the request body (docs/api-extensions.md).
  if (query.remote === 'client-session') throw invalidArgument('remote=client-session is not supported: this daemon does not read a build context over the session\'s file sync; send the context as the request body (DOCKER_BUILDKIT=0 with the docker CLI)');
  if (query.remote) throw invalidArgument('remote build contexts are not supported: send the context as the request body');
  if (query.squash && !experimental) throw invalidArgument('squash is only supported with experimental mode');
  if (query.securityopt.length) throw invalidArgument('The daemon on this platform does not support setting security options on build');
  const isolation = query.isolation ?? '';
  if (isolation !== '' && isolation.toLowerCase() !== 'default') throw invalidArgument(`Unsupported isolation: ${JSON.stringify(isolation)}`);

  // rm: forcerm wins; absent or empty is true (API >= 1.12); otherwise BoolValue.
  const forceRemove = query.forcerm;
  const rm = query.rm;
  const remove = forceRemove || rm === undefined || rm === '' || boolValue(rm);
  const options: BuildOptions = {
    dockerfile: query.dockerfile || 'Dockerfile',
    buildArgs: query.buildargs ?? {},
    labels: query.labels ?? {},
    noCache: query.nocache,
    remove,
    forceRemove,
    pull: query.pull,
    target: query.target ?? '',
    platform: version >= 1.32 ? (query.platform ?? '') : '',
    cacheFrom: query.cachefrom ?? [],
    hostConfig: hostConfigOf(query),
  };
  if (options.platform && !/^linux(\/|$)/.test(options.platform)) {
    throw invalidArgument(`"${options.platform}": unsupported platform: only linux images can be built here`);
  }
  // Empty `t` entries are skipped, as the reference skips them.
  return { options, tags: query.t.filter((t) => t !== '').map(buildTag), quiet: query.q, buildkit: builder === '2' };
}

/** A `t` value as the reference's tagger reads it: a name with an optional tag, never a digest. */
function buildTag(t: string): string {
  const ref = parseReference(t);
  if (ref.digest) throw invalidArgument('build tag cannot contain a digest');
  return formatReference(ref.tag === undefined ? withTag(ref, 'latest') : ref);
}

/** The HostConfig of each RUN container: network, extra hosts, /dev/shm and resource limits. */
function hostConfigOf(query: BuildQuery): Record<string, unknown> {
  const h: Record<string, unknown> = {};
  const mode = query.networkmode ?? '';
  if (mode !== '' && mode !== 'default') h.NetworkMode = mode;
  if (query.extrahosts.length) h.ExtraHosts = query.extrahosts;
  const ints: Array<[number | undefined, string]> = [
    [query.shmsize, 'ShmSize'], [query.memory, 'Memory'], [query.memswap, 'MemorySwap'], [query.cpushares, 'CpuShares'],
    [query.cpuperiod, 'CpuPeriod'], [query.cpuquota, 'CpuQuota'],
  ];
  for (const [v, field] of ints) if (v) h[field] = v;
  const strs: Array<[string | undefined, string]> = [[query.cpusetcpus, 'CpusetCpus'], [query.cpusetmems, 'CpusetMems'], [query.cgroupparent, 'CgroupParent']];
  for (const [v, field] of strs) if (v) h[field] = v;
  if (query.ulimits?.length) h.Ulimits = query.ulimits;
  return h;
}

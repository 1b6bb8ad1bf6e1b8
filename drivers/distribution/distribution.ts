// createDistribution: the registry client of the daemon (pull, push, login check, distribution
// inspect), built from the daemon's registry options.
import { tmpdir } from 'node:os';
import { EngineError, invalidArgument } from '../../lib/errors.ts';
import { DEFAULT_DOMAIN, parseReference } from '../../lib/reference.ts';
import { fetchToken, parseChallenges, basicHeader, credentialsOf } from './auth.ts';
import { RegistryClient, type Endpoint } from './client.ts';
import type { DistContext } from './context.ts';
import { Limiter } from './limiter.ts';
import { parseManifest, normalizePlatform } from './manifest.ts';
import { fetchBlob, fetchManifest, translatePullError, pullImage } from './pull.ts';
import { pushImage } from './push.ts';
import { createHostMatcher, createInsecureMatcher, proxySettings } from './registry-config.ts';
import { Transport } from './transport.ts';
import type { AuthConfig, AuthResult, Distribution, DistributionInspect, DistributionOptions } from './types.ts';
import type { SearchResult } from '../../lib/ports/registry.ts';

export interface DistributionDriver extends Distribution {
  /** Apply the reloadable registry options (SIGHUP); pulls and pushes under way keep what they had. */
  reconfigure(o: ReloadableRegistryOptions): void;
  search(term: string, limit: number, auth: AuthConfig | undefined, signal?: AbortSignal): Promise<SearchResult[]>;
  /** Close idle registry connections (shutdown, tests). */
  close(): void;
}

export type { SearchResult };

export interface ReloadableRegistryOptions {
  insecureRegistries: string[];
  registryMirrors: string[];
  allowNondistributable: string[];
  maxConcurrentDownloads: number;
  maxConcurrentUploads: number;
  maxDownloadAttempts: number;
}

const HUB_NAMES = new Set(['', 'docker.io', 'index.docker.io', 'registry-1.docker.io', 'registry.hub.docker.com']);

/** The registry a login is for: `docker.io` for the Hub however it is spelled, else host[:port]. */
export function loginRegistry(serverAddress: string): string {
  const s = serverAddress.trim().replace(/^[a-z]+:\/\//i, '').replace(/\/.*$/, '').toLowerCase();
  return HUB_NAMES.has(s) ? DEFAULT_DOMAIN : s;
}

export function createDistribution(opts: DistributionOptions): DistributionDriver {
  const log = opts.log.child({ component: 'distribution' });
  const transport = new Transport();
  const client = new RegistryClient({
    transport,
    insecure: createInsecureMatcher(opts.insecureRegistries),
    certsDir: opts.certsDir,
    mirrors: opts.registryMirrors,
    proxies: proxySettings(opts.proxies),
    timeoutMs: opts.requestTimeoutMs ?? 60_000,
    log,
  });
  const ctx: DistContext = {
    log,
    client,
    layers: opts.layers,
    platform: normalizePlatform(opts.platform),
    downloads: new Limiter(opts.maxConcurrentDownloads),
    uploads: new Limiter(opts.maxConcurrentUploads),
    maxDownloadAttempts: Math.max(1, opts.maxDownloadAttempts),
    retryDelayMs: opts.retryDelayMs ?? 5000,
    stallTimeoutMs: opts.stallTimeoutMs ?? 60_000,
    tmpDir: opts.tmpDir ?? tmpdir(),
    certsDir: opts.certsDir,
    nondistributable: createHostMatcher(opts.allowNondistributable),
    shared: new Map(),
    blobRepos: new Map(),
    foreign: new Map(),
    compressed: new Map(),
  };

  async function checkAuth(serverAddress: string, auth: AuthConfig, signal = AbortSignal.timeout(60_000)): Promise<AuthResult> {
    const registry = loginRegistry(serverAddress || auth.serveraddress || '');
    const eps = await client.endpoints(registry, { pull: false });
    let lastErr: unknown;
    for (const ep of eps) {
      let challenges;
      try {
        challenges = await client.ping(ep, signal);
      } catch (err) {
        if (signal.aborted) throw err;
        lastErr = err;
        continue;
      }
      return loginOn(ep, challenges, auth, signal);
    }
    throw client.finalError(eps, lastErr);
  }

  async function loginOn(ep: Endpoint, challenges: ReturnType<typeof parseChallenges>, auth: AuthConfig, signal: AbortSignal): Promise<AuthResult> {
    const url = new URL('/v2/', ep.base);
    const bearer = challenges.find((c) => c.scheme === 'bearer');
    const headers: Record<string, string> = {};
    let identityToken: string | undefined;
    if (bearer) {
      const t = await fetchToken({
        realm: bearer.params.realm ?? '', service: bearer.params.service, scopes: [], auth, offline: true,
        send: (method, u, h, body) => client.send(method, u, ep, h, body, signal),
      }).catch((err: unknown) => {
        throw new EngineError('Unauthorized', err instanceof Error ? err.message : String(err));
      });
      headers.Authorization = `Bearer ${t.token}`;
      identityToken = t.refreshToken;
    } else if (challenges.some((c) => c.scheme === 'basic')) {
      const creds = credentialsOf(auth);
      if (creds) headers.Authorization = basicHeader(creds);
    } else {
      return { Status: 'Login Succeeded' };
    }
    const res = await client.send('GET', url, ep, headers, undefined, signal);
    res.discard();
    if (res.status !== 200) {
      throw new EngineError('Unauthorized', `login attempt to ${url.href} failed with status: ${res.status} ${res.statusText}`);
    }
    return identityToken ? { Status: 'Login Succeeded', IdentityToken: identityToken } : { Status: 'Login Succeeded' };
  }

  async function inspectDistribution(refStr: string, auth: AuthConfig | undefined, signal = AbortSignal.timeout(60_000)): Promise<DistributionInspect> {
    const ref = parseReference(refStr);
    const s = await client.open(ref.domain, ref.path, auth, ['pull'], signal, { pull: true });
    try {
      const m = await fetchManifest(s, ref.path, ref.digest ?? ref.tag ?? 'latest', signal);
      const parsed = parseManifest(m.contentType, m.body);
      const Descriptor = { mediaType: parsed.mediaType, digest: m.digest, size: m.body.length };
      if (parsed.kind === 'index') {
        const Platforms = parsed.index.manifests
          .filter((d) => d.platform && d.platform.os !== 'unknown')
          .map((d) => ({ ...d.platform! }));
        return { Descriptor, Platforms };
      }
      if (parsed.kind === 'schema1') return { Descriptor, Platforms: [] };
      const config = JSON.parse((await fetchBlob(s, ref.path, parsed.manifest.config.digest, signal)).toString('utf8')) as {
        os?: string; architecture?: string; variant?: string; 'os.version'?: string; 'os.features'?: string[];
      };
      const p: DistributionInspect['Platforms'][number] = { architecture: config.architecture ?? '', os: config.os ?? '' };
      if (config.variant) p.variant = config.variant;
      if (config['os.version']) p['os.version'] = config['os.version'];
      if (config['os.features']) p['os.features'] = config['os.features'];
      return { Descriptor, Platforms: [p] };
    } catch (err) {
      throw translatePullError(err, ref);
    }
  }

  async function listTags(repo: string, auth: AuthConfig | undefined, signal = AbortSignal.timeout(60_000)): Promise<string[]> {
    const ref = parseReference(repo);
    if (ref.tag || ref.digest) throw invalidArgument('tag or digest given where a repository is expected');
    const s = await client.open(ref.domain, ref.path, auth, ['pull'], signal, { pull: true });
    const tags: string[] = [];
    let next: string | undefined = `/v2/${ref.path}/tags/list`;
    for (let page = 0; next && page < 100; page++) {
      const res = await s.ok('GET', next, { signal }).catch((err: unknown) => {
        throw translatePullError(err, ref);
      });
      const body = JSON.parse((await res.buffer()).toString('utf8')) as { tags?: string[] | null };
      tags.push(...(body.tags ?? []));
      const link = /<([^>]+)>;\s*rel="?next"?/.exec(res.header('link') ?? '');
      next = link?.[1];
    }
    return tags;
  }

  /**
   * GET /v1/search on the index a term names (`host[:port]/query`, else Docker Hub's index): the
   * one v1 call a daemon still makes (spec rule 3). HTTPS first, then HTTP for insecure registries.
   */
  async function search(term: string, limit: number, auth: AuthConfig | undefined, signal = AbortSignal.timeout(60_000)): Promise<SearchResult[]> {
    const slash = term.indexOf('/');
    const first = slash > 0 ? term.slice(0, slash) : '';
    const hasHost = first !== '' && (first.includes('.') || first.includes(':') || first === 'localhost');
    const index = hasHost ? first : 'index.docker.io';
    const query = hasHost ? term.slice(slash + 1) : term;
    const eps = index === 'index.docker.io'
      ? [{ base: new URL('https://index.docker.io'), tls: {}, mirror: false, registry: DEFAULT_DOMAIN }]
      : await client.endpoints(index, { pull: false });
    let lastErr: unknown;
    for (const ep of eps) {
      const url = new URL('/v1/search', ep.base);
      url.searchParams.set('q', query);
      url.searchParams.set('n', String(limit));
      try {
        const headers: Record<string, string> = {};
        const creds = auth ? credentialsOf(auth) : null;
        if (creds) headers.authorization = basicHeader(creds);
        const res = await client.send('GET', url, ep, headers, undefined, signal);
        const body = await res.buffer(16 << 20);
        if (res.status === 404) throw invalidArgument(`Unexpected status code 404`);
        if (res.status !== 200) throw new EngineError('Internal', `Unexpected status code ${res.status}`);
        const parsed = JSON.parse(body.toString('utf8')) as { results?: SearchResult[] | null };
        return (parsed.results ?? []).map((r) => ({
          star_count: Number(r.star_count ?? 0),
          is_official: !!r.is_official,
          name: String(r.name ?? ''),
          is_automated: !!r.is_automated,
          description: String(r.description ?? ''),
        }));
      } catch (err) {
        if (signal.aborted) throw err;
        lastErr = err;
      }
    }
    if (lastErr instanceof EngineError) throw lastErr;
    throw new EngineError('Internal', lastErr instanceof Error ? lastErr.message : String(lastErr));
  }

  return {
    search,
    pull: (ref, o) => pullImage(ctx, ref, o),
    push: (ref, image, o) => pushImage(ctx, ref, image, o),
    checkAuth,
    inspectDistribution,
    listTags,
    reconfigure(o) {
      client.ctx.insecure = createInsecureMatcher(o.insecureRegistries);
      client.ctx.mirrors = [...o.registryMirrors];
      ctx.nondistributable = createHostMatcher(o.allowNondistributable);
      if (o.maxConcurrentDownloads) ctx.downloads.setMax(o.maxConcurrentDownloads);
      if (o.maxConcurrentUploads) ctx.uploads.setMax(o.maxConcurrentUploads);
      if (o.maxDownloadAttempts) ctx.maxDownloadAttempts = o.maxDownloadAttempts;
    },
    close: () => transport.close(),
  };
}

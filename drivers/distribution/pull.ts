// Pull: resolve the manifest (mirrors first for docker.io, platform from an index), verify the
// config, download missing layers in parallel (daemon-wide limit, retries resuming with Range,
// one download per blob across concurrent pulls) and apply them into the layer store as they
// arrive: unpacking runs alongside the downloads where the store allows it, commits go bottom-up.
// The image's layers are leased from before the first look at the store until the pull ends (or
// until the caller has recorded the image), so no image removal takes them meanwhile, and a failed
// pull's layers are collected once the lease ends.
import { createHash, randomBytes, type Hash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { open, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { EngineError, internal, invalidArgument, isSystemError, notFound } from '../../lib/errors.ts';
import { familiarName, familiarRepository, formatReference, parseReference, repositoryName, type Reference } from '../../lib/reference.ts';
import type { ImageConfigBlob } from '../../lib/image-config.ts';
import { ChunkWriter } from '../storage/chunk-writer.ts';
import { chunksOf } from '../storage/chunks.ts';
import type { LayerInfo, LayerLease } from '../storage/types.ts';
import { isRetryable, registryError, RegistryError, type Session } from './client.ts';
import { rememberBlob, type DistContext, type DownloadEvents, type SharedDownload } from './context.ts';
import { LiveBlob } from './live-blob.ts';
import type { IndexEntry, PulledManifests } from '../../lib/image-target.ts';
import { formatPlatform, isForeign, MANIFEST_ACCEPT, parseManifest, parsePlatform, platformMatches, selectPlatform, type Descriptor, type ImageManifest } from './manifest.ts';
import { progressLine, shortDigest, statusLine, throttled } from './progress.ts';
import type { JsonMessage, Platform, PullOptions, PullResult } from './types.ts';

export const sha256 = (b: Buffer | string): string => `sha256:${createHash('sha256').update(b).digest('hex')}`;

export interface Resolved {
  session: Session;
  /** Digest of what the reference names (the index for a multi-platform tag). */
  digest: string;
  manifest: ImageManifest;
  manifestDigest: string;
  rawConfig: string;
  config: ImageConfigBlob;
  /** The manifest and index as kept with the image. */
  pulled: PulledManifests;
}

/**
 * Reference daemon wording for registry answers to a pull: the first registry error decides;
 * DENIED, MANIFEST_UNKNOWN and NAME_UNKNOWN are "not found", any other answer (UNAUTHORIZED
 * included) is an unclassified error, never a 401 — the CLI would take that as a cue to prompt
 * for a login.
 */
export function translatePullError(err: unknown, ref: Reference): unknown {
  if (!(err instanceof RegistryError)) return err instanceof EngineError && err.code === 'Unauthorized' ? internal(err.message, err) : err;
  const named = formatReference(ref);
  const first = err.codes[0]?.code;
  const cause = err.codes[0] ? `${err.codes[0].code.toLowerCase().replace(/_/g, ' ')}: ${err.codes[0].message}` : err.message;
  if (first === 'DENIED') {
    return notFound(`pull access denied for ${familiarRepository(repositoryName(ref))}, repository does not exist or may require 'docker login': ${cause}`, err);
  }
  if (first === 'MANIFEST_UNKNOWN') return notFound(`manifest for ${familiarName(named)} not found: ${cause}`, err);
  if (first === 'NAME_UNKNOWN') return notFound(`repository ${familiarRepository(repositoryName(ref))} not found: ${cause}`, err);
  if (err.code === 'Unauthorized' || err.code === 'PermissionDenied') return internal(cause, err);
  return err;
}

/**
 * A manifest by digest, or by tag as the reference daemon resolves one: HEAD for the digest (a
 * HEAD does not count against registry pull-rate limits), then GET by digest. A failed HEAD is
 * repeated as a GET by tag, whose body carries the registry's error details.
 */
export async function fetchManifest(s: Session, path: string, reference: string, signal: AbortSignal): Promise<{ body: Buffer; contentType?: string; digest: string }> {
  if (!reference.includes(':')) {
    const head = await s.request('HEAD', `/v2/${path}/manifests/${reference}`, { headers: { Accept: MANIFEST_ACCEPT }, signal });
    head.discard();
    const digest = head.header('docker-content-digest');
    if (head.status >= 200 && head.status < 300 && digest && /^sha256:[0-9a-f]{64}$/.test(digest)) {
      return fetchManifestBody(s, path, digest, signal);
    }
  }
  return fetchManifestBody(s, path, reference, signal);
}

async function fetchManifestBody(s: Session, path: string, reference: string, signal: AbortSignal): Promise<{ body: Buffer; contentType?: string; digest: string }> {
  const res = await s.ok('GET', `/v2/${path}/manifests/${reference}`, { headers: { Accept: MANIFEST_ACCEPT }, signal });
  const body = await res.buffer(4 << 20);
  const digest = sha256(body);
  if (reference.includes(':') && reference !== digest) {
    throw invalidArgument(`manifest verification failed for digest ${reference}`);
  }
  return { body, contentType: res.header('content-type'), digest };
}

export async function fetchBlob(s: Session, path: string, digest: string, signal: AbortSignal): Promise<Buffer> {
  const res = await s.ok('GET', `/v2/${path}/blobs/${digest}`, { signal, redirect: true });
  const body = await res.buffer(64 << 20);
  if (sha256(body) !== digest) throw invalidArgument(`blob ${digest} failed verification: digest mismatch`);
  return body;
}

function schema1Error(ref: Reference): Error {
  return invalidArgument(
    `[DEPRECATION NOTICE] Docker Image Format v1 and Docker Image manifest version 2, schema 1 support has been removed. ` +
      `Suggest the author of ${familiarName(formatReference(ref))} to upgrade the image to the OCI Format or Docker Image manifest v2, schema 2. ` +
      'More information at https://docs.docker.com/go/deprecated-image-specs/',
  );
}

/** Resolve ref → one image manifest and its verified config, on one session. */
export async function resolveImage(s: Session, ref: Reference, want: Platform, explicitPlatform: boolean, signal: AbortSignal): Promise<Resolved> {
  const top = await fetchManifest(s, ref.path, ref.digest ?? ref.tag ?? 'latest', signal);
  let parsed = parseManifest(top.contentType, top.body);
  let manifestDigest = top.digest;
  let manifestSize = top.body.length;
  let index: PulledManifests['index'];
  if (parsed.kind === 'index') {
    index = { mediaType: parsed.mediaType, digest: top.digest, size: top.body.length, manifests: parsed.index.manifests.map(indexEntry) };
    const pick = selectPlatform(parsed.index, want);
    const child = await fetchManifest(s, ref.path, pick.digest, signal);
    parsed = parseManifest(child.contentType ?? pick.mediaType, child.body);
    manifestDigest = child.digest;
    manifestSize = child.body.length;
    if (parsed.kind === 'index') throw invalidArgument('nested manifest lists are not supported');
  }
  if (parsed.kind === 'schema1') throw schema1Error(ref);
  const manifest = parsed.manifest;
  const rawConfig = (await fetchBlob(s, ref.path, manifest.config.digest, signal)).toString('utf8');
  let config: ImageConfigBlob;
  try {
    config = JSON.parse(rawConfig) as ImageConfigBlob;
  } catch {
    throw invalidArgument('invalid image config: not JSON');
  }
  const diffIds = config.rootfs?.diff_ids ?? [];
  if (diffIds.length !== manifest.layers.length) throw invalidArgument('layers from manifest don\'t match image configuration');
  if (explicitPlatform && config.os && config.architecture) {
    const actual = { os: config.os, architecture: config.architecture, variant: config.variant };
    if (!platformMatches(want, actual)) {
      throw notFound(`image with reference ${familiarName(formatReference(ref))} was found but does not match the specified platform: wanted ${formatPlatform(want)}, actual: ${formatPlatform(actual)}`);
    }
  }
  const contentSize = manifestSize + Buffer.byteLength(rawConfig) + manifest.layers.reduce((n, l) => n + (l.size || 0), 0);
  const pulled: PulledManifests = { manifest: { mediaType: parsed.mediaType, digest: manifestDigest, size: manifestSize }, contentSize, ...(index ? { index } : {}) };
  return { session: s, digest: top.digest, manifest, manifestDigest, rawConfig, config, pulled };
}

/** An index's entry as kept with the image: descriptor, platform, annotations. */
function indexEntry(d: Descriptor): IndexEntry {
  const p = d.platform;
  return {
    mediaType: d.mediaType,
    digest: d.digest,
    size: d.size,
    ...(p ? { platform: { os: p.os, architecture: p.architecture, ...(p.variant ? { variant: p.variant } : {}) } } : {}),
    ...(d.annotations ? { annotations: d.annotations } : {}),
  };
}

/** Open sessions (mirrors first) until one resolves the reference. */
export async function resolveAnywhere(ctx: DistContext, ref: Reference, auth: PullOptions['auth'], want: Platform, explicitPlatform: boolean, signal: AbortSignal): Promise<Resolved> {
  let lastErr: unknown;
  for await (const s of ctx.client.sessions(ref.domain, ref.path, auth, ['pull'], signal, { pull: true })) {
    if (s instanceof Error) throw translatePullError(lastErr instanceof RegistryError ? lastErr : s, ref);
    try {
      return await resolveImage(s, ref, want, explicitPlatform, signal);
    } catch (err) {
      if (signal.aborted || !s.endpoint.mirror) throw translatePullError(err, ref);
      ctx.log.info({ err, mirror: s.endpoint.base.href }, 'mirror failed, trying the next endpoint');
      lastErr = err;
    }
  }
  throw translatePullError(lastErr ?? internal('no registry endpoint'), ref);
}

export async function pullImage(ctx: DistContext, refStr: string, opts: PullOptions): Promise<PullResult> {
  const ref = parseReference(refStr);
  if (!ref.digest && !ref.tag) ref.tag = 'latest';
  const explicit = !!opts.platform;
  const want = opts.platform ? parsePlatform(opts.platform, ctx.platform) : ctx.platform;
  const emit = (m: JsonMessage) => {
    try {
      opts.onProgress(m);
    } catch {
      /* a broken progress consumer must not break the pull */
    }
  };
  const signal = opts.signal;

  const r = await resolveAnywhere(ctx, ref, opts.auth, want, explicit, signal);
  const registry = r.session.endpoint.registry;
  emit({ status: `Pulling from ${ref.path}`, id: ref.digest ?? ref.tag });

  const diffIds = r.config.rootfs.diff_ids;
  const chainIds: string[] = [];
  let parent: string | null = null;
  for (const d of diffIds) {
    parent = ctx.layers.chainIdOf(parent, d);
    chainIds.push(parent);
  }
  // Leased before looking: a layer found here cannot be removed under the pull.
  const lease = ctx.layers.lease();
  for (const c of chainIds) lease.add(c);
  let handedOver = false;
  try {
    const result = await pullLayers(ctx, ref, r, chainIds, lease, emit, signal);
    for (const d of r.manifest.layers) rememberBlob(ctx, d.digest, registry, ref.path);
    rememberBlob(ctx, r.manifest.config.digest, registry, ref.path);
    emit({ status: `Digest: ${r.digest}` });
    handedOver = !!opts.holdLayers;
    return {
      id: sha256(r.rawConfig),
      rawConfig: r.rawConfig,
      diffIds: [...diffIds],
      chainId: result.chainId,
      size: result.size,
      repoDigest: `${repositoryName(ref)}@${r.digest}`,
      manifests: r.pulled,
      release: handedOver ? () => lease.release() : () => {},
    };
  } catch (err) {
    throw translatePullError(err, ref);
  } finally {
    if (!handedOver) lease.release();
  }
}

interface Download {
  file: Promise<string>;
  /** Where the blob is spooled (complete once `file` resolves). */
  path: string;
  /** The blob as it downloads, when this pull started the download and the store unpacks early. */
  live?: LiveBlob;
  release(): void;
}

/**
 * Download the layers the store lacks and apply them, each as soon as its bytes arrive; commits
 * happen bottom-up (each apply waits for the one below). On failure every apply is stopped and
 * settled before returning, so nothing is committed after the caller lets go of the lease.
 */
async function pullLayers(
  ctx: DistContext, ref: Reference, r: Resolved, chainIds: string[], lease: LayerLease, emit: (m: JsonMessage) => void, signal: AbortSignal,
): Promise<{ chainId: string | null; size: number }> {
  const diffIds = r.config.rootfs.diff_ids;
  const descs = r.manifest.layers;
  let have = -1;
  for (let i = chainIds.length - 1; i >= 0; i--) {
    if (ctx.layers.has(chainIds[i]!)) {
      have = i;
      break;
    }
  }
  for (let i = 0; i <= have; i++) emit(statusLine(shortDigest(descs[i]!.digest), 'Already exists'));
  for (let i = have + 1; i < descs.length; i++) emit(statusLine(shortDigest(descs[i]!.digest), 'Pulling fs layer'));
  let size = 0;
  for (let i = 0; i <= have; i++) size += ctx.layers.get(chainIds[i]!)?.size ?? 0;

  const local = new AbortController();
  const onAbort = () => local.abort(signal.reason);
  signal.addEventListener('abort', onAbort, { once: true });
  if (signal.aborted) onAbort();
  const handles: Array<Download | undefined> = [];
  try {
    const live = ctx.layers.concurrentApply;
    for (let i = have + 1; i < descs.length; i++) {
      const d = descs[i]!;
      const id = shortDigest(d.digest);
      const events: DownloadEvents = {
        waiting: () => emit(statusLine(id, 'Waiting')),
        progress: (cur, total) => emit(progressLine(id, 'Downloading', cur, total)),
        retrying: (sec) => emit(statusLine(id, `Retrying in ${sec} second${sec === 1 ? '' : 's'}`)),
        verifying: () => emit(statusLine(id, 'Verifying Checksum')),
      };
      const h = attachDownload(ctx, r.session, ref.path, d, events, local.signal, live);
      h.file.then(() => emit(statusLine(id, 'Download complete')), () => {});
      handles[i] = h;
    }
    let failure: { err: unknown } | undefined;
    const applies: Array<Promise<LayerInfo>> = [];
    for (let i = have + 1; i < descs.length; i++) {
      const apply = applyOne(ctx, {
        desc: descs[i]!, diffId: diffIds[i]!, parent: i === 0 ? null : chainIds[i - 1]!,
        parentReady: applies.at(-1), download: handles[i]!, lease, signal: local.signal, emit,
      }).then((info) => {
        handles[i]!.release();
        handles[i] = undefined;
        return info;
      }, (err: unknown) => {
        failure ??= { err };
        local.abort(err);
        throw err;
      });
      applies.push(apply);
    }
    const settled = await Promise.allSettled(applies);
    if (failure) throw failure.err;
    for (const s of settled) if (s.status === 'fulfilled') size += s.value.size;
    return { chainId: chainIds.at(-1) ?? null, size };
  } catch (err) {
    local.abort(err);
    throw err;
  } finally {
    signal.removeEventListener('abort', onAbort);
    for (const h of handles) h?.release();
  }
}

interface LayerJob {
  desc: Descriptor;
  diffId: string;
  parent: string | null;
  /** The apply of the layer below, when this pull applies that one too. */
  parentReady?: Promise<unknown>;
  download: Download;
  lease: LayerLease;
  signal: AbortSignal;
  emit: (m: JsonMessage) => void;
}

/** Apply one layer: from its live download when there is one, else from the spooled file. */
async function applyOne(ctx: DistContext, job: LayerJob): Promise<LayerInfo> {
  const { desc: d, download: h, emit } = job;
  const id = shortDigest(d.digest);
  let downloaded = false;
  h.file.then(() => (downloaded = true), () => {});
  let total = d.size;
  let seen = 0;
  // Extracting is shown once the download is complete: before, the Downloading bar says more.
  const bar = throttled((cur) => emit(progressLine(id, 'Extracting', cur, total)));
  const onProgress = (n: number) => {
    seen = n;
    if (downloaded) bar.update(n);
  };
  const opts = { expectedDiffId: job.diffId, blobDigest: d.digest, blobSize: d.size, blobFile: h.path, parentReady: job.parentReady, lease: job.lease, onProgress, signal: job.signal };
  const fromFile = async (): Promise<LayerInfo> => {
    const file = await h.file;
    if (!total) total = (await stat(file)).size;
    seen = 0;
    return ctx.layers.applyLayer(job.parent, createReadStream(file, { highWaterMark: 1 << 20 }), opts);
  };
  let info: LayerInfo;
  if (h.live) {
    try {
      info = await ctx.layers.applyLayer(job.parent, h.live.stream, opts);
    } catch (err) {
      if (job.signal.aborted) throw err;
      // Bad bytes fail the unpacking before the download's own check: its verdict decides. A
      // failed download is the error; a restarted one voids what was unpacked, and the verified
      // file is applied instead. Only verified bytes that fail to unpack are this layer's fault.
      await h.file;
      if (!h.live.restarted) throw err;
      ctx.log.debug({ digest: d.digest }, 'download restarted; applying the layer from its file');
      info = await fromFile();
    }
  } else {
    info = await fromFile();
  }
  // The live stream ends only after verification, so this is settled, and 'Download complete' is out.
  await h.file;
  if (seen > 0) bar.flush(seen);
  if (isForeign(d.mediaType)) ctx.foreign.set(job.diffId, d);
  emit(statusLine(id, 'Pull complete'));
  return info;
}

/** Join the download of a blob in flight, or start it. Release when the file is no longer needed. */
function attachDownload(ctx: DistContext, s: Session, path: string, d: Descriptor, events: DownloadEvents, signal: AbortSignal, wantLive: boolean): Download {
  let dl = ctx.shared.get(d.digest);
  let live: LiveBlob | undefined;
  if (!dl) {
    const abort = new AbortController();
    const file = join(ctx.tmpDir, `engine-pull-${randomBytes(8).toString('hex')}`);
    const created: SharedDownload = { done: Promise.resolve(''), file, listeners: new Set(), refs: 0, finished: false, abort };
    // Only the pull that starts a download gets it live; others joining later read the file.
    if (wantLive) live = new LiveBlob();
    const fan: DownloadEvents = {
      waiting: () => created.listeners.forEach((l) => l.waiting()),
      progress: (c, t) => created.listeners.forEach((l) => l.progress(c, t)),
      retrying: (sec) => created.listeners.forEach((l) => l.retrying(sec)),
      verifying: () => created.listeners.forEach((l) => l.verifying()),
    };
    // Started on the next tick so the first caller's listener is attached before `Waiting` can fire.
    created.done = Promise.resolve().then(() => downloadBlob(ctx, s, path, d, file, fan, abort.signal, live)).then(
      () => {
        created.finished = true;
        return file;
      },
      async (err) => {
        created.finished = true;
        if (ctx.shared.get(d.digest) === created) ctx.shared.delete(d.digest);
        await rm(file, { force: true });
        throw err;
      },
    );
    created.done.catch(() => {});
    ctx.shared.set(d.digest, created);
    dl = created;
  }
  const shared = dl;
  shared.refs++;
  shared.listeners.add(events);
  let released = false;
  const release = () => {
    if (released) return;
    released = true;
    shared.listeners.delete(events);
    signal.removeEventListener('abort', release);
    if (--shared.refs > 0) return;
    if (ctx.shared.get(d.digest) === shared) ctx.shared.delete(d.digest);
    if (!shared.finished) shared.abort.abort(new EngineError('Canceled', 'download canceled'));
    shared.done.then((f) => rm(f, { force: true }), () => {});
  };
  signal.addEventListener('abort', release, { once: true });
  const file = new Promise<string>((resolve, reject) => {
    shared.done.then(resolve, reject);
    signal.addEventListener('abort', () => reject(signal.reason), { once: true });
    if (signal.aborted) reject(signal.reason);
  });
  file.catch(() => {});
  return { file, path: shared.file, live, release };
}

/**
 * Spool one blob to `file`, verifying its digest; retried up to maxDownloadAttempts, resuming with
 * Range. `live` gets the bytes as they come and ends after the verification; once bytes went out,
 * any failure restarts it (its consumer falls back to the file).
 */
async function downloadBlob(ctx: DistContext, s: Session, path: string, d: Descriptor, file: string, ev: DownloadEvents, signal: AbortSignal, live?: LiveBlob): Promise<void> {
  let release: () => void;
  try {
    release = await ctx.downloads.acquire(signal, () => ev.waiting());
  } catch (err) {
    live?.restart();
    throw err;
  }
  let sink = live;
  const fh = await open(file, 'w+').catch((err: unknown) => {
    release();
    live?.restart();
    throw err;
  });
  try {
    let hash: Hash = createHash('sha256');
    let written = 0;
    const sources = isForeign(d.mediaType) && d.urls?.length ? [...d.urls, ''] : [''];
    for (let attempt = 1; ; attempt++) {
      try {
        await fetchInto(ctx, s, path, d, sources, fh, written, sink, (n, h, resumed) => {
          if (!resumed) {
            hash = createHash('sha256');
            written = 0;
          }
          written += n;
          hash.update(h);
          return written;
        }, ev, signal);
        ev.verifying();
        const got = `sha256:${hash.digest('hex')}`;
        if (got !== d.digest) {
          await fh.truncate(0);
          written = 0;
          hash = createHash('sha256');
          throw Object.assign(new Error(`filesystem layer verification failed for digest ${d.digest}`), { code: 'EDIGEST' });
        }
        sink?.end();
        return;
      } catch (err) {
        // Name the spool file a failed write was for, as the reference does (`write <tmp>: no space left on device`).
        if (isSystemError(err) && err.syscall === 'write' && (err.code === 'ENOSPC' || err.code === 'EDQUOT')) err.path ??= file;
        if (sink && sink.sent > 0) {
          sink.restart();
          sink = undefined;
        }
        if (signal.aborted) throw signal.reason ?? err;
        if (attempt >= ctx.maxDownloadAttempts || !isRetryable(err)) throw err;
        ctx.log.warn({ err: (err as Error).message, digest: d.digest, attempt }, 'layer download failed, retrying');
        // A countdown, one line a second, as the reference daemon shows it.
        for (let left = ctx.retryDelayMs * attempt; left > 0; left -= 1000) {
          ev.retrying(Math.ceil(left / 1000));
          await sleep(Math.min(left, 1000), undefined, { signal });
        }
      }
    }
  } catch (err) {
    live?.restart();
    throw err;
  } finally {
    await fh.close();
    release();
  }
}

type Append = (n: number, chunk: Buffer, resumed: boolean) => number;

async function fetchInto(
  ctx: DistContext, s: Session, path: string, d: Descriptor, sources: string[], fh: import('node:fs/promises').FileHandle,
  offset: number, sink: LiveBlob | undefined, append: Append, ev: DownloadEvents, signal: AbortSignal,
): Promise<void> {
  let lastErr: unknown;
  for (const src of sources) {
    const headers: Record<string, string> = offset > 0 ? { Range: `bytes=${offset}-` } : {};
    let res;
    try {
      res = src
        ? await ctx.client.send('GET', new URL(src), undefined, headers, undefined, signal)
        : await s.request('GET', `/v2/${path}/blobs/${d.digest}`, { headers, signal, redirect: true });
    } catch (err) {
      lastErr = err;
      continue;
    }
    let resumed = false;
    if (res.status === 206 && offset > 0) {
      resumed = true;
    } else if (res.status === 200) {
      await fh.truncate(0);
    } else {
      lastErr = await registryError(res);
      continue;
    }
    const total = d.size || Number(res.header('content-length') ?? 0) + (resumed ? offset : 0);
    let pos = resumed ? offset : 0;
    const bar = throttled((cur) => ev.progress(cur, total));
    let first = true;
    const out = new ChunkWriter(fh, pos);
    // A registry that stops sending mid-blob: the attempt fails after a silence (then retried).
    const stall = stallWatch(res.body, ctx.stallTimeoutMs, `Get "${res.url.href}"`);
    try {
      for await (const chunk of chunksOf(res.body)) {
        stall.fed();
        const wait = out.write(chunk);
        pos = append(chunk.length, chunk, resumed || !first);
        first = false;
        // The spool file and the live consumer take the chunk side by side.
        if (sink) await Promise.all([wait, sink.write(chunk)]);
        else if (wait) await wait;
        bar.update(pos);
      }
      await out.flush();
    } finally {
      stall.stop();
      // Nothing may land in the file after a failed attempt returns (the next one may truncate it).
      await out.settle();
    }
    if (first && !resumed) append(0, Buffer.alloc(0), false);
    if (d.size && pos !== d.size) {
      throw Object.assign(new Error(`unexpected EOF: got ${pos} of ${d.size} bytes of ${d.digest}`), { code: 'ECONNRESET' });
    }
    bar.flush(pos);
    return;
  }
  throw lastErr;
}

/**
 * Destroys `body` when nothing arrived for `ms` (reset by fed()): the read fails as Go's client
 * fails a body whose deadline passed (`what`: the request, as Go names it), and the download's
 * retry takes over.
 */
export function stallWatch(body: { destroy(err: Error): void }, ms: number, what: string): { fed(): void; stop(): void } {
  let timer: NodeJS.Timeout | undefined;
  const arm = () => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      body.destroy(Object.assign(new Error(`${what}: net/http: request canceled (Client.Timeout or context cancellation while reading body)`), { code: 'ESTALLED', stalledMs: ms }));
    }, ms);
    timer.unref();
  };
  if (ms > 0) arm();
  return {
    fed: () => {
      if (ms > 0) arm();
    },
    stop: () => clearTimeout(timer),
  };
}

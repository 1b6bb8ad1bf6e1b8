// Push: upload the layers the registry lacks (daemon-wide limit, HEAD to skip, cross-repository
// mount when the blob is known in another repository of the same registry, foreign layers only
// where allowed), the config, then PUT the manifest under the tag.
import { createHash } from 'node:crypto';
import { Readable, Transform } from 'node:stream';
import { createGzip } from 'node:zlib';
import { EngineError, internal, invalidArgument } from '../../lib/errors.ts';
import { parseReference, repositoryName, type Reference } from '../../lib/reference.ts';
import type { LayerInfo } from '../storage/types.ts';
import { NoBasicAuthError, registryError, type Session } from './client.ts';
import { rememberBlob, type DistContext } from './context.ts';
import { isForeign, MEDIA, type Descriptor } from './manifest.ts';
import { progressLine, shortDigest, statusLine, throttled } from './progress.ts';
import { sha256 } from './pull.ts';
import type { JsonMessage, PushImage, PushOptions, PushResult } from './types.ts';

export async function pushImage(ctx: DistContext, refStr: string, image: PushImage, opts: PushOptions): Promise<PushResult> {
  try {
    return await pushTag(ctx, refStr, image, opts);
  } catch (err) {
    // The reference daemon does not retry a push refused for want of credentials, and reports
    // the bare reason rather than the request that met it.
    if (err instanceof NoBasicAuthError) throw new EngineError('Unauthorized', NoBasicAuthError.REASON, { cause: err });
    throw err;
  }
}

async function pushTag(ctx: DistContext, refStr: string, image: PushImage, opts: PushOptions): Promise<PushResult> {
  const ref = parseReference(refStr);
  if (ref.digest) throw invalidArgument('cannot push a digest reference');
  const tag = ref.tag ?? 'latest';
  const emit = (m: JsonMessage) => {
    try {
      opts.onProgress(m);
    } catch {
      /* a broken progress consumer must not break the push */
    }
  };
  const { signal } = opts;
  emit({ status: `The push refers to repository [${repositoryName(ref)}]` });
  const s = await ctx.client.open(ref.domain, ref.path, opts.auth, ['pull', 'push'], signal, { pull: false });
  const registry = s.endpoint.registry;
  const allowForeign = await ctx.nondistributable.matches(registry);

  const infos: LayerInfo[] = [];
  let parent: string | null = null;
  for (const d of image.diffIds) {
    parent = ctx.layers.chainIdOf(parent, d);
    const info = ctx.layers.get(parent);
    if (!info) throw internal(`layer does not exist: ${parent}`);
    infos.push(info);
  }
  for (let i = infos.length - 1; i >= 0; i--) emit(statusLine(shortDigest(infos[i]!.diffId), 'Preparing'));

  const local = new AbortController();
  const onAbort = () => local.abort(signal.reason);
  signal.addEventListener('abort', onAbort, { once: true });
  if (signal.aborted) onAbort();
  let descs: Descriptor[];
  try {
    const tasks = infos.map((info) => pushLayer(ctx, s, ref, info, allowForeign, emit, local.signal));
    tasks.forEach((t) => t.catch((err) => local.abort(err)));
    descs = await Promise.all(tasks);
  } finally {
    signal.removeEventListener('abort', onAbort);
  }

  const oci = descs.some((d) => d.mediaType === MEDIA.ociLayerZstd);
  const configBytes = Buffer.from(image.rawConfig, 'utf8');
  const configDesc: Descriptor = { mediaType: oci ? MEDIA.ociConfig : MEDIA.dockerConfig, size: configBytes.length, digest: sha256(configBytes) };
  if (!(await blobExists(s, ref.path, configDesc.digest, signal))) await uploadBuffer(s, ref.path, configBytes, configDesc.digest, signal);
  rememberBlob(ctx, configDesc.digest, registry, ref.path);

  const manifest = {
    schemaVersion: 2,
    mediaType: oci ? MEDIA.ociManifest : MEDIA.dockerManifest,
    config: configDesc,
    layers: descs.map((d) => (oci && d.mediaType === MEDIA.dockerLayer ? { ...d, mediaType: MEDIA.ociLayerGzip } : d)),
  };
  const body = Buffer.from(JSON.stringify(manifest, null, 3), 'utf8');
  const res = await s.ok('PUT', `/v2/${ref.path}/manifests/${tag}`, { headers: { 'Content-Type': manifest.mediaType }, body, signal });
  res.discard();
  const digest = sha256(body);
  emit({ status: `${tag}: digest: ${digest} size: ${body.length}` });
  emit({ progressDetail: {}, aux: { Tag: tag, Digest: digest, Size: body.length } });
  return { digest, size: body.length };
}

async function blobExists(s: Session, path: string, digest: string, signal: AbortSignal): Promise<boolean> {
  const res = await s.request('HEAD', `/v2/${path}/blobs/${digest}`, { signal });
  res.discard();
  if (res.status === 200) return true;
  if (res.status === 404) return false;
  throw await registryError(res);
}

async function pushLayer(ctx: DistContext, s: Session, ref: Reference, info: LayerInfo, allowForeign: boolean, emit: (m: JsonMessage) => void, signal: AbortSignal): Promise<Descriptor> {
  const id = shortDigest(info.diffId);
  const registry = s.endpoint.registry;
  const foreign = ctx.foreign.get(info.diffId);
  if (foreign && isForeign(foreign.mediaType) && !allowForeign) {
    emit(statusLine(id, 'Skipped foreign layer'));
    return { mediaType: foreign.mediaType, size: foreign.size, digest: foreign.digest, ...(foreign.urls ? { urls: foreign.urls } : {}) };
  }
  const release = await ctx.uploads.acquire(signal, () => emit(statusLine(id, 'Waiting')));
  try {
    const known = info.blobMedia === 'none' ? ctx.compressed.get(info.diffId) : undefined;
    // A foreign layer pushed to a registry that allows it becomes an ordinary layer (as in the
    // reference daemon): the registry serves it now, and a foreign type without urls is refused.
    const mediaType = info.blobMedia === 'zstd' ? MEDIA.ociLayerZstd : MEDIA.dockerLayer;
    const digest = info.blobMedia === 'none' ? known?.digest : info.blobDigest;
    const size = info.blobMedia === 'none' ? known?.size : info.blobSize;
    if (digest && size !== undefined) {
      const desc: Descriptor = { mediaType, size, digest };
      if (await blobExists(s, ref.path, digest, signal)) {
        emit(statusLine(id, 'Layer already exists'));
        rememberBlob(ctx, digest, registry, ref.path);
        return desc;
      }
      const from = [...(ctx.blobRepos.get(digest) ?? [])]
        .filter((r) => r.startsWith(`${registry}/`) && r !== `${registry}/${ref.path}`)
        .map((r) => r.slice(registry.length + 1));
      for (const src of from) {
        s.addScopes([`repository:${src}:pull`]);
        const res = await s.request('POST', `/v2/${ref.path}/blobs/uploads/?mount=${encodeURIComponent(digest)}&from=${encodeURIComponent(src)}`, { signal });
        if (res.status === 201) {
          res.discard();
          emit(statusLine(id, `Mounted from ${src}`));
          rememberBlob(ctx, digest, registry, ref.path);
          return desc;
        }
        if (res.status === 202) {
          res.discard();
          await streamUpload(s, res.header('location'), ctx, info, emit, signal);
          emit(statusLine(id, 'Pushed'));
          rememberBlob(ctx, digest, registry, ref.path);
          return desc;
        }
        res.discard();
      }
    }
    const start = await s.ok('POST', `/v2/${ref.path}/blobs/uploads/`, { signal });
    start.discard();
    const sent = await streamUpload(s, start.header('location'), ctx, info, emit, signal);
    if (info.blobMedia === 'none') ctx.compressed.set(info.diffId, sent);
    emit(statusLine(id, 'Pushed'));
    rememberBlob(ctx, sent.digest, registry, ref.path);
    return { mediaType, size: sent.size, digest: sent.digest };
  } finally {
    release();
  }
}

/** PATCH the whole blob as one chunk (gzip-compressing a layer stored uncompressed), then PUT ?digest=. */
async function streamUpload(s: Session, location: string | undefined, ctx: DistContext, info: LayerInfo, emit: (m: JsonMessage) => void, signal: AbortSignal): Promise<{ digest: string; size: number }> {
  if (!location) throw internal('registry did not return an upload location');
  const id = shortDigest(info.diffId);
  const total = info.blobMedia === 'none' ? info.size : info.blobSize;
  let digest = '';
  let size = 0;
  const makeBody = (): Readable => {
    const hash = createHash('sha256');
    size = 0;
    let read = 0;
    const bar = throttled((cur) => emit(progressLine(id, 'Pushing', cur, total)));
    const counter = new Transform({
      transform(chunk: Buffer, _e, cb) {
        read += chunk.length;
        bar.update(read);
        cb(null, chunk);
      },
      flush(cb) {
        bar.flush(read);
        cb();
      },
    });
    const hasher = new Transform({
      transform(chunk: Buffer, _e, cb) {
        hash.update(chunk);
        size += chunk.length;
        cb(null, chunk);
      },
      flush(cb) {
        digest = `sha256:${hash.digest('hex')}`;
        cb();
      },
    });
    const src = ctx.layers.layerBlob(info.chainId);
    const stages: NodeJS.ReadWriteStream[] = info.blobMedia === 'none' ? [counter, createGzip(), hasher] : [counter, hasher];
    let cur: Readable = src;
    for (const st of stages) {
      cur.on('error', (err) => hasher.destroy(err));
      cur = cur.pipe(st as unknown as Transform);
    }
    return hasher;
  };
  const patch = await s.ok('PATCH', location, { headers: { 'Content-Type': 'application/octet-stream' }, body: makeBody, signal });
  patch.discard();
  if (!digest) throw internal('upload stream ended without a digest');
  const put = s.url(patch.header('location') ?? location);
  put.searchParams.set('digest', digest);
  const done = await s.ok('PUT', put.href, { headers: { 'Content-Length': '0' }, signal });
  done.discard();
  return { digest, size };
}

async function uploadBuffer(s: Session, path: string, body: Buffer, digest: string, signal: AbortSignal): Promise<void> {
  const start = await s.ok('POST', `/v2/${path}/blobs/uploads/`, { signal });
  start.discard();
  const loc = start.header('location');
  if (!loc) throw internal('registry did not return an upload location');
  const put = s.url(loc);
  put.searchParams.set('digest', digest);
  const res = await s.ok('PUT', put.href, { headers: { 'Content-Type': 'application/octet-stream' }, body, signal });
  res.discard();
}

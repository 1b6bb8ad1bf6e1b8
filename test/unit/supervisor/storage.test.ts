// Drives a real, private containerd's storage services (temp root/state/socket, namespace
// `enginetest`) through drivers/supervisor/storage.ts: a lease, a gzipped layer written to content
// under it, unpacked into an overlayfs snapshot by the differ, committed and viewed, an image record,
// and the lease's deletion collecting what only it held.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import { startSupervisor, type SupervisorProcess } from '../../../drivers/supervisor/process.ts';
import { connectSupervisor, type SupervisorConnection } from '../../../drivers/supervisor/rpc.ts';
import { createSupervisorStorage, LEASE_EXPIRE_LABEL, WRITE_CHUNK, type Mount, type SupervisorStorage } from '../../../drivers/supervisor/storage.ts';
import { EngineError } from '../../../lib/errors.ts';
import { haveBinaries, killShims, NS, testLogger } from './helpers.ts';

const skip = haveBinaries();
const LAYER_TYPE = 'application/vnd.docker.image.rootfs.diff.tar.gzip';
const sha256 = (b: Buffer) => `sha256:${createHash('sha256').update(b).digest('hex')}`;
const isEngine = (code: string) => (err: unknown) => err instanceof EngineError && err.code === code;

/** The directory a snapshot's mounts show: a bind mount's source, or an overlay's single lowerdir. */
function mountedDir(mounts: Mount[]): string {
  assert.equal(mounts.length, 1);
  const [m] = mounts;
  if (m!.type === 'bind') return m!.source;
  const lower = m!.options.find((o) => o.startsWith('lowerdir='));
  assert.ok(lower, `no lowerdir in ${JSON.stringify(m)}`);
  return lower.slice('lowerdir='.length).split(':')[0]!;
}

describe('supervisor storage against a real containerd', { skip: skip ?? false, timeout: 120_000 }, () => {
  const log = testLogger();
  let dir = '';
  let sup: SupervisorProcess | undefined;
  let conn: SupervisorConnection | undefined;
  let storage: SupervisorStorage;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'engstore-'));
    const execRoot = join(dir, 'run');
    sup = await startSupervisor({
      root: join(dir, 'data', 'containerd'),
      state: join(execRoot, 'containerd', 'state'),
      configDir: join(execRoot, 'containerd'),
      log,
      // The image, content, lease, snapshot and diff services, as the feature supervisor-snapshotter keeps them.
      storage: true,
    });
    conn = connectSupervisor(sup.address);
    storage = createSupervisorStorage(conn, { namespace: NS, timeoutMs: 20_000 });
  });

  after(async () => {
    conn?.close();
    const address = sup?.address;
    await sup?.stop();
    if (address) await killShims(address);
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  test('a layer written under a lease, unpacked into a snapshot, committed, viewed; the lease frees it all', async () => {
    // A one-file layer: the tar is what the differ digests, its gzip what the content store holds.
    const src = join(dir, 'layer-src');
    execFileSync('mkdir', ['-p', src]);
    await writeFile(join(src, 'hello.txt'), 'hello from a layer\n');
    const tar = execFileSync('tar', ['-C', src, '--owner=0', '--group=0', '-cf', '-', 'hello.txt']);
    const gz = gzipSync(tar);
    const layer = { mediaType: LAYER_TYPE, digest: sha256(gz), size: gz.length };

    const lease = await storage.leases.create({ labels: { 'engine/test': 'true' }, expireAfterMs: 3_600_000 });
    const leases = await storage.leases.list();
    const mine = leases.find((l) => l.id === lease);
    assert.ok(mine, 'the lease is listed');
    assert.match(mine.labels[LEASE_EXPIRE_LABEL] ?? '', /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);

    // Streamed in small pieces; written once, a second write of the same blob is a success too.
    const pieces = Readable.from([gz.subarray(0, 10), gz.subarray(10)]);
    assert.equal(await storage.content.writeBlob({ ref: `layer-${layer.digest}`, digest: layer.digest, size: layer.size, data: pieces, lease, labels: { 'engine/test': 'true' } }), layer.digest);
    assert.equal(await storage.content.writeBlob({ ref: `layer-${layer.digest}`, digest: layer.digest, size: layer.size, data: gz, lease }), layer.digest);
    const info = await storage.content.info(layer.digest);
    assert.equal(info.size, gz.length);
    assert.equal(info.labels['engine/test'], 'true');
    assert.ok((await storage.content.list()).some((b) => b.digest === layer.digest && b.size === gz.length), 'content list has the blob');
    const back: Buffer[] = [];
    for await (const c of storage.content.read(layer.digest)) back.push(c as Buffer);
    assert.ok(Buffer.concat(back).equals(gz), 'read answers the blob');
    assert.ok((await storage.leases.listResources(lease)).some((r) => r.type === 'content' && r.id === layer.digest));

    // Unpack into a fresh snapshot and commit it as the layer's chain.
    const key = `extract-${process.pid}`;
    const chain = `layer-${process.pid}`;
    const mounts = await storage.snapshots.prepare('overlayfs', key, '', { lease });
    assert.ok(mounts.length >= 1);
    const applied = await storage.diff.apply(layer, mounts, { lease });
    assert.equal(applied.digest, sha256(tar), 'the applied descriptor is the uncompressed tar');
    assert.equal(applied.size, tar.length);
    // containerd's walking differ names the uncompressed layer with the OCI type, whatever the blob's.
    assert.equal(applied.mediaType, 'application/vnd.oci.image.layer.v1.tar');
    assert.equal((await storage.snapshots.stat('overlayfs', key)).kind, 'ACTIVE');
    await storage.snapshots.commit('overlayfs', chain, key, { lease, labels: { 'engine/test': 'true' } });
    await assert.rejects(storage.snapshots.stat('overlayfs', key), isEngine('NotFound'));
    const st = await storage.snapshots.stat('overlayfs', chain);
    assert.deepEqual([st.name, st.parent, st.kind, st.labels['engine/test']], [chain, '', 'COMMITTED', 'true']);
    assert.ok((await storage.snapshots.usage('overlayfs', chain)).size > 0);
    assert.ok((await storage.snapshots.list('overlayfs')).some((s) => s.name === chain));

    // A view on top shows the layer's file.
    const viewKey = `view-${process.pid}`;
    const view = await storage.snapshots.view('overlayfs', viewKey, chain, { lease });
    assert.deepEqual(await storage.snapshots.mounts('overlayfs', viewKey), view);
    assert.equal(await readFile(join(mountedDir(view), 'hello.txt'), 'utf8'), 'hello from a layer\n');
    await storage.snapshots.remove('overlayfs', viewKey);

    // An image record.
    const name = `docker.io/library/enginetest:${process.pid}`;
    const created = await storage.images.create({ name, target: layer, labels: { 'engine/test': 'true' } }, { lease });
    assert.equal(created.name, name);
    assert.deepEqual((await storage.images.get(name)).target, layer);
    assert.ok((await storage.images.list()).some((i) => i.name === name));
    await storage.images.delete(name);
    await assert.rejects(storage.images.get(name), isEngine('NotFound'));

    // The lease was all that held the blob and the snapshot.
    await storage.leases.delete(lease, { sync: true });
    assert.ok(!(await storage.leases.list()).some((l) => l.id === lease));
    await assert.rejects(storage.content.info(layer.digest), isEngine('NotFound'));
    await assert.rejects(storage.snapshots.stat('overlayfs', chain), isEngine('NotFound'));
  });

  test('a large blob goes in 1 MiB pieces; a wrong digest is refused and leaves no blob', async () => {
    const big = Buffer.alloc(2 * WRITE_CHUNK + 123, 7);
    const digest = sha256(big);
    const lease = await storage.leases.create();
    try {
      assert.equal(await storage.content.writeBlob({ ref: 'big', digest, size: big.length, data: big, lease }), digest);
      assert.equal((await storage.content.info(digest)).size, big.length);
      const wrong = sha256(Buffer.from('something else'));
      await assert.rejects(storage.content.writeBlob({ ref: 'wrong', digest: wrong, size: 5, data: Buffer.from('hello'), lease }), (err) => err instanceof EngineError && err.code === 'FailedPrecondition' && /digest/.test(err.message));
      await assert.rejects(storage.content.info(wrong), isEngine('NotFound'));
    } finally {
      await storage.leases.delete(lease, { sync: true });
    }
    await assert.rejects(storage.content.info(digest), isEngine('NotFound'));
  });

  test('errors are engine errors: an unknown digest is NotFound; an aborted call is Canceled', async () => {
    const unknown = `sha256:${'0'.repeat(64)}`;
    await assert.rejects(storage.content.info(unknown), (err) => err instanceof EngineError && err.code === 'NotFound' && /not found/.test(err.message));
    await assert.rejects(storage.snapshots.stat('overlayfs', 'no-such-key'), isEngine('NotFound'));
    await assert.rejects(storage.leases.delete('no-such-lease'), isEngine('NotFound'));
    const stream = storage.content.read(unknown);
    await assert.rejects(async () => {
      for await (const _ of stream) void _;
    }, isEngine('NotFound'));
    await assert.rejects(storage.content.list([], { signal: AbortSignal.abort() }), isEngine('Canceled'));
  });
});

// The supervisor's storage services as the layer store uses them with the feature
// supervisor-snapshotter: its snapshots as the overlayfs driver's layer directories
// (drivers/storage/snapshotter.ts) and its content store as the place of layer blobs.
import { randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { GC_ROOT_LABEL, SNAPSHOTTER, type SnapshotPort } from '../../drivers/storage/snapshotter.ts';
import type { BlobPort } from '../../drivers/storage/types.ts';
import type { Snapshots, SupervisorStorage } from '../../drivers/supervisor/storage.ts';
import { isCode } from '../../lib/errors.ts';

/** The supervisor's snapshots service as the overlayfs driver uses it (drivers/storage/snapshotter.ts). */
export function snapshotPort(s: Snapshots): SnapshotPort {
  return {
    prepare: (key, parent, labels) => s.prepare(SNAPSHOTTER, key, parent, { labels }),
    commit: (name, key, labels) => s.commit(SNAPSHOTTER, name, key, { labels }),
    remove: (key) => s.remove(SNAPSHOTTER, key),
    list: async () => (await s.list(SNAPSHOTTER)).map((i) => i.name),
  };
}

/** The label of the layer blobs the layer store keeps in the supervisor's content store. */
const LAYER_BLOB_LABEL = 'engine.layer-blob';
/** The label of the lease a blob's write holds. */
const WRITE_LEASE_LABEL = 'engine.layer-blob-write';
/** How long a write's lease outlives a daemon killed in the middle of it (then containerd collects the ingest). */
const BLOB_LEASE_MS = 60 * 60_000;
/** How long after a blob's removal the collection that frees it runs (removals in between share it). */
const COLLECT_AFTER_MS = 100;

/** The supervisor's content store as the layer store keeps blobs in it: each written under a lease of its own, kept by gc.root. */
export function blobPort(s: SupervisorStorage): BlobPort {
  const notFoundIsDone = (err: unknown) => {
    if (!isCode(err, 'NotFound')) throw err;
  };
  // A deleted blob's bytes go at containerd's next collection, which it paces (after a slow one it
  // waits up to 50 times as long): a synchronous one (a lease deleted with sync) soon after the
  // last removal of a burst frees the space at once, once for the burst.
  let collecting: NodeJS.Timeout | undefined;
  const collectSoon = () => {
    if (collecting) return;
    collecting = setTimeout(() => {
      collecting = undefined;
      void (async () => {
        const lease = await s.leases.create({ expireAfterMs: BLOB_LEASE_MS });
        await s.leases.delete(lease, { sync: true });
      })().catch(() => {});
    }, COLLECT_AFTER_MS);
    collecting.unref();
  };
  return {
    async put(digest, file, size) {
      const lease = await s.leases.create({ expireAfterMs: BLOB_LEASE_MS, labels: { [WRITE_LEASE_LABEL]: '1' } });
      try {
        const ref = `engine-layer-${digest.slice(7, 19)}-${randomBytes(4).toString('hex')}`;
        await s.content.writeBlob({ ref, digest, size, data: createReadStream(file, { highWaterMark: 1 << 20 }), lease, labels: { ...GC_ROOT_LABEL, [LAYER_BLOB_LABEL]: '1' } });
      } finally {
        await s.leases.delete(lease).catch(() => {});
      }
    },
    read: (digest) => s.content.read(digest),
    async remove(digest) {
      await s.content.delete(digest).catch(notFoundIsDone);
      collectSoon();
    },
    list: async () => (await s.content.list()).filter((b) => b.labels[LAYER_BLOB_LABEL]).map((b) => b.digest),
    async sweep() {
      // The leases of writes a killed daemon left: deleted now (not at their expiry), and the collection frees their ingests.
      for (const l of await s.leases.list()) {
        if (l.labels[WRITE_LEASE_LABEL]) await s.leases.delete(l.id, { sync: true }).catch(notFoundIsDone);
      }
    },
  };
}

// Typed client over the supervisor's (containerd's) storage services: leases, content (in
// storage-content.ts), snapshots, the differ and image records, for keeping images in containerd.
// Every call carries the namespace and a deadline, takes an optional AbortSignal, and fails with the
// engine's error classes (NotFound stays NotFound), containerd's message kept intact. Calls that
// create something take a lease: containerd's garbage collector keeps what a lease holds, and
// deleting the lease (sync) removes whatever nothing else references.
import { randomBytes } from 'node:crypto';
import { ApplyRequest } from './gen/diff.ts';
import { CreateImageRequest, DeleteImageRequest, GetImageRequest, ListImagesRequest, UpdateImageRequest, type Image } from './gen/images.ts';
import {
  AddResourceRequest, CreateRequest, DeleteRequest, DeleteResourceRequest, ListRequest, ListResourcesRequest,
} from './gen/leases.ts';
import {
  CommitSnapshotRequest, ListSnapshotsRequest, MountsRequest, PrepareSnapshotRequest, RemoveSnapshotRequest, StatSnapshotRequest,
  UsageRequest, ViewSnapshotRequest, type Info as SnapshotInfoMessage,
} from './gen/snapshots.ts';
import type { Descriptor as DescriptorMessage, Mount as MountMessage } from './gen/types.ts';
import { collectStream, toDate, unary, type CallOptions, type SupervisorConnection, type UnaryMethod } from './rpc.ts';
import { createContentStore, type ContentStore, type LeasedCallOptions, type StorageCallOptions } from './storage-content.ts';

export type { BlobInfo, ContentStore, LeasedCallOptions, StorageCallOptions, WriteBlobOptions } from './storage-content.ts';
export { WRITE_CHUNK } from './storage-content.ts';

/** The label containerd's collector reads a lease's expiry from (RFC 3339). */
export const LEASE_EXPIRE_LABEL = 'containerd.io/gc.expire';

export interface Descriptor {
  mediaType: string;
  digest: string;
  size: number;
  annotations?: Record<string, string>;
}

/** A mount as the snapshotter describes it (`overlay` with lowerdir/upperdir options, or a `bind`). */
export interface Mount {
  type: string;
  source: string;
  options: string[];
}

export interface LeaseInfo {
  id: string;
  createdAt: Date | null;
  labels: Record<string, string>;
}

/** What a lease holds: type `content` (id a digest), `snapshots/<snapshotter>` (id a key) or `ingests` (id a ref). */
export interface LeaseResource {
  id: string;
  type: string;
}

export type SnapshotKind = 'UNKNOWN' | 'VIEW' | 'ACTIVE' | 'COMMITTED';

export interface SnapshotInfo {
  name: string;
  parent: string;
  kind: SnapshotKind;
  labels: Record<string, string>;
  createdAt: Date | null;
  updatedAt: Date | null;
}

export interface ImageRecord {
  name: string;
  target: Descriptor;
  labels: Record<string, string>;
  createdAt: Date | null;
  updatedAt: Date | null;
}

export interface Leases {
  /** Creates a lease and answers its id (a random one unless given); `expireAfterMs` lets the collector drop it after that. */
  create(l?: { id?: string; labels?: Record<string, string>; expireAfterMs?: number }, o?: StorageCallOptions): Promise<string>;
  /** Deletes a lease; `sync` waits for the garbage collection that frees what only it held. */
  delete(id: string, o?: StorageCallOptions & { sync?: boolean }): Promise<void>;
  list(filters?: string[], o?: StorageCallOptions): Promise<LeaseInfo[]>;
  addResource(leaseId: string, r: LeaseResource, o?: StorageCallOptions): Promise<void>;
  deleteResource(leaseId: string, r: LeaseResource, o?: StorageCallOptions): Promise<void>;
  listResources(leaseId: string, o?: StorageCallOptions): Promise<LeaseResource[]>;
}

export interface SnapshotOptions extends LeasedCallOptions {
  labels?: Record<string, string>;
}

export interface Snapshots {
  /** A writable snapshot `key` on top of committed `parent` ('' for none); answers its mounts. */
  prepare(snapshotter: string, key: string, parent: string, o?: SnapshotOptions): Promise<Mount[]>;
  /** A read-only snapshot `key` on top of committed `parent`; answers its mounts. */
  view(snapshotter: string, key: string, parent: string, o?: SnapshotOptions): Promise<Mount[]>;
  mounts(snapshotter: string, key: string, o?: StorageCallOptions): Promise<Mount[]>;
  /** Commits active snapshot `key` as `name` (the key is gone afterwards). */
  commit(snapshotter: string, name: string, key: string, o?: SnapshotOptions): Promise<void>;
  remove(snapshotter: string, key: string, o?: StorageCallOptions): Promise<void>;
  stat(snapshotter: string, key: string, o?: StorageCallOptions): Promise<SnapshotInfo>;
  /** Disk use of the snapshot's own layer: bytes and inodes. */
  usage(snapshotter: string, key: string, o?: StorageCallOptions): Promise<{ size: number; inodes: number }>;
  list(snapshotter: string, filters?: string[], o?: StorageCallOptions): Promise<SnapshotInfo[]>;
}

export interface Differ {
  /** Unpacks layer blob `layer` (from the content store) into `mounts`; answers the uncompressed layer (its digest is the diff id). */
  apply(layer: Descriptor, mounts: Mount[], o?: LeasedCallOptions): Promise<Descriptor>;
}

export interface Images {
  create(image: { name: string; target: Descriptor; labels?: Record<string, string> }, o?: LeasedCallOptions): Promise<ImageRecord>;
  get(name: string, o?: StorageCallOptions): Promise<ImageRecord>;
  list(filters?: string[], o?: StorageCallOptions): Promise<ImageRecord[]>;
  /** Replaces the target and labels of an existing record (or only the `fields` named: `target`, `labels`, `labels.<key>`). */
  update(image: { name: string; target: Descriptor; labels?: Record<string, string> }, o?: StorageCallOptions & { fields?: string[] }): Promise<ImageRecord>;
  /** Deletes a record; `sync` waits for the garbage collection that frees what only it referenced. */
  delete(name: string, o?: StorageCallOptions & { sync?: boolean }): Promise<void>;
}

export interface SupervisorStorage {
  leases: Leases;
  content: ContentStore;
  snapshots: Snapshots;
  diff: Differ;
  images: Images;
}

/** The part of a SupervisorConnection this client uses. */
export type StorageConnection = Pick<SupervisorConnection, 'content' | 'leases' | 'snapshots' | 'diff' | 'images' | 'closed'>;

export interface SupervisorStorageOptions {
  namespace: string;
  /** Default deadline of ordinary calls (ms). */
  timeoutMs?: number;
  /** Default deadline of slow calls: writing or reading a blob, applying a layer, a synchronous collection (ms). */
  slowTimeoutMs?: number;
}

const toMounts = (ms: MountMessage[] | undefined): Mount[] => (ms ?? []).map((m) => ({ type: m.type, source: m.source, options: [...m.options] }));
const fromMounts = (ms: Mount[]): MountMessage[] => ms.map((m) => ({ type: m.type, source: m.source, target: '', options: m.options }));

const toDescriptor = (d: DescriptorMessage | undefined): Descriptor => ({
  mediaType: d?.media_type ?? '',
  digest: d?.digest ?? '',
  size: d?.size ?? 0,
  ...(d && Object.keys(d.annotations).length ? { annotations: d.annotations } : {}),
});
const fromDescriptor = (d: Descriptor): DescriptorMessage => ({ media_type: d.mediaType, digest: d.digest, size: d.size, annotations: d.annotations ?? {} });

function snapshotInfo(i: SnapshotInfoMessage | undefined): SnapshotInfo {
  const kind = i?.kind;
  return {
    name: i?.name ?? '',
    parent: i?.parent ?? '',
    kind: kind === 'VIEW' || kind === 'ACTIVE' || kind === 'COMMITTED' ? kind : 'UNKNOWN',
    labels: i?.labels ?? {},
    createdAt: toDate(i?.created_at),
    updatedAt: toDate(i?.updated_at),
  };
}

function imageRecord(i: Image | undefined): ImageRecord {
  return { name: i?.name ?? '', target: toDescriptor(i?.target), labels: i?.labels ?? {}, createdAt: toDate(i?.created_at), updatedAt: toDate(i?.updated_at) };
}

/** containerd's client names leases by a timestamp and random bits; ours say whose they are. */
const randomLeaseId = () => `engine-${Date.now().toString(36)}-${randomBytes(6).toString('hex')}`;

/** RFC 3339 without fractions, as containerd's client writes the expiry. */
const rfc3339 = (d: Date) => d.toISOString().replace(/\.\d{3}Z$/, 'Z');

export function createSupervisorStorage(conn: StorageConnection, opts: SupervisorStorageOptions): SupervisorStorage {
  const ns = opts.namespace;
  const fast = opts.timeoutMs ?? 30_000;
  const slow = opts.slowTimeoutMs ?? 600_000;
  const { leases, snapshots, diff, images } = conn;

  const callOpts = (o: LeasedCallOptions | undefined, fallback = fast): CallOptions => ({
    namespace: ns,
    lease: o?.lease,
    timeoutMs: o?.timeoutMs ?? fallback,
    signal: o?.signal ? AbortSignal.any([o.signal, conn.closed]) : conn.closed,
  });
  const call = <Req, Res>(what: string, method: UnaryMethod<Req, Res>, req: Req, o?: LeasedCallOptions, fallback = fast) =>
    unary(what, method, req, callOpts(o, fallback));

  return {
    leases: {
      async create(l = {}, o) {
        const labels = { ...(l.labels ?? {}) };
        if (l.expireAfterMs) labels[LEASE_EXPIRE_LABEL] = rfc3339(new Date(Date.now() + l.expireAfterMs));
        const r = await call('Leases.Create', leases.create.bind(leases), CreateRequest.fromPartial({ id: l.id || randomLeaseId(), labels }), o);
        return r.lease?.id ?? '';
      },
      async delete(id, o) {
        await call('Leases.Delete', leases.delete.bind(leases), DeleteRequest.fromPartial({ id, sync: !!o?.sync }), o, o?.sync ? slow : fast);
      },
      async list(filters = [], o) {
        const r = await call('Leases.List', leases.list.bind(leases), ListRequest.fromPartial({ filters }), o);
        return r.leases.map((l) => ({ id: l.id, createdAt: toDate(l.created_at), labels: l.labels }));
      },
      async addResource(leaseId, r, o) {
        await call('Leases.AddResource', leases.addResource.bind(leases), AddResourceRequest.fromPartial({ id: leaseId, resource: r }), o);
      },
      async deleteResource(leaseId, r, o) {
        await call('Leases.DeleteResource', leases.deleteResource.bind(leases), DeleteResourceRequest.fromPartial({ id: leaseId, resource: r }), o);
      },
      async listResources(leaseId, o) {
        const r = await call('Leases.ListResources', leases.listResources.bind(leases), ListResourcesRequest.fromPartial({ id: leaseId }), o);
        return r.resources.map((x) => ({ id: x.id, type: x.type }));
      },
    },

    content: createContentStore({ content: conn.content, leases, namespace: ns, closed: conn.closed, timeoutMs: fast, streamTimeoutMs: slow }),

    snapshots: {
      async prepare(snapshotter, key, parent, o) {
        const req = PrepareSnapshotRequest.fromPartial({ snapshotter, key, parent, labels: o?.labels ?? {} });
        return toMounts((await call('Snapshots.Prepare', snapshots.prepare.bind(snapshots), req, o)).mounts);
      },
      async view(snapshotter, key, parent, o) {
        const req = ViewSnapshotRequest.fromPartial({ snapshotter, key, parent, labels: o?.labels ?? {} });
        return toMounts((await call('Snapshots.View', snapshots.view.bind(snapshots), req, o)).mounts);
      },
      async mounts(snapshotter, key, o) {
        return toMounts((await call('Snapshots.Mounts', snapshots.mounts.bind(snapshots), MountsRequest.fromPartial({ snapshotter, key }), o)).mounts);
      },
      async commit(snapshotter, name, key, o) {
        const req = CommitSnapshotRequest.fromPartial({ snapshotter, name, key, labels: o?.labels ?? {} });
        await call('Snapshots.Commit', snapshots.commit.bind(snapshots), req, o);
      },
      async remove(snapshotter, key, o) {
        await call('Snapshots.Remove', snapshots.remove.bind(snapshots), RemoveSnapshotRequest.fromPartial({ snapshotter, key }), o);
      },
      async stat(snapshotter, key, o) {
        return snapshotInfo((await call('Snapshots.Stat', snapshots.stat.bind(snapshots), StatSnapshotRequest.fromPartial({ snapshotter, key }), o)).info);
      },
      async usage(snapshotter, key, o) {
        // The overlayfs snapshotter walks the layer's files for this: a slow call.
        const r = await call('Snapshots.Usage', snapshots.usage.bind(snapshots), UsageRequest.fromPartial({ snapshotter, key }), o, slow);
        return { size: r.size, inodes: r.inodes };
      },
      async list(snapshotter, filters = [], o) {
        const req = ListSnapshotsRequest.fromPartial({ snapshotter, filters });
        const batches = await collectStream('Snapshots.List', snapshots.list.bind(snapshots), req, callOpts(o));
        return batches.flatMap((b) => b.info.map(snapshotInfo));
      },
    },

    diff: {
      async apply(layer, mounts, o) {
        const req = ApplyRequest.fromPartial({ diff: fromDescriptor(layer), mounts: fromMounts(mounts) });
        return toDescriptor((await call('Diff.Apply', diff.apply.bind(diff), req, o, slow)).applied);
      },
    },

    images: {
      async create(image, o) {
        const req = CreateImageRequest.fromPartial({ image: { name: image.name, target: fromDescriptor(image.target), labels: image.labels ?? {} } });
        return imageRecord((await call('Images.Create', images.create.bind(images), req, o)).image);
      },
      async get(name, o) {
        return imageRecord((await call('Images.Get', images.get.bind(images), GetImageRequest.fromPartial({ name }), o)).image);
      },
      async list(filters = [], o) {
        return (await call('Images.List', images.list.bind(images), ListImagesRequest.fromPartial({ filters }), o)).images.map(imageRecord);
      },
      async update(image, o) {
        const req = UpdateImageRequest.fromPartial({
          image: { name: image.name, target: fromDescriptor(image.target), labels: image.labels ?? {} },
          update_mask: o?.fields,
        });
        return imageRecord((await call('Images.Update', images.update.bind(images), req, o)).image);
      },
      async delete(name, o) {
        await call('Images.Delete', images.delete.bind(images), DeleteImageRequest.fromPartial({ name, sync: !!o?.sync }), o, o?.sync ? slow : fast);
      },
    },
  };
}

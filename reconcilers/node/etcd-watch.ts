// Watches of etcd prefixes through the etcd3 client, each on a gRPC watch stream of its own.
//
// The client (etcd3 1.1.2) attaches a namespace's watchers to one stream, one at a time, and
// after a reconnect attaches them all again from where each had read. When etcd answers such a
// re-attach with "created" and "canceled" at once (the watcher resumed from a revision compacted
// meanwhile), the client never moves on to the next watcher in line: every watcher behind it on
// that stream stays detached for good, silently, and a watcher made later on the stream too
// (its `create()` never resolves). A stream per watcher keeps such a cancel to the one watcher it
// concerns, which its owner (./prefix-cache.ts) makes again, on a new stream, after listing anew:
// the client emits a watcher's 'error' only when etcd canceled it, and never re-creates it.
import type { Etcd3, Watcher } from 'etcd3';

/**
 * A watcher of every key under `prefix` from `fromRevision` on, on a stream of its own, returned
 * before etcd confirms it: its owner attaches its handlers first, since the events of a past
 * revision can follow the confirmation within one read, before a `create()` promise settles.
 */
export function prefixWatcher(client: Etcd3, prefix: string, fromRevision: string): Watcher {
  return client.namespace('').watch().prefix(prefix).startRevision(fromRevision).watcher();
}

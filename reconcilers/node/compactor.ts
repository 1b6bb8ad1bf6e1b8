// The history etcd keeps of every key grows with every write until something compacts it (and
// the quota, 2 GiB by default, fills). While this node leads, it compacts once an interval up to
// the revision it saw one interval before: every watcher has had that long to catch up, and one
// that has not is canceled by etcd and lists and watches again (./prefix-cache.ts, ./membership.ts).
// Compaction is not a key write: it is not fenced, and a deposed leader's late one is harmless.
import type { Etcd3 } from 'etcd3';
import type { Logger } from 'pino';

export const COMPACT_EVERY_MS = 5 * 60_000;

export interface CompactorOptions {
  etcd: () => Etcd3 | null;
  leading: () => boolean;
  log: Logger;
  everyMs?: number;
}

export class ClusterCompactor {
  private readonly opts: CompactorOptions;
  private timer: NodeJS.Timeout | null = null;
  /** The revision seen at the last tick while leading: the next tick compacts up to it. */
  private mark: string | null = null;

  constructor(opts: CompactorOptions) {
    this.opts = opts;
  }

  start(): void {
    this.timer = setInterval(() => void this.tick().catch((err: unknown) => this.opts.log.debug({ err: err instanceof Error ? err.message : String(err) }, 'compaction failed; trying again next interval')), this.opts.everyMs ?? COMPACT_EVERY_MS);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** One interval: compact up to the mark, then mark the current revision. */
  async tick(): Promise<void> {
    const client = this.opts.etcd();
    if (!client || !this.opts.leading()) {
      this.mark = null;
      return;
    }
    const res = await client.kv.range({ key: Buffer.from('/engine/'), limit: 1, keys_only: true });
    const now = String(res.header.revision);
    if (this.mark && BigInt(this.mark) > 1n) {
      await client.kv.compact({ revision: this.mark }).catch((err: Error) => {
        // Already compacted past it (another node, or etcd's own auto-compaction): nothing to do.
        if (!/required revision has been compacted/i.test(err.message)) throw err;
      });
      this.opts.log.debug({ revision: this.mark }, 'compacted the cluster history');
    }
    this.mark = now;
  }
}

// A swarm task's log, wherever the task runs: the log of its container on this node (the log
// reader's, following until the container stops), or the node that runs it asked over the swarm's
// mTLS (its listener's GET /v1/tasks/<id>/logs, drivers/swarm/listener.ts: one JSON line per entry),
// with this node's certificate and the other's checked to be the node the task is on. Never
// through etcd. A task on a node that is down has no log to give.
import { X509Certificate } from 'node:crypto';
import { request } from 'node:https';
import type { IncomingMessage } from 'node:http';
import { createInterface } from 'node:readline';
import { nodeIdentity } from '../../drivers/swarm/ca.ts';
import type { NodeRecord } from '../../lib/cluster/node-record.ts';
import type { ContainerLogReader, LogEntry, LogReadOptions } from '../../lib/ports/logs.ts';
import type { TaskRecord } from '../../lib/swarm/task.ts';
import { Containers, isRunning, swarmTaskContainers } from '../../store/kinds/container.ts';
import type { Store } from '../../store/store.ts';

export interface TaskLogsDeps {
  store: Pick<Store, 'list' | 'watch'>;
  reader: ContainerLogReader;
  /** This node's id and certificate (undefined: in no swarm). */
  self: () => Promise<{ nodeId: string; tls: { caPem: string; certPem: string; keyPem: string } } | undefined>;
  /** The live nodes (where each is reached). */
  nodes: () => NodeRecord[];
}

/** An entry as it travels node to node. */
interface WireEntry {
  t: string;
  s: 1 | 2;
  l: string;
}

/** Entries as the listener sends them: one JSON line each. */
export async function* wireLines(entries: AsyncIterable<LogEntry>): AsyncIterable<string> {
  for await (const e of entries) yield `${JSON.stringify({ t: e.time, s: e.stream === 'stdout' ? 1 : 2, l: e.line.toString('base64') } satisfies WireEntry)}\n`;
}

export class TaskLogs {
  private readonly d: TaskLogsDeps;

  constructor(d: TaskLogsDeps) {
    this.d = d;
  }

  /** The log of a task this node runs (nothing when it has no container for it here). */
  async *local(taskId: string, o: LogReadOptions, signal: AbortSignal): AsyncIterable<LogEntry> {
    const c = swarmTaskContainers(this.d.store).find((x) => x.spec.ownerRef?.name === taskId);
    if (!c) return;
    const stop = new AbortController();
    const follow = o.follow && isRunning(c.status);
    const unwatch = follow
      ? this.d.store.watch(Containers, (ev) => {
          if (ev.resource.name === c.name && !isRunning(ev.resource.status)) stop.abort();
        })
      : () => {};
    try {
      yield* this.d.reader.read(c.name, { ...o, follow }, signal, stop.signal);
    } finally {
      unwatch();
    }
  }

  /** The log of any task of the swarm: here, or from the node it is on. */
  async *read(t: TaskRecord, o: LogReadOptions, signal: AbortSignal): AsyncIterable<LogEntry> {
    const self = await this.d.self();
    if (!t.NodeID || !self) return;
    if (t.NodeID === self.nodeId) {
      yield* this.local(t.ID, o, signal);
      return;
    }
    const node = this.d.nodes().find((n) => n.id === t.NodeID);
    if (!node) return;
    const res = await fetchLogs(node, t.ID, o, self.tls, signal);
    if (!res) return;
    const lines = createInterface({ input: res, crlfDelay: Infinity });
    try {
      for await (const text of lines) {
        if (!text) continue;
        const w = JSON.parse(text) as WireEntry;
        yield { time: w.t, stream: w.s === 1 ? 'stdout' : 'stderr', line: Buffer.from(w.l, 'base64') };
      }
    } finally {
      lines.close();
      res.destroy();
    }
  }
}

/** The node's answer to GET /v1/tasks/<id>/logs (undefined: it has none to give). */
function fetchLogs(node: NodeRecord, taskId: string, o: LogReadOptions, tls: { caPem: string; certPem: string; keyPem: string }, signal: AbortSignal): Promise<IncomingMessage | undefined> {
  const q = new URLSearchParams({ stdout: o.stdout ? '1' : '0', stderr: o.stderr ? '1' : '0', follow: o.follow ? '1' : '0', since: String(o.since), until: String(o.until), tail: String(o.tail) });
  return new Promise((resolve, reject) => {
    const req = request({
      host: node.addr,
      port: node.port ?? 2377,
      path: `/v1/tasks/${encodeURIComponent(taskId)}/logs?${q}`,
      ca: tls.caPem,
      cert: tls.certPem,
      key: tls.keyPem,
      signal,
      // The swarm's CA signed it (checked by `ca`), and it is the certificate of the node the task is on.
      checkServerIdentity: (_host, cert) => (nodeIdentity(new X509Certificate(cert.raw))?.nodeId === node.id ? undefined : new Error(`the node at ${node.addr} is not ${node.id}`)),
    });
    req.on('response', (res) => {
      if (res.statusCode === 200) return resolve(res);
      res.resume();
      resolve(undefined);
    });
    req.on('error', (err) => (signal.aborted ? resolve(undefined) : reject(err)));
    req.end();
  });
}

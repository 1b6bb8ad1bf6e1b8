// A task's secrets and configs, from a manager to the node that runs the task, never through etcd
// (a worker's etcd user reads neither, nor the data key): the node asks a manager over the swarm's
// mTLS (GET /v1/tasks/<task>/secrets/<id> on its listener, drivers/swarm/listener.ts), the manager
// gives the data only when the asking certificate names the node the task is on, the task still
// runs or is to run, and its spec references that secret (or config). A manager asking for its own
// task reads it itself. Each answer is for one task: the node keeps it on the task's tmpfs
// (drivers/swarm/task-files.ts).
import { X509Certificate } from 'node:crypto';
import { request } from 'node:https';
import type { Etcd3 } from 'etcd3';
import { nodeIdentity } from '../../drivers/swarm/ca.ts';
import { EngineError, permissionDenied, unavailable } from '../../lib/errors.ts';
import type { NodeRecord } from '../../lib/cluster/node-record.ts';
import { isTerminal, taskKey, type TaskRecord } from '../../lib/swarm/task.ts';
import { taskObjectRefs, type TaskObjectKind } from '../../drivers/swarm/task-files.ts';

export interface TaskObjectsDeps {
  etcd: () => Etcd3;
  /** The data of a secret or config (a manager's stores: a secret opened with the data key). */
  data: (kind: TaskObjectKind, id: string) => Promise<Buffer>;
  /** This node: its id, whether it holds the data key (a manager), its certificate. */
  self: () => Promise<{ nodeId: string; manager: boolean; tls: { caPem: string; certPem: string; keyPem: string } } | undefined>;
  /** The live nodes (where the managers are reached). */
  nodes: () => NodeRecord[];
}

export class TaskObjects {
  private readonly d: TaskObjectsDeps;

  constructor(d: TaskObjectsDeps) {
    this.d = d;
  }

  /** A manager's answer to `nodeId` asking for a task's secret or config. */
  async serve(nodeId: string, taskId: string, kind: TaskObjectKind, id: string): Promise<Buffer> {
    const raw = await this.d.etcd().get(taskKey(taskId)).string();
    const t = raw ? (JSON.parse(raw) as TaskRecord) : undefined;
    if (!t || t.NodeID !== nodeId || isTerminal(t.DesiredState)) throw permissionDenied(`task ${taskId} is not one node ${nodeId} runs`);
    const refs = taskObjectRefs((t.Spec['ContainerSpec'] as Record<string, unknown> | undefined) ?? {});
    if (!refs.some((r) => r.kind === kind && r.id === id)) throw permissionDenied(`task ${taskId} does not use ${kind} ${id}`);
    return this.d.data(kind, id);
  }

  /** This node's task's secret or config: read here on a manager, else asked of a manager. */
  async fetch(taskId: string, kind: TaskObjectKind, id: string): Promise<Buffer> {
    const self = await this.d.self();
    if (!self) throw unavailable('this node is in no swarm');
    if (self.manager) return this.serve(self.nodeId, taskId, kind, id);
    let last: unknown;
    for (const m of this.d.nodes().filter((n) => (n.role ?? 'manager') === 'manager' && n.state === 'ready')) {
      try {
        return await ask(m, `/v1/tasks/${encodeURIComponent(taskId)}/${kind}s/${encodeURIComponent(id)}`, self.tls);
      } catch (err) {
        if (err instanceof EngineError && err.code === 'PermissionDenied') throw err;
        last = err;
      }
    }
    throw unavailable(`no manager gave ${kind} ${id} for task ${taskId}: ${last instanceof Error ? last.message : 'no manager is reachable'}`);
  }
}

/** GET `path` on a manager's listener with this node's certificate; the manager's checked to be a manager of the swarm. */
function ask(m: NodeRecord, path: string, tls: { caPem: string; certPem: string; keyPem: string }): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const req = request({
      host: m.addr,
      port: m.port ?? 2377,
      path,
      ca: tls.caPem,
      cert: tls.certPem,
      key: tls.keyPem,
      timeout: 10_000,
      checkServerIdentity: (_host, cert) => {
        const who = nodeIdentity(new X509Certificate(cert.raw));
        return who?.nodeId === m.id && who.role === 'swarm-manager' ? undefined : new Error(`the node at ${m.addr} is not manager ${m.id}`);
      },
    });
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const body = Buffer.concat(chunks);
        if (res.statusCode === 200) return resolve(body);
        let msg = body.toString();
        let code = 'Unavailable';
        try {
          const j = JSON.parse(msg) as { code?: string; message?: string };
          msg = j.message ?? msg;
          code = j.code ?? code;
        } catch {
          // not JSON: the text as it came
        }
        reject(code === 'PermissionDenied' ? permissionDenied(msg) : unavailable(msg));
      });
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', reject);
    req.end();
  });
}

// GET /services/{id}/logs and /tasks/{id}/logs, as dockerd 20.10 answers (docs/reference-services.md
// §14): the logs of the service's tasks, wherever they run (the port reads them on the node that
// runs each), merged as they come, one multiplexed frame per line (raw with a TTY), each line with
// its timestamp and the task's context (`com.docker.swarm.node.id=…,com.docker.swarm.service.id=…,
// com.docker.swarm.task.id=…`) when asked; following, the tasks started since are read too, until
// the client goes.
import type { FastifyReply } from 'fastify';
import { internal } from '../../lib/errors.ts';
import type { LogReadOptions } from '../../lib/ports/logs.ts';
import { stateRank, type TaskRecord } from '../../lib/swarm/task.ts';
import { frame } from '../stdcopy.ts';
import type { ServicesPort } from './port.ts';

export interface TaskLogsQuery extends LogReadOptions {
  timestamps: boolean;
  details: boolean;
}

const NEW_TASKS_EVERY_MS = 1000;

/** The task's context as the reference gives it with `details`. */
export const taskDetails = (t: TaskRecord) => `com.docker.swarm.node.id=${t.NodeID ?? ''},com.docker.swarm.service.id=${t.ServiceID},com.docker.swarm.task.id=${t.ID}`;

/** At least one stream asked for (else the reference's 500, before it looks for the service or task). */
export function checkStreams(o: { stdout: boolean; stderr: boolean }): void {
  if (!o.stdout && !o.stderr) throw internal('Bad parameters: you must choose at least one stream');
}

/**
 * Streams the logs of `tasks()` (asked again every second while following, for the tasks started
 * since) to the client.
 */
export async function streamTaskLogs(reply: FastifyReply, port: ServicesPort, tasks: () => Promise<TaskRecord[]>, o: TaskLogsQuery, tty: boolean): Promise<void> {
  const first = await tasks();
  reply.hijack();
  const res = reply.raw;
  const abort = new AbortController();
  res.on('close', () => abort.abort());
  res.writeHead(200);
  res.flushHeaders();
  const write = async (stream: number, payload: Buffer) => {
    if (abort.signal.aborted) return;
    if (!res.write(tty ? payload : frame(stream, payload))) await new Promise((r) => res.once('drain', r));
  };
  const reading = new Map<string, Promise<void>>();
  const read = (t: TaskRecord) => {
    // Not before its container is made (a later look, while following, reads it then).
    if (reading.has(t.ID) || stateRank(t.Status.State) < stateRank('starting')) return;
    reading.set(
      t.ID,
      (async () => {
        try {
          for await (const e of port.logs(t, o, abort.signal)) {
            const prefix = `${o.timestamps ? `${e.time} ` : ''}${o.details ? `${taskDetails(t)} ` : ''}`;
            await write(e.stream === 'stdout' ? 1 : 2, prefix ? Buffer.concat([Buffer.from(prefix), e.line]) : e.line);
          }
        } catch (err) {
          if (!abort.signal.aborted) await write(3, Buffer.from(`Error grabbing logs: ${err instanceof Error ? err.message : String(err)}`));
        }
      })(),
    );
  };
  for (const t of first) read(t);
  if (o.follow) {
    while (!abort.signal.aborted) {
      await new Promise((r) => setTimeout(r, NEW_TASKS_EVERY_MS));
      if (abort.signal.aborted) break;
      for (const t of await tasks().catch(() => [])) read(t);
    }
  }
  await Promise.all(reading.values());
  if (!res.writableEnded) res.end();
}

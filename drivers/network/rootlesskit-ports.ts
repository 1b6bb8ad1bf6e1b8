// Rootless mode's published ports: the daemon runs in rootlesskit's network namespace, so a port it
// listens on there is exposed on the host by rootlesskit's port driver, asked through its API
// socket ($ROOTLESSKIT_STATE_DIR/api.sock, POST /v1/ports and DELETE /v1/ports/<id>), as the
// reference's rootlesskit-docker-proxy asks it for each of dockerd's proxies.
import { request } from 'node:http';
import { join } from 'node:path';
import { unavailable } from '../../lib/errors.ts';

export interface ParentPort {
  proto: 'tcp' | 'udp' | 'sctp';
  /** The host's address ('' or 0.0.0.0: every one). */
  parentIP: string;
  parentPort: number;
  /** The port in the daemon's namespace the driver forwards to. */
  childPort: number;
}

/** Exposes ports of rootlesskit's child namespace on the host; the returned function unexposes. */
export interface ParentPorts {
  expose(p: ParentPort): Promise<() => Promise<void>>;
}

/** The port driver of the rootlesskit the daemon runs in; undefined outside rootlesskit. */
export function rootlesskitPorts(env: NodeJS.ProcessEnv = process.env): ParentPorts | undefined {
  const dir = env.ROOTLESSKIT_STATE_DIR;
  if (!dir) return undefined;
  const socketPath = join(dir, 'api.sock');
  return {
    async expose(p) {
      const body = { proto: p.proto, parentIP: p.parentIP || '0.0.0.0', parentPort: p.parentPort, childPort: p.childPort };
      const answer = (await call(socketPath, 'POST', '/v1/ports', body)) as { id?: number };
      if (typeof answer?.id !== 'number') throw unavailable(`rootlesskit port driver: no id for ${p.parentPort}/${p.proto}`);
      const id = answer.id;
      return async () => {
        await call(socketPath, 'DELETE', `/v1/ports/${id}`);
      };
    },
  };
}

/** One JSON request to the API socket; a non-2xx answer is an error with its message. */
function call(socketPath: string, method: string, path: string, body?: unknown): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    const req = request({ socketPath, method, path, headers: data ? { 'content-type': 'application/json', 'content-length': data.length } : {} }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        if ((res.statusCode ?? 500) >= 300) {
          let message = text.trim();
          try {
            message = (JSON.parse(text) as { message?: string }).message ?? message;
          } catch {
            // not JSON: the text as it came
          }
          reject(unavailable(`rootlesskit port driver: ${message || `status ${res.statusCode}`}`));
          return;
        }
        try {
          resolve(text ? JSON.parse(text) : null);
        } catch (err) {
          reject(err);
        }
      });
    });
    req.on('error', reject);
    req.setTimeout(10_000, () => req.destroy(new Error('rootlesskit port driver: no answer in 10 s')));
    req.end(data);
  });
}

// A v1 authorization plugin for tests: an HTTP server on NAME.sock in a temp socket directory that
// records every call and answers with what the test decides.
import { createServer, type Server } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface Call {
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: Record<string, unknown>;
}

export type Answer = { status?: number; body: unknown };

export interface FakePlugin {
  dir: string;
  socket: string;
  calls: Call[];
  /** The answer to AuthZReq/AuthZRes calls; default allow. */
  answer: (call: Call) => Answer;
  implements: string[];
  close(): Promise<void>;
}

export async function startFakePlugin(name: string, dir = mkdtempSync(join(tmpdir(), 'authz-'))): Promise<FakePlugin> {
  const socket = join(dir, `${name}.sock`);
  const plugin: FakePlugin = {
    dir,
    socket,
    calls: [],
    answer: () => ({ body: { Allow: true } }),
    implements: ['authz'],
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString();
      const call: Call = { path: req.url ?? '', headers: req.headers, body: text ? JSON.parse(text) : {} };
      plugin.calls.push(call);
      const a = call.path === '/Plugin.Activate' ? { body: { Implements: plugin.implements } } : plugin.answer(call);
      res.writeHead(a.status ?? 200, { 'Content-Type': 'application/vnd.docker.plugins.v1.2+json' });
      res.end(typeof a.body === 'string' ? a.body : JSON.stringify(a.body));
    });
  });
  await new Promise<void>((r) => server.listen(socket, () => r()));
  return plugin;
}

export function removeDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}

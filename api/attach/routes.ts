// Attach, exec and resize. Attach and exec start take over the connection: through the server's
// 'upgrade' event when the client asks for `Upgrade: tcp` (docker CLI, docker-py, dockerode with
// hijack), or as a connection-close-delimited 200 body otherwise (curl, plain dockerode).
// `GET /containers/{id}/attach/ws` is the same attach on a websocket (websocket.ts).
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import * as z from 'zod';
import { conflict, EngineError, invalidArgument, notFound } from '../../lib/errors.ts';
import type { ContainerSpec, ContainerStatus, Resource } from '../../store/types.ts';
import { errorStatus } from '../errors.ts';
import type { ContainerLogReader, ContainerStreamsPort, ExecCreateConfig, ExecPort } from '../ports.ts';
import { findContainer } from '../containers/routes.ts';
import type { ApiStore } from '../containers/store.ts';
import { frame } from '../stdcopy.ts';
import { readUpgradeBody } from './request-body.ts';
import { AttachSession, parseDetachKeys } from './session.ts';
import { handshakeResponse, notAWebsocket, OP, WebSocketStream } from './websocket.ts';

type CR = Resource<ContainerSpec, ContainerStatus>;

export interface AttachDeps {
  store: ApiStore;
  streams: ContainerStreamsPort;
  execs: ExecPort;
  logs: ContainerLogReader;
  /** Version window for hand-routed upgrade requests. */
  version: { api: string; min: string };
  /** Publishes `detach` and `exec_detach` when a client leaves with the detach keys. */
  events?: { container(action: string, c: CR, extra?: Record<string, string>): void };
}

/** Which streams an attach asked for. */
interface AttachWants {
  stdin: boolean;
  stdout: boolean;
  stderr: boolean;
  logs: boolean;
  stream: boolean;
}

/** How the attach reaches its client: a hijacked connection (101 or plain 200) or a websocket. */
type AttachTransport = { kind: 'hijack'; upgrade: boolean; apiVersion: number } | { kind: 'websocket' };

function attachWants(q: URLSearchParams): AttachWants {
  return { stdin: truthy(q.get('stdin')), stdout: truthy(q.get('stdout')), stderr: truthy(q.get('stderr')), logs: truthy(q.get('logs')), stream: truthy(q.get('stream')) };
}

const truthy = (v: string | null | undefined) => v != null && !['', '0', 'false', 'no', 'none'].includes(v.toLowerCase());

function apiNum(v: string): number {
  const [a, b] = v.split('.').map(Number);
  return a + (b ?? 0) / 100;
}

function contentType(tty: boolean, apiVersion: number): string {
  return tty || apiVersion < 1.42 ? 'application/vnd.docker.raw-stream' : 'application/vnd.docker.multiplexed-stream';
}

function header(upgrade: boolean, ctype: string): string {
  return upgrade
    ? `HTTP/1.1 101 UPGRADED\r\nContent-Type: ${ctype}\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n\r\n`
    : `HTTP/1.1 200 OK\r\nContent-Type: application/vnd.docker.raw-stream\r\nConnection: close\r\n\r\n`;
}

function jsonError(sock: Duplex, err: unknown): void {
  const status = errorStatus(err);
  const message = err instanceof Error ? err.message : String(err);
  const body = status === 304 ? '' : JSON.stringify({ message }) + '\n';
  sock.end(
    `HTTP/1.1 ${status} ${status === 404 ? 'Not Found' : status === 409 ? 'Conflict' : status === 400 ? 'Bad Request' : 'Error'}\r\n` +
      `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}

const ExecCreateBody = z
  .object({
    User: z.string().nullish(),
    Privileged: z.boolean().nullish(),
    Tty: z.boolean().nullish(),
    AttachStdin: z.boolean().nullish(),
    AttachStdout: z.boolean().nullish(),
    AttachStderr: z.boolean().nullish(),
    DetachKeys: z.string().nullish(),
    Env: z.array(z.string()).nullish(),
    WorkingDir: z.string().nullish(),
    Cmd: z.union([z.array(z.string()), z.string()]).nullish(),
    ConsoleSize: z.tuple([z.number(), z.number()]).nullish(),
  })
  .passthrough();

const ExecStartBody = z
  .object({
    Detach: z.boolean().nullish(),
    Tty: z.boolean().nullish(),
    ConsoleSize: z.tuple([z.number().int().nonnegative(), z.number().int().nonnegative()]).nullish(),
  })
  .passthrough();

function parseBody<T>(schema: z.ZodType<T>, body: unknown): T {
  const r = schema.safeParse(body ?? {});
  if (!r.success) throw invalidArgument(r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; '));
  return r.data;
}

export function attachController(deps: AttachDeps) {
  /** Validate an attach request; throws before anything is written. */
  function prepareAttach(id: string, q: URLSearchParams): { c: CR; keys: Buffer } {
    const c = findContainer(deps.store, id);
    const keys = parseDetachKeys(q.get('detachKeys') ?? undefined);
    if (c.status.phase === 'paused') throw conflict(`container ${c.name} is paused, unpause the container before attach`);
    if (c.status.phase === 'restarting') throw conflict(`container ${c.name} is restarting, wait until the container is running`);
    if (c.status.phase === 'removing' || c.spec.desired === 'removed') throw conflict(`container ${c.name} is marked for removal and cannot be started`);
    return { c, keys };
  }

  /** Publish a container event about `id` as it is now; a container gone meanwhile has none. */
  function publish(action: string, id: string, extra?: Record<string, string>): void {
    if (!deps.events) return;
    try {
      deps.events.container(action, findContainer(deps.store, id), extra);
    } catch {
      // removed while the session ran
    }
  }

  async function runAttach(sock: Duplex, c: CR, keys: Buffer, want: AttachWants, via: AttachTransport): Promise<void> {
    const tty = !!c.spec.config.Tty;
    const session = new AttachSession(sock, {
      tty,
      // A websocket carries each stream's bytes as they are: it is never multiplexed.
      multiplex: via.kind === 'hijack' && !tty,
      stdin: want.stdin && !!c.spec.config.OpenStdin,
      stdout: want.stdout,
      stderr: want.stderr,
      closeStdinOnEof: !!c.spec.config.StdinOnce,
      detachKeys: keys,
      onDetach: () => publish('detach', c.name),
    });
    if (via.kind === 'hijack') sock.write(header(via.upgrade, contentType(tty, via.apiVersion)));
    if (want.logs) {
      const abort = new AbortController();
      session.done.then(() => abort.abort());
      try {
        const opts = { stdout: want.stdout, stderr: want.stderr, follow: false, since: 0, until: 0, tail: -1 };
        for await (const e of deps.logs.read(c.name, opts, abort.signal)) {
          if (!session.write(session.multiplexed ? frame(e.stream === 'stdout' ? 1 : 2, e.line) : e.line)) await session.drained();
        }
      } catch {
        // no stored log (driver none): live output only
      }
    }
    if (!want.stream) {
      session.close();
      return;
    }
    const unsub = deps.streams.watchRuns(c.name, (hub) => session.bind(hub));
    await session.done;
    unsub();
  }

  function createExec(containerRef: string, body: unknown): string {
    const b = parseBody(ExecCreateBody, body);
    const c = findContainer(deps.store, containerRef);
    const cmd = typeof b.Cmd === 'string' ? [b.Cmd] : (b.Cmd ?? []);
    if (cmd.length === 0) throw invalidArgument('No exec command specified');
    if (b.DetachKeys) parseDetachKeys(b.DetachKeys);
    if (c.status.phase === 'paused') throw conflict(`Container ${c.name} is paused, unpause the container before exec`);
    if (c.status.phase === 'restarting') throw conflict(`Container ${c.name} is restarting, wait until the container is running`);
    if (c.status.phase !== 'running') throw conflict(`container ${c.name} is not running`);
    const cfg: ExecCreateConfig = {
      User: b.User ?? '',
      Privileged: !!b.Privileged,
      Tty: !!b.Tty,
      AttachStdin: !!b.AttachStdin,
      AttachStdout: !!b.AttachStdout,
      AttachStderr: !!b.AttachStderr,
      DetachKeys: b.DetachKeys ?? '',
      Env: b.Env ?? [],
      WorkingDir: b.WorkingDir ?? '',
      Cmd: cmd,
      ConsoleSize: b.ConsoleSize ?? null,
    };
    return deps.execs.create(c.name, cfg);
  }

  async function runExec(sock: Duplex, upgrade: boolean, execId: string, body: z.infer<typeof ExecStartBody>, apiVersion: number): Promise<void> {
    const ex = deps.execs.inspect(execId);
    const tty = body.Tty ?? ex.ProcessConfig.tty;
    const keys = parseDetachKeys(ex.DetachKeys || undefined);
    if (ex.Running || ex.ExitCode !== null) throw conflict(ex.Running ? `exec command ${execId} is already running` : `exec command ${execId} has already run`);
    const session = new AttachSession(sock, {
      tty,
      stdin: ex.OpenStdin,
      stdout: ex.OpenStdout,
      stderr: ex.OpenStderr,
      closeStdinOnEof: true,
      closeOnEnd: false,
      detachKeys: keys,
      onDetach: () => publish('exec_detach', ex.ContainerID, { execID: ex.ID }),
    });
    sock.write(header(upgrade, contentType(tty, apiVersion)));
    let exited: Promise<number>;
    try {
      const started = deps.execs.start(execId, { tty, consoleSize: body.ConsoleSize ?? null }, (hub) => session.bind(hub));
      session.closeStdinAfter(started);
      ({ exited } = await started);
    } catch (err) {
      const msg = err instanceof Error ? err.message : String(err);
      session.write(tty ? Buffer.from(msg + '\r\n') : frame(1, Buffer.from(msg + '\n')));
      session.close();
      return;
    }
    // Close only after the exit code is recorded: the CLI inspects the exec the moment the stream ends.
    await Promise.race([exited.catch(() => 0), session.done]);
    session.close();
  }

  return { prepareAttach, runAttach, createExec, runExec };
}

/** Plugin with the non-hijacked routes. */
export function attachRoutes(deps: AttachDeps) {
  const ctl = attachController(deps);
  type Req = FastifyRequest<{ Params: { id: string }; Querystring: Record<string, string> }>;
  const apiOf = (req: FastifyRequest) => apiNum((req as unknown as { apiVersion?: string }).apiVersion ?? deps.version.api);

  return async function register(app: FastifyInstance): Promise<void> {
    app.post('/containers/:id/attach', async (req: Req, reply) => {
      const q = new URLSearchParams(req.query as Record<string, string>);
      const { c, keys } = ctl.prepareAttach(req.params.id, q);
      reply.hijack();
      const sock = req.raw.socket;
      await ctl.runAttach(sock, c, keys, attachWants(q), { kind: 'hijack', upgrade: false, apiVersion: apiOf(req) });
    });

    // A websocket attach always arrives as an upgrade request; one that reaches fastify is not.
    app.get('/containers/:id/attach/ws', async (req: Req) => {
      ctl.prepareAttach(req.params.id, new URLSearchParams(req.query as Record<string, string>));
      throw notAWebsocket();
    });

    app.post('/containers/:id/resize', async (req: Req, reply) => {
      const c = findContainer(deps.store, req.params.id);
      const { h, w } = dims(req.query);
      if (c.status.phase !== 'running' && c.status.phase !== 'paused') throw conflict(`Container ${c.name} is not running`);
      await deps.streams.resize(c.name, w, h);
      reply.code(200).type('text/plain').send('');
    });

    app.post('/containers/:id/exec', async (req: Req, reply) => {
      const id = ctl.createExec(req.params.id, req.body);
      reply.code(201).send({ Id: id });
    });

    app.get('/exec/:id/json', async (req: Req) => deps.execs.inspect(req.params.id));

    app.post('/exec/:id/resize', async (req: Req, reply) => {
      const { h, w } = dims(req.query);
      await deps.execs.resize(req.params.id, w, h);
      reply.code(200).type('text/plain').send('');
    });

    app.post('/exec/:id/start', async (req: Req, reply) => {
      const body = parseBody(ExecStartBody, req.body);
      const ex = deps.execs.inspect(req.params.id);
      if (body.Detach) {
        if (ex.Running || ex.ExitCode !== null) throw conflict(ex.Running ? `exec command ${ex.ID} is already running` : `exec command ${ex.ID} has already run`);
        await deps.execs.start(ex.ID, { tty: body.Tty ?? ex.ProcessConfig.tty, consoleSize: body.ConsoleSize ?? null });
        reply.code(200).type('text/plain').send('');
        return;
      }
      reply.hijack();
      try {
        await ctl.runExec(req.raw.socket, false, ex.ID, body, apiOf(req));
      } catch (err) {
        jsonError(req.raw.socket, err);
      }
    });
  };
}

function dims(q: Record<string, string>): { h: number; w: number } {
  const h = Number(q.h ?? 0);
  const w = Number(q.w ?? 0);
  if (!Number.isInteger(h) || !Number.isInteger(w) || h < 0 || w < 0) throw invalidArgument('strconv.Atoi: parsing: invalid syntax');
  return { h, w };
}

/**
 * The server 'upgrade' listener: routes attach and exec start by hand (fastify never sees
 * upgraded requests) and answers anything else with 404 JSON.
 */
export function upgradeHandler(deps: AttachDeps, log: { warn(o: object, m: string): void }) {
  const ctl = attachController(deps);
  const max = apiNum(deps.version.api);
  const min = apiNum(deps.version.min);
  return (req: IncomingMessage, sock: Duplex, head: Buffer): void => {
    // Hold client bytes (stdin, a half-close) until the session listens: a flowing socket drops them.
    sock.pause();
    sock.on('error', () => {});
    handle(req, sock, head).catch((err) => {
      if (!(err instanceof EngineError)) log.warn({ err }, 'upgrade request failed');
      if (sock.writable) jsonError(sock, err);
    });
  };

  async function handle(req: IncomingMessage, sock: Duplex, head: Buffer): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://engine');
    let path = url.pathname;
    let apiVersion = max;
    const vm = /^\/v(\d+\.\d+)(\/.*)$/.exec(path);
    if (vm) {
      apiVersion = apiNum(vm[1]);
      path = vm[2];
      if (apiVersion > max) throw invalidArgument(`client version ${vm[1]} is too new. Maximum supported API version is ${deps.version.api}`);
      if (apiVersion < min) throw invalidArgument(`client version ${vm[1]} is too old. Minimum supported API version is ${deps.version.min}, please upgrade your client to a newer version`);
    }
    let m = /^\/containers\/([^/]+)\/attach$/.exec(path);
    if (m && req.method === 'POST') {
      const { c, keys } = ctl.prepareAttach(decodeURIComponent(m[1]), url.searchParams);
      // The body (dockerode's options) is not stdin; only the bytes after it are.
      const { rest } = await readUpgradeBody(req, sock, head);
      if (rest.length) sock.unshift(rest);
      await ctl.runAttach(sock, c, keys, attachWants(url.searchParams), { kind: 'hijack', upgrade: true, apiVersion });
      return;
    }
    m = /^\/containers\/([^/]+)\/attach\/ws$/.exec(path);
    if (m && req.method === 'GET') {
      const { c, keys } = ctl.prepareAttach(decodeURIComponent(m[1]), url.searchParams);
      sock.write(handshakeResponse(req));
      if (head.length) sock.unshift(head);
      // Binary frames from API 1.28 (text before); the stream flags count from 1.42, before which
      // all three streams are attached.
      const ws = new WebSocketStream(sock, { opcode: apiVersion >= 1.28 ? OP.binary : OP.text });
      ws.on('error', () => {});
      const want = attachWants(url.searchParams);
      if (apiVersion < 1.42) Object.assign(want, { stdin: true, stdout: true, stderr: true });
      await ctl.runAttach(ws, c, keys, want, { kind: 'websocket' });
      return;
    }
    m = /^\/exec\/([^/]+)\/start$/.exec(path);
    if (m && req.method === 'POST') {
      const { body, rest } = await readUpgradeBody(req, sock, head);
      let parsed: unknown = undefined;
      if (body.length) {
        try {
          parsed = JSON.parse(body.toString('utf8'));
        } catch {
          throw invalidArgument('invalid character in exec start body');
        }
      }
      const b = parseBody(ExecStartBody, parsed);
      const execId = decodeURIComponent(m[1]);
      if (b.Detach) {
        await deps.execs.start(execId, { tty: !!b.Tty });
        sock.end('HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n');
        return;
      }
      if (rest.length) sock.unshift(rest);
      await ctl.runExec(sock, true, execId, b, apiVersion);
      return;
    }
    throw notFound('page not found');
  }
}

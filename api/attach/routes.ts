// Attach, exec and resize. Attach and exec start take over the connection with reply.hijack(): a
// 101 when the client asked for `Upgrade: tcp` (docker CLI, docker-py, dockerode with hijack), or a
// connection-close-delimited 200 body otherwise (curl, plain dockerode).
// `GET /containers/{id}/attach/ws` is the same attach on a websocket (websocket.ts).
import type { Duplex } from 'node:stream';
import * as z from 'zod';
import { conflict, EngineError, invalidArgument } from '../../lib/errors.ts';
import type { ContainerResource as CR } from '../../store/kinds/container.ts';
import type { App } from '../app.ts';
import { errorStatus } from '../errors.ts';
import { goStructBody, parseWith } from '../../lib/go-json.ts';
import type { ContainerLogReader, ContainerStreamsPort, ExecCreateConfig, ExecPort } from '../ports.ts';
import type { ApiStore } from '../containers/store.ts';
import { frame } from '../stdcopy.ts';
import { apiVersion, first, idParams, q, strconvError } from '../request.ts';
import { upgradeHead } from '../upgrade.ts';
import { readUpgradeBody } from '../upgrade-body.ts';
import { AttachSession, parseDetachKeys } from './session.ts';
import { attachWebSocketServer, checkWebsocketRequest, WebSocketDuplex } from './websocket.ts';
import { findContainer } from '../../store/kinds/container.ts';


export interface AttachDeps {
  store: ApiStore;
  streams: Pick<ContainerStreamsPort, 'watchRuns' | 'resize'>;
  execs: ExecPort;
  logs: ContainerLogReader;
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

const attachQuery = z.looseObject({ stdin: q.bool(), stdout: q.bool(), stderr: q.bool(), logs: q.bool(), stream: q.bool(), detachKeys: q.str() });

/** A terminal dimension: strconv.Atoi of the value, refused in its words when absent or bad, as the reference does. */
const dim = z.preprocess(first, z.string().optional()).transform((v, ctx) => {
  if (v !== undefined && /^\d+$/.test(v)) return Number(v);
  ctx.addIssue({ code: 'custom', message: strconvError('Atoi', v ?? ''), input: v });
  return z.NEVER;
});
const resizeQuery = z.looseObject({ h: dim, w: dim });

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

const ExecCreateBody = goStructBody(z
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
  .passthrough());

const ExecStartBody = goStructBody(z
  .object({
    Detach: z.boolean().nullish(),
    Tty: z.boolean().nullish(),
    ConsoleSize: z.tuple([z.number().int().nonnegative(), z.number().int().nonnegative()]).nullish(),
  })
  .passthrough());

export function attachController(deps: AttachDeps) {
  /** Validate an attach request; throws before anything is written. */
  function prepareAttach(id: string, detachKeys: string | undefined): { c: CR; keys: Buffer } {
    const c = findContainer(deps.store, id);
    const keys = parseDetachKeys(detachKeys);
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

  function createExec(containerRef: string, body: z.output<typeof ExecCreateBody>): string {
    const b = body;
    const c = findContainer(deps.store, containerRef);
    const cmd = typeof b.Cmd === 'string' ? [b.Cmd] : (b.Cmd ?? []);
    if (cmd.length === 0) throw invalidArgument('No exec command specified');
    if (b.DetachKeys) parseDetachKeys(b.DetachKeys, 'escape');
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

  /** `detachKeys`: the start request's own (a query), else the exec's (its create body), else ctrl-p,ctrl-q. */
  async function runExec(sock: Duplex, upgrade: boolean, execId: string, body: z.infer<typeof ExecStartBody>, apiVersion: number, detachKeys?: string): Promise<void> {
    const ex = deps.execs.inspect(execId);
    // As the reference: the process gets a terminal when the exec was created with one, whatever the
    // start request says; the start's Tty only decides whether the output is framed (docker-py
    // starts a Tty exec with Tty false and reads frames, all on stdout).
    const tty = ex.ProcessConfig.tty;
    const raw = body.Tty ?? tty;
    const keys = parseDetachKeys(detachKeys ?? (ex.DetachKeys || undefined));
    if (ex.Running || ex.ExitCode !== null) throw conflict(ex.Running ? `exec command ${execId} is already running` : `exec command ${execId} has already run`);
    const session = new AttachSession(sock, {
      tty,
      multiplex: !raw,
      stdin: ex.OpenStdin,
      stdout: ex.OpenStdout,
      stderr: ex.OpenStderr,
      closeStdinOnEof: true,
      closeOnEnd: false,
      detachKeys: keys,
      onDetach: () => publish('exec_detach', ex.ContainerID, { execID: ex.ID }),
    });
    sock.write(header(upgrade, contentType(raw, apiVersion)));
    let exited: Promise<number>;
    try {
      const started = deps.execs.start(execId, { tty, consoleSize: body.ConsoleSize ?? null }, (hub) => session.bind(hub));
      session.closeStdinAfter(started);
      ({ exited } = await started);
    } catch (err) {
      const msg = err instanceof Error ? err.message : String(err);
      session.write(raw ? Buffer.from(msg + (tty ? '\r\n' : '\n')) : frame(1, Buffer.from(msg + '\n')));
      session.close();
      return;
    }
    // Close only after the exit code is recorded: the CLI inspects the exec the moment the stream ends.
    await Promise.race([exited.catch(() => 0), session.done]);
    session.close();
  }

  return { prepareAttach, runAttach, createExec, runExec };
}

/** Attach, exec and resize routes; attach and exec start hijack the connection. */
export function attachRoutes(deps: AttachDeps) {
  const ctl = attachController(deps);

  return async function register(app: App): Promise<void> {
    app.post('/containers/:id/attach', { schema: { params: idParams, querystring: attachQuery } }, async (req, reply) => {
      const { c, keys } = ctl.prepareAttach(req.params.id, req.query.detachKeys);
      reply.hijack();
      const sock = req.raw.socket;
      const head = upgradeHead(req.raw);
      try {
        // The body (dockerode's options) is not stdin; only the bytes after it are.
        if (head) {
          const { rest } = await readUpgradeBody(req.raw, sock, head);
          if (rest.length) sock.unshift(rest);
        }
        await ctl.runAttach(sock, c, keys, req.query, { kind: 'hijack', upgrade: !!head, apiVersion: apiVersion(req) });
      } catch (err) {
        failHijacked(sock, err, req.log);
      }
    });

    // Binary frames from API 1.28 (text before); the stream flags count from 1.42, before which
    // all three streams are attached. Only an upgrade request is a websocket; `ws` makes the
    // handshake (a bad one is answered 400 there) and the framing.
    const wss = attachWebSocketServer();
    app.get('/containers/:id/attach/ws', { schema: { params: idParams, querystring: attachQuery } }, async (req, reply) => {
      const { c, keys } = ctl.prepareAttach(req.params.id, req.query.detachKeys);
      const head = upgradeHead(req.raw);
      checkWebsocketRequest(req.raw, head);
      reply.hijack();
      const version = apiVersion(req);
      const want = version < 1.42 ? { ...req.query, stdin: true, stdout: true, stderr: true } : req.query;
      wss.handleUpgrade(req.raw, req.raw.socket, head, (socket) => {
        const ws = new WebSocketDuplex(socket, { binary: version >= 1.28 });
        ws.on('error', () => {});
        ctl.runAttach(ws, c, keys, want, { kind: 'websocket' }).catch((err: unknown) => {
          req.log.warn({ err }, 'websocket attach failed');
          ws.destroy();
        });
      });
    });

    app.post('/containers/:id/resize', { schema: { params: idParams, querystring: resizeQuery } }, async (req, reply) => {
      const c = findContainer(deps.store, req.params.id);
      if (c.status.phase !== 'running' && c.status.phase !== 'paused') throw conflict(`Container ${c.name} is not running`);
      await deps.streams.resize(c.name, req.query.w, req.query.h);
      reply.code(200).type('text/plain').send('');
    });

    app.post('/containers/:id/exec', { schema: { params: idParams, body: ExecCreateBody } }, async (req, reply) => {
      const id = ctl.createExec(req.params.id, req.body);
      reply.code(201).send({ Id: id });
    });

    app.get('/exec/:id/json', { schema: { params: idParams } }, async (req) => deps.execs.inspect(req.params.id));

    app.post('/exec/:id/resize', { schema: { params: idParams, querystring: resizeQuery } }, async (req, reply) => {
      await deps.execs.resize(req.params.id, req.query.w, req.query.h);
      reply.code(200).type('text/plain').send('');
    });

    app.post('/exec/:id/start', { schema: { params: idParams, querystring: z.looseObject({ detachKeys: q.str() }), body: ExecStartBody } }, async (req, reply) => {
      const head = upgradeHead(req.raw);
      const sock = req.raw.socket;
      // An upgrade request's body is on the socket, read here; the bytes after it are stdin.
      let body = req.body;
      let rest: Buffer | undefined;
      if (head) {
        const got = await readUpgradeBody(req.raw, sock, head);
        body = parseWith(ExecStartBody, jsonOf(got.body));
        rest = got.rest;
      }
      const ex = deps.execs.inspect(req.params.id);
      if (body.Detach) {
        if (ex.Running || ex.ExitCode !== null) throw conflict(ex.Running ? `exec command ${ex.ID} is already running` : `exec command ${ex.ID} has already run`);
        await deps.execs.start(ex.ID, { tty: ex.ProcessConfig.tty, consoleSize: body.ConsoleSize ?? null });
        reply.code(200).type('text/plain').send('');
        return;
      }
      reply.hijack();
      if (rest?.length) sock.unshift(rest);
      try {
        await ctl.runExec(sock, !!head, ex.ID, body, apiVersion(req), req.query.detachKeys || undefined);
      } catch (err) {
        failHijacked(sock, err, req.log);
      }
    });
  };
}

/** An upgrade request's JSON body, read from the socket by hand (empty: no options). */
function jsonOf(body: Buffer): unknown {
  if (!body.length) return undefined;
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    throw invalidArgument('invalid character in exec start body');
  }
}

/** A failure after the route took the connection: the answer, if nothing was written yet, or the log. */
function failHijacked(sock: Duplex, err: unknown, log: { warn(o: object, m: string): void }): void {
  if (!(err instanceof EngineError)) log.warn({ err }, 'attach failed');
  if (sock.writable) jsonError(sock, err);
}

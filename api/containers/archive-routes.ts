// A container's files as tar: `docker cp` both ways (the archive endpoints, with the path's stat in
// a header) and `docker export` of the whole root filesystem.
import { pipeline } from 'node:stream/promises';
import * as z from 'zod';
import { invalidArgument } from '../../lib/errors.ts';
import type { App } from '../app.ts';
import type { PathStat } from '../ports.ts';
import { idParams, q } from '../request.ts';
import type { ContainerRouteDeps } from './routes.ts';
import { findContainer } from '../../store/kinds/container.ts';

function statHeader(st: PathStat): string {
  return Buffer.from(JSON.stringify(st)).toString('base64');
}

function archivePath(p: string | undefined): string {
  if (!p) throw invalidArgument('bad parameter: path cannot be empty');
  return p;
}

export function archiveRoutes(deps: ContainerRouteDeps) {
  const { store } = deps;
  return async function register(app: App): Promise<void> {
    const pathQuery = z.looseObject({ path: q.str() });

    app.head('/containers/:id/archive', { schema: { params: idParams, querystring: pathQuery } }, async (req, reply) => {
      const c = findContainer(store, req.params.id);
      const st = await deps.ops.statPath(c.name, archivePath(req.query.path));
      reply.header('X-Docker-Container-Path-Stat', statHeader(st)).code(200).send();
    });

    app.get('/containers/:id/archive', { schema: { params: idParams, querystring: pathQuery } }, async (req, reply) => {
      const c = findContainer(store, req.params.id);
      const abort = new AbortController();
      const { stat, stream } = await deps.ops.getArchive(c.name, archivePath(req.query.path), abort.signal);
      reply.hijack();
      const res = reply.raw;
      res.on('close', () => abort.abort());
      res.writeHead(200, { 'Content-Type': 'application/x-tar', 'X-Docker-Container-Path-Stat': statHeader(stat) });
      await pipeline(stream, res).catch(() => res.destroy());
    });

    const putQuery = z.looseObject({ path: q.str(), noOverwriteDirNonDir: q.bool(), copyUIDGID: q.bool() });
    // The body is the tar itself, streamed from the request (never parsed by the app).
    app.put('/containers/:id/archive', { schema: { params: idParams, querystring: putQuery } }, async (req, reply) => {
      const c = findContainer(store, req.params.id);
      // A read-only rootfs or mount refuses (403) in the ops, where the path is resolved: a
      // writable volume of a --read-only container takes files.
      const path = archivePath(req.query.path);
      const abort = new AbortController();
      req.raw.on('close', () => {
        if (!req.raw.complete) abort.abort();
      });
      await deps.ops.putArchive(c.name, path, req.raw, { noOverwriteDirNonDir: req.query.noOverwriteDirNonDir, copyUIDGID: req.query.copyUIDGID }, abort.signal);
      reply.code(200).type('text/plain').send('');
    });

    app.get('/containers/:id/export', { schema: { params: idParams } }, async (req, reply) => {
      const c = findContainer(store, req.params.id);
      const abort = new AbortController();
      const stream = await deps.ops.exportRootfs(c.name, abort.signal);
      reply.hijack();
      const res = reply.raw;
      res.on('close', () => abort.abort());
      res.writeHead(200, { 'Content-Type': 'application/x-tar' });
      await pipeline(stream, res).catch(() => res.destroy());
    });
  };
}

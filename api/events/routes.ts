// GET /events: past events from the ring (since/until), then live ones until `until` or the
// client leaves. Headers are flushed at once; one JSON object per line.
import * as z from 'zod';
import type { App } from '../app.ts';
import { invalidArgument } from '../../lib/errors.ts';
import { parseTimestamp } from '../../lib/timestamp.ts';
import { q } from '../request.ts';
import { matchKVList, parseFilters, type Filters } from '../filters.ts';
import type { EngineEvent, EventRecorder } from './recorder.ts';

export function matches(e: EngineEvent, f: Filters): boolean {
  const any = (key: string, pred: (v: string) => boolean) => !f.get(key)?.length || f.get(key)!.some(pred);
  const attrs = e.Actor.Attributes;
  if (!any('type', (v) => v === e.Type)) return false;
  if (!any('event', (v) => e.Action === v || e.Action.startsWith(`${v}:`) || (v.startsWith('exec_') && e.Action.startsWith(v)))) return false;
  if (!any('scope', (v) => v === e.scope)) return false;
  const containers = f.get('container');
  if (containers?.length) {
    if (e.Type !== 'container') return false;
    if (!containers.some((v) => e.Actor.ID === v || e.Actor.ID.startsWith(v) || attrs.name === v)) return false;
  }
  const images = f.get('image');
  if (images?.length) {
    const img = e.Type === 'image' ? [e.Actor.ID, attrs.name] : [attrs.image];
    if (!images.some((v) => img.some((x) => x === v || (x && x.split(':')[0] === v)))) return false;
  }
  if (!matchKVList(f.get('label'), attrs)) return false;
  // network= and volume=: the actor's id or name, exactly or as a prefix (the reference's fuzzy match).
  const fuzzy = (v: string) => e.Actor.ID === v || e.Actor.ID.startsWith(v) || attrs.name === v || (!!attrs.name && attrs.name.startsWith(v));
  // These keys name an event type too: a filter on one keeps only that type's events.
  const ofType = (key: string, pred: (v: string) => boolean) => !f.get(key)?.length || (e.Type === key && f.get(key)!.some(pred));
  if (!ofType('network', fuzzy) || !ofType('volume', fuzzy) || !ofType('daemon', () => true)) return false;
  return true;
}

/** `-1` is the reference's "not given" (ParseTimestamps(v, -1)), as is an empty value. */
const timeQ = () => q.str().transform((v) => (v === '-1' ? undefined : v));
const eventsQuery = z.looseObject({ since: timeQ(), until: timeQ(), filters: q.str() });

export function eventRoutes(recorder: EventRecorder) {
  return async function register(app: App): Promise<void> {
    app.get('/events', { schema: { querystring: eventsQuery } }, async (req, reply) => {
      const query = req.query;
      // The reference does not validate the keys of /events: an unknown one is ignored.
      const filters = parseFilters(query.filters);
      const now = BigInt(Date.now()) * 1_000_000n;
      const since = query.since ? parseTimestamp(query.since, Date.now()) : undefined;
      const until = query.until ? parseTimestamp(query.until, Date.now()) : undefined;
      if (since !== undefined && until !== undefined && until < since) {
        throw invalidArgument(`\`since\` time (${query.since}) cannot be after \`until\` time (${query.until})`);
      }
      reply.hijack();
      const res = reply.raw;
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.flushHeaders();
      const send = (e: EngineEvent) => {
        if (matches(e, filters)) res.write(JSON.stringify(e) + '\n');
      };
      const live: EngineEvent[] = [];
      let replaying = true;
      const unsub = recorder.subscribe((e) => (replaying ? live.push(e) : until !== undefined && BigInt(e.timeNano) > until ? finish() : send(e)));
      if (since !== undefined) for (const e of recorder.history(since, until)) send(e);
      replaying = false;
      for (const e of live) if (until === undefined || BigInt(e.timeNano) <= until) send(e);
      let timer: NodeJS.Timeout | undefined;
      function finish() {
        unsub();
        if (timer) clearTimeout(timer);
        res.end();
      }
      if (until !== undefined) {
        const ms = Number((until - now) / 1_000_000n);
        if (ms <= 0) return finish();
        timer = setTimeout(finish, ms);
      }
      res.on('close', () => {
        unsub();
        if (timer) clearTimeout(timer);
      });
    });
  };
}

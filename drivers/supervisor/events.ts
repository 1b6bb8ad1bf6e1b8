// The supervisor's task event stream for one namespace: exits and OOMs, re-subscribed with backoff
// whenever the stream breaks (a supervisor restart). A subscription is not live when Subscribe
// returns, so each (re)subscription publishes a sync event until it echoes back, then calls onReady:
// the caller reconciles there, because events emitted while the stream was down are lost.
import type { Logger } from 'pino';
import type { ClientReadableStream } from '@grpc/grpc-js';
import { PublishRequest, SubscribeRequest, type Envelope } from './gen/events.ts';
import { TaskExit, TaskOOM, TaskPaused } from './gen/task-events.ts';
import { anyOf, connectSupervisor, nsMetadata, toDate, unary } from './rpc.ts';

export interface ExitEvent {
  containerId: string;
  /** The process id: equals containerId for the init process, else the exec id. */
  id: string;
  pid: number;
  exitStatus: number;
  exitedAt: Date | null;
}

export interface SubscribeEventsOptions {
  address: string;
  namespace: string;
  log: Logger;
  onExit: (e: ExitEvent) => void;
  onOom: (containerId: string) => void;
  /** Called each time a (re)subscription is confirmed live. */
  onReady?: () => void;
}

export interface EventSubscription {
  close(): void;
  /** Resolves when the first subscription is confirmed live (or after a bounded wait). */
  ready: Promise<void>;
  /** The current subscription is confirmed live: events emitted now will be delivered. */
  readonly live: boolean;
}

const SYNC_TOPIC = '/engine/sync';
const SYNC_TYPE = 'containerd.events.TaskPaused';
const HANDLED_TOPICS = ['/tasks/exit', '/tasks/oom'];

/** The payloads read here, by their bare type URLs. */
function payload<T>(env: Envelope, typeUrl: string, type: { decode(b: Uint8Array): T }): T | null {
  return env.event?.type_url === typeUrl ? type.decode(env.event.value) : null;
}

export function subscribeEvents(opts: SubscribeEventsOptions): EventSubscription {
  const log = opts.log.child({ component: 'supervisor-events', namespace: opts.namespace });
  const conn = connectSupervisor(opts.address);
  const ns = opts.namespace;
  const quoted = JSON.stringify(ns);
  // Only the topics handled below: every other task event (create, start, delete, exec...) would
  // be sent, decoded and dropped, several per container run.
  const filters = [...HANDLED_TOPICS, SYNC_TOPIC].map((t) => `namespace==${quoted},topic==${JSON.stringify(t)}`);
  let closed = false;
  let stream: ClientReadableStream<Envelope> | null = null;
  let liveGen: { synced: boolean } | null = null;
  let retryTimer: NodeJS.Timeout | null = null;
  let backoff = 100;
  let resolveReady!: () => void;
  const ready = new Promise<void>((r) => (resolveReady = r));

  const handle = (env: Envelope, gen: { synced: boolean; token: string }) => {
    if (env.namespace !== ns) return;
    if (env.topic === SYNC_TOPIC) {
      const d = payload(env, SYNC_TYPE, TaskPaused);
      if (!gen.synced && d?.container_id === gen.token) {
        gen.synced = true;
        liveGen = gen;
        backoff = 100;
        resolveReady();
        try {
          opts.onReady?.();
        } catch (err) {
          log.warn({ err }, 'onReady handler failed');
        }
      }
      return;
    }
    if (env.topic !== '/tasks/exit' && env.topic !== '/tasks/oom') return;
    try {
      const exit = payload(env, 'containerd.events.TaskExit', TaskExit);
      if (exit) opts.onExit({ containerId: exit.container_id, id: exit.id || exit.container_id, pid: exit.pid, exitStatus: exit.exit_status, exitedAt: toDate(exit.exited_at) });
      const oom = payload(env, 'containerd.events.TaskOOM', TaskOOM);
      if (oom) opts.onOom(oom.container_id);
    } catch (err) {
      log.warn({ err, topic: env.topic }, 'event handler failed');
    }
  };

  /** Publish a sync event until this subscription echoes it (bounded), so onReady means "live". */
  const barrier = async (gen: { synced: boolean; token: string }, s: ClientReadableStream<Envelope>) => {
    const until = Date.now() + 10_000;
    // The token rides in a TaskPaused payload: any message type works, this one is already in our protos.
    const request = PublishRequest.fromPartial({ topic: SYNC_TOPIC, event: anyOf(SYNC_TYPE, TaskPaused, TaskPaused.fromPartial({ container_id: gen.token })) });
    while (!gen.synced && !closed && stream === s && Date.now() < until) {
      await unary('Events.Publish', conn.events.publish.bind(conn.events), request, { namespace: ns, timeoutMs: 2_000 }).catch(() => {});
      await new Promise((r) => setTimeout(r, 20));
    }
    if (!gen.synced && !closed && stream === s) {
      log.warn('event subscription not confirmed live; continuing');
      resolveReady();
    }
  };

  const subscribe = () => {
    if (closed) return;
    const gen = { synced: false, token: `sync-${process.pid}-${Date.now()}-${Math.random().toString(36).slice(2, 8)}` };
    const s = conn.events.subscribe(SubscribeRequest.fromPartial({ filters }), nsMetadata(ns));
    stream = s;
    s.on('data', (env: Envelope) => {
      try {
        handle(env, gen);
      } catch (err) {
        log.warn({ err }, 'undecodable event');
      }
    });
    let ended = false;
    const onBroken = (err?: Error) => {
      if (ended) return;
      ended = true;
      if (liveGen === gen) liveGen = null;
      if (stream === s) stream = null;
      if (closed) return;
      const delay = backoff;
      backoff = Math.min(backoff * 2, 2_000);
      log.warn({ err: err?.message, retryMs: delay }, 'event stream broke; re-subscribing');
      retryTimer = setTimeout(() => {
        retryTimer = null;
        subscribe();
      }, delay);
    };
    s.on('error', (err) => onBroken(err));
    s.on('end', () => onBroken());
    void barrier(gen, s);
  };

  subscribe();

  return {
    ready,
    get live() {
      return !closed && liveGen !== null;
    },
    close() {
      if (closed) return;
      closed = true;
      if (retryTimer) clearTimeout(retryTimer);
      stream?.cancel();
      stream = null;
      resolveReady();
      conn.close();
    },
  };
}

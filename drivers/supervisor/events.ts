// The supervisor's task event stream for one namespace: exits and OOMs, re-subscribed with backoff
// whenever the stream breaks (a supervisor restart). A subscription is not live when Subscribe
// returns, so each (re)subscription publishes a sync event until it echoes back, then calls onReady:
// the caller reconciles there, because events emitted while the stream was down are lost.
import type { Logger } from 'pino';
import type { GrpcClient, ServerStream } from './grpc.ts';
import { decode, decodeAny, encode, newGrpcClient, nsMetadata, toDate, unary } from './proto.ts';

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
const HANDLED_TOPICS = ['/tasks/exit', '/tasks/oom'];
const SVC = 'containerd.services.events.v1.Events';

export function subscribeEvents(opts: SubscribeEventsOptions): EventSubscription {
  const log = opts.log.child({ component: 'supervisor-events', namespace: opts.namespace });
  const client: GrpcClient = newGrpcClient(opts.address);
  const ns = opts.namespace;
  const quoted = JSON.stringify(ns);
  // Only the topics handled below: every other task event (create, start, delete, exec...) would
  // be sent, decoded and dropped, several per container run.
  const filters = [...HANDLED_TOPICS, SYNC_TOPIC].map((t) => `namespace==${quoted},topic==${JSON.stringify(t)}`);
  let closed = false;
  let stream: ServerStream | null = null;
  let liveGen: { synced: boolean } | null = null;
  let retryTimer: NodeJS.Timeout | null = null;
  let backoff = 100;
  let resolveReady!: () => void;
  const ready = new Promise<void>((r) => (resolveReady = r));

  const handle = (env: Record<string, any>, gen: { synced: boolean; token: string }) => {
    if (env.namespace !== ns) return;
    if (env.topic === SYNC_TOPIC) {
      const d = decodeAny(env.event);
      if (!gen.synced && d?.value.container_id === gen.token) {
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
    const d = decodeAny(env.event);
    if (!d) return;
    try {
      if (d.type === 'containerd.events.TaskExit') {
        const v = d.value;
        opts.onExit({ containerId: v.container_id, id: v.id || v.container_id, pid: v.pid, exitStatus: v.exit_status, exitedAt: toDate(v.exited_at) });
      } else if (d.type === 'containerd.events.TaskOOM') {
        opts.onOom(d.value.container_id);
      }
    } catch (err) {
      log.warn({ err, topic: env.topic }, 'event handler failed');
    }
  };

  /** Publish a sync event until this subscription echoes it (bounded), so onReady means "live". */
  const barrier = async (gen: { synced: boolean; token: string }, s: ServerStream) => {
    const until = Date.now() + 10_000;
    // The token rides in a TaskPaused payload: any message type works, this one is already in our protos.
    const event = { type_url: 'containerd.events.TaskPaused', value: encode('containerd.events.TaskPaused', { container_id: gen.token }) };
    while (!gen.synced && !closed && stream === s && Date.now() < until) {
      await unary(client, SVC, 'Publish', 'containerd.services.events.v1.PublishRequest', 'google.protobuf.Empty', { topic: SYNC_TOPIC, event }, { namespace: ns, timeoutMs: 2_000 }).catch(() => {});
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
    const s = client.serverStream(`/${SVC}/Subscribe`, encode('containerd.services.events.v1.SubscribeRequest', { filters }), { headers: nsMetadata(ns) });
    stream = s;
    s.on('data', (buf: Buffer) => {
      try {
        handle(decode('containerd.services.events.v1.Envelope', buf), gen);
      } catch (err) {
        log.warn({ err }, 'undecodable event envelope');
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
      client.close();
    },
  };
}

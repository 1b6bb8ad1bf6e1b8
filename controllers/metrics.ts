// controller-runtime's metric families, recorded by the controller runner and its work queue, so
// every reconciler has them for free: one set of families on the daemon's prom-client registry
// (cmd passes it down), labelled by controller (and by queue name, the controller's).
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

/** What a work queue reports as it goes (controllers/work-queue.ts). */
export interface QueueMetrics {
  added(): void;
  retried(): void;
  /** A key was handed out after waiting `seconds` in the queue. */
  handedOut(seconds: number): void;
  /** A key's processing ended after `seconds`. */
  finished(seconds: number): void;
}

/** What the queue answers at scrape time. */
export interface QueueGauges {
  readonly length: number;
  /** Seconds of work in progress (all in-flight keys), and the longest single one. */
  unfinished(): { total: number; longest: number };
}

export type ReconcileResultLabel = 'success' | 'error' | 'requeue' | 'requeue_after';

/** What a controller reports per reconcile. */
export interface ControllerMetrics {
  reconciled(result: ReconcileResultLabel, seconds: number): void;
  workers(active: number, max: number): void;
  readonly queue: QueueMetrics;
  /** The queue to read depth and in-flight work from at scrape time. */
  watchQueue(q: QueueGauges): void;
}

const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

export class ControllerFamilies {
  private readonly queues = new Map<string, QueueGauges>();
  private readonly reconcileTotal: Counter<'controller' | 'result'>;
  private readonly reconcileErrors: Counter<'controller'>;
  private readonly reconcileTime: Histogram<'controller'>;
  private readonly activeWorkers: Gauge<'controller'>;
  private readonly maxConcurrent: Gauge<'controller'>;
  private readonly adds: Counter<'name'>;
  private readonly retries: Counter<'name'>;
  private readonly queueDuration: Histogram<'name'>;
  private readonly workDuration: Histogram<'name'>;

  constructor(registry: Registry) {
    const registers = [registry];
    const queues = this.queues;
    this.reconcileTotal = new Counter({ name: 'controller_runtime_reconcile_total', help: 'Total number of reconciliations per controller', labelNames: ['controller', 'result'], registers });
    this.reconcileErrors = new Counter({ name: 'controller_runtime_reconcile_errors_total', help: 'Total number of reconciliation errors per controller', labelNames: ['controller'], registers });
    this.reconcileTime = new Histogram({ name: 'controller_runtime_reconcile_time_seconds', help: 'Length of time per reconciliation per controller', labelNames: ['controller'], buckets: DURATION_BUCKETS, registers });
    this.activeWorkers = new Gauge({ name: 'controller_runtime_active_workers', help: 'Number of currently used workers per controller', labelNames: ['controller'], registers });
    this.maxConcurrent = new Gauge({ name: 'controller_runtime_max_concurrent_reconciles', help: 'Maximum number of concurrent reconciles per controller', labelNames: ['controller'], registers });
    new Gauge({
      name: 'workqueue_depth',
      help: 'Current depth of workqueue',
      labelNames: ['name'],
      registers,
      collect() {
        for (const [name, q] of queues) this.set({ name }, q.length);
      },
    });
    this.adds = new Counter({ name: 'workqueue_adds_total', help: 'Total number of adds handled by workqueue', labelNames: ['name'], registers });
    this.retries = new Counter({ name: 'workqueue_retries_total', help: 'Total number of retries handled by workqueue', labelNames: ['name'], registers });
    this.queueDuration = new Histogram({ name: 'workqueue_queue_duration_seconds', help: 'How long in seconds an item stays in workqueue before being requested', labelNames: ['name'], buckets: DURATION_BUCKETS, registers });
    this.workDuration = new Histogram({ name: 'workqueue_work_duration_seconds', help: 'How long in seconds processing an item from workqueue takes', labelNames: ['name'], buckets: DURATION_BUCKETS, registers });
    new Gauge({
      name: 'workqueue_unfinished_work_seconds',
      help: 'How many seconds of work has been done that is in progress and hasn\'t been observed by work_duration',
      labelNames: ['name'],
      registers,
      collect() {
        for (const [name, q] of queues) this.set({ name }, q.unfinished().total);
      },
    });
    new Gauge({
      name: 'workqueue_longest_running_processor_seconds',
      help: 'How many seconds has the longest running processor for workqueue been running',
      labelNames: ['name'],
      registers,
      collect() {
        for (const [name, q] of queues) this.set({ name }, q.unfinished().longest);
      },
    });
  }

  /** The metrics of the controller named `controller` (its queue carries the same name). */
  forController(controller: string): ControllerMetrics {
    const name = controller;
    const f = this;
    // Every series exists from the start (a scrape shows 0, not nothing).
    for (const result of ['success', 'error', 'requeue', 'requeue_after'] as const) f.reconcileTotal.inc({ controller, result }, 0);
    f.reconcileErrors.inc({ controller }, 0);
    f.adds.inc({ name }, 0);
    f.retries.inc({ name }, 0);
    return {
      reconciled(result, seconds) {
        f.reconcileTotal.inc({ controller, result });
        if (result === 'error') f.reconcileErrors.inc({ controller });
        f.reconcileTime.observe({ controller }, seconds);
      },
      workers(active, max) {
        f.activeWorkers.set({ controller }, active);
        f.maxConcurrent.set({ controller }, max);
      },
      queue: {
        added: () => f.adds.inc({ name }),
        retried: () => f.retries.inc({ name }),
        handedOut: (seconds) => f.queueDuration.observe({ name }, seconds),
        finished: (seconds) => f.workDuration.observe({ name }, seconds),
      },
      watchQueue(q) {
        f.queues.set(name, q);
      },
    };
  }
}

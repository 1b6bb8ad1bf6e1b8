// `engine apply --wait`'s progress, as compose shows an `up --wait`: each service's state as its
// containers go (Waiting for a dependency, Creating, Created, Starting, Started, Healthy) and Ready
// once the stack says so. On a terminal one line per service, rewritten in place as states change;
// otherwise (a pipe, a CI log) a plain line each time a service's state changes.
// The states come from the stack's status (desired and ready replicas, what a service waits for,
// its condition) and the project's containers as the Engine API lists them (created, running,
// their health), the same reads a client of the reference daemon makes.

/** A service's part of the stack's status, as GET /stacks/NAME answers it. */
export interface ServiceView {
  desired: number;
  ready: number;
  waitingOn?: string;
  conditions?: Array<{ type: string; status: string; reason?: string; message?: string }>;
}

/** One container of the project as GET /containers/json lists it. */
export interface ContainerView {
  Labels?: Record<string, string>;
  State?: string;
  Status?: string;
}

const SERVICE_LABEL = 'com.docker.compose.service';

/** The current condition (the True one, else the newest). */
function currentCondition(conds: ServiceView['conditions']): { type: string; reason?: string; message?: string } | undefined {
  return conds?.find((c) => c.status === 'True') ?? conds?.[conds.length - 1];
}

/** What a service is doing now, in compose's words; `containers` null when they are not to be seen here (a cluster stack's). */
export function serviceState(svc: ServiceView, containers: readonly ContainerView[] | null): string {
  const cond = currentCondition(svc.conditions);
  if (cond?.type === 'Ready' && svc.ready >= svc.desired) return 'Ready';
  if (cond?.type === 'Degraded') return `Degraded${cond.message ? `: ${cond.message}` : ''}`;
  if (svc.waitingOn) return `Waiting for ${svc.waitingOn}`;
  if (svc.desired === 0) return 'Ready';
  if (!containers) return `Starting ${svc.ready}/${svc.desired}`;
  const running = containers.filter((c) => c.State === 'running');
  if (containers.length === 0) return 'Creating';
  if (running.length === 0) return 'Created';
  if (running.some((c) => /\(health: starting\)/.test(c.Status ?? ''))) return 'Starting';
  if (running.length >= svc.desired && running.every((c) => /\(healthy\)/.test(c.Status ?? ''))) return 'Healthy';
  return running.length >= svc.desired ? 'Started' : 'Starting';
}

/** The states of every service, keyed by service name, in the document's order. */
export function serviceStates(services: Record<string, ServiceView>, containers: readonly ContainerView[] | null): Array<[string, string]> {
  return Object.entries(services).map(([name, svc]) => [name, serviceState(svc, containers && containers.filter((c) => c.Labels?.[SERVICE_LABEL] === name))]);
}

export interface ProgressOut {
  write(s: string): void;
  isTTY?: boolean;
}

/** Prints the states as they change: plain lines, or on a terminal a block rewritten in place. */
export class ApplyProgress {
  private readonly out: ProgressOut;
  private readonly last = new Map<string, string>();
  private drawn = 0;

  constructor(out: ProgressOut) {
    this.out = out;
  }

  update(states: ReadonlyArray<[string, string]>): void {
    if (this.out.isTTY) {
      if (states.every(([n, s]) => this.last.get(n) === s) && this.drawn === states.length) return;
      const width = Math.max(0, ...states.map(([n]) => n.length));
      let text = this.drawn ? `\x1b[${this.drawn}A` : '';
      for (const [n, s] of states) text += `\x1b[2K Service ${n.padEnd(width)}  ${s}\n`;
      this.out.write(text);
      this.drawn = states.length;
    } else {
      for (const [n, s] of states) if (this.last.get(n) !== s) this.out.write(`Service ${n}  ${s}\n`);
    }
    for (const [n, s] of states) this.last.set(n, s);
  }
}

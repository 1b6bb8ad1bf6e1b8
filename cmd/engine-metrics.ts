// The reference daemon's own metric families (moby's daemon/metrics.go), on the registry cmd made:
// engine info, CPUs and memory, container states, events, and the time each container, network and
// image action takes (observed per API request, as the reference times its backend calls).
import { cpus, totalmem } from 'node:os';
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { SystemInfoPort } from '../api/ports.ts';
import { Containers, isRunning } from '../store/kinds/container.ts';
import type { Store } from '../store/store.ts';
import { ENGINE_VERSION, GIT_COMMIT } from './version.ts';

/** Which action of which family a route is (method and fastify route url). */
const ACTIONS: Record<string, ['container' | 'network' | 'image', string]> = {
  'POST /containers/create': ['container', 'create'],
  'POST /containers/:id/start': ['container', 'start'],
  'POST /containers/:id/stop': ['container', 'stop'],
  'POST /containers/:id/restart': ['container', 'restart'],
  'DELETE /containers/:id': ['container', 'delete'],
  'GET /containers/:id/changes': ['container', 'changes'],
  'POST /commit': ['container', 'commit'],
  'POST /networks/create': ['network', 'create'],
  'POST /networks/:id/connect': ['network', 'connect'],
  'POST /networks/:id/disconnect': ['network', 'disconnect'],
  'DELETE /networks/:id': ['network', 'delete'],
  'POST /images/create': ['image', 'pull'],
  'DELETE /images/:name': ['image', 'delete'],
  'GET /images/:name/history': ['image', 'history'],
  'POST /images/:name/tag': ['image', 'tag'],
  'POST /images/:name/push': ['image', 'push'],
  'POST /images/prune': ['image', 'prune'],
};

/** The reference's health-check and builder counters (moby's daemon/health.go, builder/dockerfile/metrics.go). */
export interface EngineCounters {
  /** One probe ran; `failed` when it could not be run at all (not a non-zero exit, not a timeout). */
  healthCheck(failed: boolean): void;
  buildTriggered(): void;
  buildFailed(err: unknown, canceled: boolean): void;
}

/** The reasons builder_builds_failed_total counts (all exported at 0, as the reference does). */
const BUILD_FAILURE_REASONS = [
  'build_canceled',
  'build_target_not_reachable_error',
  'command_not_supported_error',
  'dockerfile_empty_error',
  'dockerfile_syntax_error',
  'error_processing_commands_error',
  'missing_onbuild_arguments_error',
  'unknown_instruction_error',
] as const;

/** Which reason a failed build counts under, from the builder's error (its words are the reference's). */
export function buildFailureReason(err: unknown, canceled: boolean): (typeof BUILD_FAILURE_REASONS)[number] {
  if (canceled) return 'build_canceled';
  const message = err instanceof Error ? err.message : String(err);
  if (message.includes('unknown instruction:')) return 'unknown_instruction_error';
  if (message.includes('file with no instructions')) return 'dockerfile_empty_error';
  if (message.includes('dockerfile parse error')) return 'dockerfile_syntax_error';
  if (message.includes('failed to reach build target')) return 'build_target_not_reachable_error';
  return 'error_processing_commands_error';
}

export function registerEngineCounters(registry: Registry): EngineCounters {
  const registers = [registry];
  const checks = new Counter({ name: 'engine_daemon_health_checks_total', help: 'The total number of health checks', registers });
  const checksFailed = new Counter({ name: 'engine_daemon_health_checks_failed_total', help: 'The total number of failed health checks', registers });
  const triggered = new Counter({ name: 'builder_builds_triggered_total', help: 'Number of triggered image builds', registers });
  const failed = new Counter({ name: 'builder_builds_failed_total', help: 'Number of failed image builds', labelNames: ['reason'], registers });
  for (const reason of BUILD_FAILURE_REASONS) failed.inc({ reason }, 0);
  return {
    healthCheck: (f) => {
      checks.inc();
      if (f) checksFailed.inc();
    },
    buildTriggered: () => triggered.inc(),
    buildFailed: (err, canceled) => failed.inc({ reason: buildFailureReason(err, canceled) }),
  };
}

export interface EngineFamiliesDeps {
  store: Pick<Store, 'list'>;
  info: SystemInfoPort;
  events: { readonly emitted: number; readonly subscribers: number };
}

/** Registers the families; answers the hook the API calls when a request is answered. */
export function registerEngineFamilies(registry: Registry, deps: EngineFamiliesDeps): (method: string, route: string | undefined, seconds: number) => void {
  const registers = [registry];
  const timers = {
    container: new Histogram({ name: 'engine_daemon_container_actions_seconds', help: 'The number of seconds it takes to process each container action', labelNames: ['action'], registers }),
    network: new Histogram({ name: 'engine_daemon_network_actions_seconds', help: 'The number of seconds it takes to process each network action', labelNames: ['action'], registers }),
    image: new Histogram({ name: 'engine_daemon_image_actions_seconds', help: 'The number of seconds it takes to process each image action', labelNames: ['action'], registers }),
  };
  for (const [family, action] of Object.values(ACTIONS)) timers[family].zero({ action });
  new Gauge({
    name: 'engine_daemon_engine_info',
    help: 'The information related to the engine and the OS it is running on',
    labelNames: ['version', 'commit', 'architecture', 'graphdriver', 'kernel', 'os', 'os_type', 'os_version', 'daemon_id'],
    registers,
    async collect() {
      const i = await deps.info.info();
      const s = (k: string) => (typeof i[k] === 'string' ? (i[k] as string) : '');
      this.reset();
      this.set(
        { version: ENGINE_VERSION, commit: GIT_COMMIT, architecture: s('Architecture'), graphdriver: s('Driver'), kernel: s('KernelVersion'), os: s('OperatingSystem'), os_type: s('OSType'), os_version: s('OSVersion'), daemon_id: s('ID') },
        1,
      );
    },
  });
  new Gauge({ name: 'engine_daemon_engine_cpus_cpus', help: 'The number of cpus that the host system of the engine has', registers }).set(cpus().length);
  new Gauge({ name: 'engine_daemon_engine_memory_bytes', help: 'The number of bytes of memory that the host system of the engine has', registers }).set(totalmem());
  new Gauge({
    name: 'engine_daemon_container_states_containers',
    help: 'The count of containers in various states',
    labelNames: ['state'],
    registers,
    collect() {
      let running = 0;
      let paused = 0;
      let stopped = 0;
      for (const c of deps.store.list(Containers)) {
        if (c.status.phase === 'paused') paused++;
        else if (isRunning(c.status)) running++;
        else stopped++;
      }
      this.set({ state: 'running' }, running);
      this.set({ state: 'paused' }, paused);
      this.set({ state: 'stopped' }, stopped);
    },
  });
  let counted = 0;
  new Counter({
    name: 'engine_daemon_events_total',
    help: 'The number of events logged',
    registers,
    collect() {
      const now = deps.events.emitted;
      if (now > counted) this.inc(now - counted);
      counted = now;
    },
  });
  new Gauge({
    name: 'engine_daemon_events_subscribers_total',
    help: 'The number of current subscribers to events',
    registers,
    collect() {
      this.set(deps.events.subscribers);
    },
  });
  return (method, route, seconds) => {
    const hit = route ? ACTIONS[`${method} ${route}`] : undefined;
    if (hit) timers[hit[0]].observe({ action: hit[1] }, seconds);
  };
}

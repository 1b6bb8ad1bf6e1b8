// What the API and the healthcheck probes do with execs (api/ports.ts ExecPort), over the exec
// records: create writes one; start writes the start into its spec and waits for the exec
// reconciler to record the process running (or why it could not start); inspect and resize read
// the record. The stream of a start is the process's hub, handed over before the process starts.
import { conflict, EngineError, notFound, unavailable, type ErrorCode } from '../../lib/errors.ts';
import { newId } from '../../lib/ids.ts';
import { execRunning, Execs, newExecStatus, type ExecConfig, type ExecResource } from '../../store/kinds/exec.ts';
import type { Store } from '../../store/store.ts';
import type { HubLike, SupervisorPort } from '../container/deps.ts';
import type { ExecProcesses } from './processes.ts';
import type { ExecHost } from './reconciler.ts';

/** How long a start or a resize waits for the process (the reference's resize waits 10 s). */
const START_WAIT_MS = 120_000;
const RESIZE_WAIT_MS = 10_000;

export interface ExecPortDeps {
  store: Pick<Store, 'get' | 'create' | 'updateSpec' | 'waitFor'>;
  processes: Pick<ExecProcesses, 'watch'>;
  host: ExecHost;
  supervisor: Pick<SupervisorPort, 'resizePty'>;
}

const started = (r: ExecResource | undefined) => !r || (r.spec.desired === 'started' && r.status.observedGeneration >= r.generation && (r.status.phase === 'running' || r.status.phase === 'exited'));

export function execPort(deps: ExecPortDeps) {
  const { store } = deps;
  const get = (id: string): ExecResource => {
    const r = store.get(Execs, id);
    if (!r) throw notFound(`No such exec instance: ${id}`);
    return r;
  };

  return {
    /** `probe`: a healthcheck's exec, deleted as soon as it ended. */
    create(containerId: string, config: ExecConfig, opts: { probe?: boolean } = {}): string {
      if (!deps.host.runInfo(containerId)) throw conflict(`container ${containerId} is not running`);
      const id = newId();
      store.create(Execs, id, { containerId, config, desired: 'created', ...(opts.probe ? { probe: true } : {}) }, newExecStatus());
      return id;
    },

    inspect(id: string) {
      const ex = get(id);
      const [entrypoint = '', ...args] = ex.spec.config.Cmd;
      const c = ex.spec.config;
      return {
        ID: ex.name,
        Running: execRunning(ex),
        ExitCode: ex.status.exitCode,
        ProcessConfig: { tty: c.Tty, entrypoint, arguments: args, privileged: c.Privileged, user: c.User },
        OpenStdin: c.AttachStdin,
        OpenStderr: c.AttachStderr,
        OpenStdout: c.AttachStdout,
        CanRemove: false,
        ContainerID: ex.spec.containerId,
        DetachKeys: c.DetachKeys,
        Pid: ex.status.pid,
      };
    },

    /**
     * Asks for the start (an exec starts once: a second start is refused as the reference refuses
     * it) and resolves once the process runs; `onHub` gets its stream before it starts. `exited`
     * resolves with the exit code once it is recorded.
     */
    async start(id: string, opts: { tty: boolean; consoleSize?: [number, number] | null }, onHub?: (hub: HubLike) => void): Promise<{ exited: Promise<number> }> {
      const ex = get(id);
      if (ex.spec.desired === 'started' || ex.status.phase !== 'created') throw conflict(ex.status.phase === 'exited' ? `exec command ${id} has already run` : `exec command ${id} is already running`);
      if (!deps.host.runInfo(ex.spec.containerId)) throw conflict(`container ${ex.spec.containerId} is not running`);
      const unwatch = onHub ? deps.processes.watch(id, onHub) : () => {};
      try {
        store.updateSpec(Execs, id, (s) => ({ ...s, desired: 'started', start: { tty: opts.tty, consoleSize: opts.consoleSize ?? null } }));
        const r = await store.waitFor(Execs, id, started, { timeoutMs: START_WAIT_MS });
        if (!r) throw notFound(`No such exec instance: ${id}`);
        if (!started(r)) throw unavailable(`exec ${id} did not start in time`);
        if (r.status.phase === 'exited' && r.status.error) throw new EngineError((r.status.errorCode || 'Internal') as ErrorCode, r.status.error);
      } finally {
        unwatch();
      }
      const exited = store.waitFor(Execs, id, (x) => !x || x.status.phase === 'exited').then((x) => x?.status.exitCode ?? 137);
      return { exited };
    },

    /**
     * As the reference: a resize that comes while the exec is starting waits (up to 10 s) for its
     * process, then resizes its terminal; one sent before the process existed would be lost.
     */
    async resize(id: string, width: number, height: number): Promise<void> {
      const ex = get(id);
      const notRunning = () => conflict(`Exec ${id} is not running, so it can not be resized.`);
      if (!execRunning(ex)) throw notRunning();
      if (ex.status.phase !== 'running') {
        const r = await store.waitFor(Execs, id, (x) => !x || x.status.phase === 'running' || x.status.phase === 'exited', { timeoutMs: RESIZE_WAIT_MS });
        if (r && r.status.phase !== 'running' && r.status.phase !== 'exited') throw unavailable('timeout waiting for exec session ready');
        if (!r || r.status.phase !== 'running') throw notRunning();
      }
      await deps.supervisor.resizePty(ex.spec.containerId, id, width, height);
    },
  };
}

export type ExecService = ReturnType<typeof execPort>;

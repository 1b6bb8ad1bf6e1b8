// The steps of a container's runs, each safe to repeat after a crash at any line: prepare the
// container (directory, /etc files, read-write layer), start a run (supervisor record, stdio,
// log writer, task, network), signal it, collect it once it exited, and clear what the
// supervisor still holds. The reconciler decides which step is due; these perform them and
// stage what they observed in status.
import { appendFileSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { rm, rmdir, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { errorCode, isCode } from '../../lib/errors.ts';
import { rfc3339Nano, ZERO_TIME } from '../../lib/ids.ts';
import { type ContainerSpec, Containers, type PublishedPort } from '../../store/kinds/container.ts';

import type { ReconcilerStore } from '../store-like.ts';
import type { ContainerReconcilerDeps, LoggerLike, ProcessIOLike } from './deps.ts';
import { withCloseIO } from './close-io.ts';
import { containerLogInfo } from './deps.ts';
import type { Run, RunRegistry } from './runs.ts';
import { bindShm, joinNamespaceOf } from './namespaces.ts';
import { primaryRequest } from './endpoint-config.ts';
import { primaryEndpoint } from '../../store/kinds/endpoint.ts';
import { copyUpVolumes, volumeMountSources } from './volume-steps.ts';
import { linkedContainers, linkEnv, writeLinkHosts } from './links.ts';
import { RunNetwork } from './run-network.ts';
import { SupervisorRecords } from './supervisor-records.ts';
import { parseSignal } from './signals.ts';
import type { StagedStatus } from './staged-status.ts';
import { Images } from '../../store/kinds/image.ts';
import { cachedLogPath, REMOTE_DRIVERS } from '../../drivers/logging/cache.ts';

export interface ReconcileContext {
  signal: AbortSignal;
  log: Logger;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms).unref());

/** `p`, or nothing after `ms`; the timer goes when `p` settles first. */
function within(p: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const t = new Promise<void>((r) => (timer = setTimeout(r, ms).unref()));
  return Promise.race([p.then(() => {}, () => {}), t]).finally(() => clearTimeout(timer));
}

export class RunSteps {
  private readonly store: ReconcilerStore;
  private readonly deps: ContainerReconcilerDeps;
  private readonly runs: RunRegistry;
  private readonly status: StagedStatus;
  /** The network side of the runs (./run-network.ts). */
  readonly net: RunNetwork;
  /** What the supervisor holds for each container (./supervisor-records.ts). */
  readonly records: SupervisorRecords;

  constructor(store: ReconcilerStore, deps: ContainerReconcilerDeps, runs: RunRegistry, status: StagedStatus) {
    this.store = store;
    this.deps = deps;
    this.runs = runs;
    this.status = status;
    this.net = new RunNetwork(store, deps, status);
    this.records = new SupervisorRecords(deps.supervisor);
  }

  containerDir(id: string): string {
    return join(this.deps.dataRoot, 'containers', id);
  }

  /** `--network|--pid|--ipc container:<ref>` into the OCI spec (see namespaces.ts). */
  private join(oci: object, type: 'network' | 'pid' | 'ipc', ref: string): void {
    joinNamespaceOf(oci as Record<string, unknown>, type, ref, {
      containers: this.store.list(Containers),
      runOf: (cid) => this.runs.get(cid),
      shmDirOf: this.deps.shm ? (cid) => this.shmDir(cid) : undefined,
    });
  }

  /** The host-side /dev/shm of an IPC-shareable container. */
  shmDir(id: string): string {
    return join(this.containerDir(id), 'shm');
  }

  fifoDir(id: string): string {
    return join(this.deps.execRoot, 'supervisor', id);
  }

  /** Create step: the container's directory, /etc files and read-write layer. */
  async prepare(id: string, spec: ContainerSpec): Promise<void> {
    const dir = this.containerDir(id);
    mkdirSync(dir, { recursive: true, mode: 0o710 });
    const ep = await this.deps.network?.allocate(id, spec.hostConfig.NetworkMode, primaryRequest(spec, primaryEndpoint(this.store, id)));
    const nameserver = ep ? this.deps.network?.nameserverFor(ep) : undefined;
    const files = await this.deps.spec.writeEtcFiles(dir, spec.config, spec.hostConfig, nameserver ? { nameserver } : {});
    if (ep) appendFileSync(files.hosts, `${ep.IPAddress}\t${spec.config.Hostname}\n${ep.GlobalIPv6Address ? `${ep.GlobalIPv6Address}\t${spec.config.Hostname}\n` : ''}`);
    const image = this.store.get(Images, spec.imageId);
    await this.deps.layers.createRW(id, image?.spec.chainId ?? null);
    await copyUpVolumes(id, spec, this.deps.layers, this.deps.volumes);
    this.status.stage(id, (s) => ({
      ...s,
      prepared: true,
      endpoint: ep ?? null,
      logPath: logPathFor(dir, id, spec.hostConfig.LogConfig.Type),
      hostnamePath: files.hostname,
      hostsPath: files.hosts,
      resolvConfPath: files.resolvConf,
      driver: this.deps.layers.driverName,
    }));
  }

  async startRun(id: string, ctx: ReconcileContext): Promise<void> {
    const spec = this.store.get(Containers, id)!.spec;
    const status = this.status.get(id);
    const sup = this.deps.supervisor;
    let io: ProcessIOLike | undefined;
    let logger: LoggerLike | null = null;
    let created = false;
    let creating: Promise<boolean> | undefined;
    let plumbing: Promise<PublishedPort[]> | undefined;
    let netnsPath: string | undefined;
    const taskCreated = Promise.withResolvers<void>();
    taskCreated.promise.catch(() => {});
    /** Resolved as the task's creation is asked for: the network plumbing's spawns wait for it. */
    const taskRequested = Promise.withResolvers<void>();
    taskRequested.promise.catch(() => {});
    try {
      const linked = linkedContainers(this.store, spec);
      writeLinkHosts(status.hostsPath, linked);
      const ep = await this.net.primaryEndpointOf(id, spec);
      if (ep && this.deps.netns) netnsPath = this.net.netnsPath(id);
      const { oci, rootfs } = await this.runSpec(id, spec, linked, netnsPath);
      const mode = spec.hostConfig.NetworkMode;
      const runtime = this.deps.runtimes.resolve(spec.hostConfig.Runtime);
      this.records.clean.delete(id);
      // The supervisor's record is created while the FIFOs and the log file are prepared here.
      // The network tools run while the supervisor works, never before a request to it: each
      // spawn stalls this thread for its fork (~3-5 ms at this process's size, page tables copied).
      const record = this.records.create(id, { id, spec: oci, runtime, labels: { 'engine/container': 'true' } });
      creating = record.then(() => true, () => false);
      // On a network: its namespace is made now, and plumbed (interface, addresses, host ports)
      // while the supervisor creates the task that joins it.
      let netnsMade: Promise<void> | undefined;
      if (netnsPath) {
        netnsMade = this.deps.netns!.create(netnsPath);
        plumbing = netnsMade.then(() => this.net.plumb(id, spec, ep!, netnsPath!, taskRequested.promise));
        plumbing.catch(() => {}); // awaited below, or settled by the failure path
      }
      io = await this.deps.stdio.open({ dir: this.fifoDir(id), procId: 'init', stdin: !!spec.config.OpenStdin, tty: !!spec.config.Tty });
      const hub = withCloseIO(this.deps.stdio.hub(io), () => sup.closeIO(id, undefined), taskCreated.promise);
      this.runs.announce(id, hub, (err) => ctx.log.warn({ err }, 'attach watcher failed'));
      if (status.logPath) {
        logger = await this.deps.logging.open(id, status.logPath, spec.hostConfig.LogConfig, containerLogInfo(spec));
        if (logger) {
          const l = logger;
          hub.subscribe((stream, chunk) => l.log(stream, chunk), undefined, { copies: l.copiesChunks === true });
        }
      }
      await record;
      created = true;
      await netnsMade;
      const creatingTask = sup.createTask({ containerId: id, stdin: io.paths.stdin, stdout: io.paths.stdout, stderr: io.paths.stderr, terminal: !!spec.config.Tty }).catch((err) => {
        taskCreated.reject(err);
        throw err;
      });
      // A turn of the loop for the request to reach the supervisor's socket first.
      setImmediate(() => taskRequested.resolve());
      const task = await creatingTask;
      taskCreated.resolve();
      let ports: PublishedPort[] = [];
      if (plumbing) ports = await plumbing;
      else if (ep) {
        // No namespace of our own to plumb early: into the task's, by its pid.
        plumbing = this.net.plumb(id, spec, ep, task.pid, Promise.resolve());
        ports = await plumbing;
      }
      if (ep && linked.length) await this.deps.links?.allow(id, ep.NetworkID, ep.IPAddress, linked);
      const run = this.runs.add(id, { io, hub, logger, pid: task.pid, startedAt: Date.now(), oci: oci as Run['oci'], rootfs });
      const { pid } = await sup.startTask(id);
      run.pid = pid;
      this.status.stage(id, (s) => ({
        ...s,
        phase: 'running',
        pid,
        sandboxKey: mode === 'host' ? '' : `/proc/${pid}/ns/net`,
        ports,
        // The limits this run started with; a later `docker update` is applied from here.
        appliedResources: JSON.stringify(this.deps.spec.updateResources(spec.hostConfig)),
        updateError: '',
        startedAt: rfc3339Nano(),
        finishedAt: s.finishedAt || ZERO_TIME,
        exitCode: 0,
        error: '',
        errorCode: '',
        oomKilled: false,
      }));
    } catch (err) {
      taskRequested.reject(err);
      this.runs.delete(id);
      io?.close();
      await logger?.close().catch(() => {});
      if (!created && creating) created = await creating;
      if (created) await this.records.clear(id);
      await this.deps.layers.unmountRW(id).catch(() => {});
      await this.deps.volumes?.releaseRun(id).catch(() => {});
      // Plumbing still under way must end before what it made is taken away.
      await plumbing?.catch(() => {});
      await this.deps.ports?.unpublish(id).catch(() => {});
      if (netnsPath) await this.net.unplug(id).catch(() => {});
      await this.deps.links?.revoke(id).catch(() => {});
      const message = err instanceof Error ? err.message : String(err);
      const exitCode = runtimeExitCode(message);
      ctx.log.info({ err: message }, 'container start failed');
      this.status.stage(id, (s) => ({
        ...s,
        error: message,
        errorCode: exitCode !== null ? 'InvalidArgument' : errorCode(err),
        exitCode: exitCode ?? 128,
        pid: 0,
      }));
    }
  }

  /**
   * What a run of the container is made of: its volumes' sources, its root filesystem mounted, and
   * the OCI spec (namespaces it joins, a shareable /dev/shm). A start creates the task from it; an
   * adoption keeps it for exec.
   */
  async runSpec(id: string, spec: ContainerSpec, linked: ReturnType<typeof linkedContainers>, netnsPath?: string): Promise<{ oci: Run['oci']; rootfs: string }> {
    const status = this.status.get(id);
    const volumeMounts = await volumeMountSources(id, spec, this.deps.volumes);
    const rootfs = await this.deps.layers.mountRW(id);
    const oci = await this.deps.spec.build({
      volumeMounts,
      id,
      config: spec.config,
      hostConfig: spec.hostConfig,
      path: spec.path,
      args: spec.args,
      rootfs,
      // The links' variables; the container's own Env overrides them.
      imageEnv: linked.flatMap(linkEnv),
      files: { hostname: status.hostnamePath, hosts: status.hostsPath, resolvConf: status.resolvConfPath },
      cgroupsPath: `${this.deps.cgroupParent}/${id}`,
      ...(netnsPath ? { netnsPath } : {}),
    });
    const mode = spec.hostConfig.NetworkMode;
    if (mode.startsWith('container:')) this.join(oci, 'network', mode.slice('container:'.length));
    const pidMode = String(spec.hostConfig.PidMode ?? '');
    if (pidMode.startsWith('container:')) this.join(oci, 'pid', pidMode.slice('container:'.length));
    const ipcMode = String(spec.hostConfig.IpcMode ?? '');
    if (ipcMode.startsWith('container:')) this.join(oci, 'ipc', ipcMode.slice('container:'.length));
    if (ipcMode === 'shareable' && this.deps.shm) {
      // Its /dev/shm lives on the host, where the containers joining its IPC find it.
      await this.deps.shm.ensure(this.shmDir(id), Number(spec.hostConfig.ShmSize) || 64 * 1024 * 1024);
      bindShm(oci as Record<string, unknown>, this.shmDir(id));
    }
    return { oci: oci as Run['oci'], rootfs };
  }

  async signal(id: string, sig: number): Promise<void> {
    try {
      await this.deps.supervisor.killTask(id, sig);
    } catch (err) {
      if (!isCode(err, 'NotFound')) throw err;
    }
  }

  /** Stop signal, up to `timeoutS` seconds (negative: forever), then SIGKILL. */
  async stopProcess(id: string, run: Run, stopSignal: string | undefined, timeoutS: number): Promise<void> {
    if (this.status.get(id).phase === 'paused') {
      await this.deps.supervisor.resume(id).catch(() => {});
    }
    await this.signal(id, parseSignal(stopSignal, 'SIGTERM'));
    if (timeoutS >= 0) {
      const done = await Promise.race([run.exited.then(() => true), sleep(timeoutS * 1000).then(() => false)]);
      if (done) return;
      await this.deps.supervisor.killTask(id, 9, { all: true }).catch((err) => {
        if (!isCode(err, 'NotFound')) throw err;
      });
    }
    await Promise.race([run.exited, sleep(30_000)]);
  }

  /**
   * Collect an exited run: exit code, drain output, unmount, record the exit. Answers how long it ran
   * (ms). `phaseAfter` names the phase recorded with the exit: `restarting` when the restart policy
   * starts it again, so a `wait` that returns on this exit never reads `exited` in between.
   */
  async finishRun(id: string, run: Run, phaseAfter: (exitCode: number) => 'exited' | 'restarting' = () => 'exited'): Promise<number> {
    const exit = run.exit ?? (await run.exited);
    const exitStatus = exit.exitStatus;
    const exitedAt = exit.exitedAt;
    // The task's deletion (the shim's teardown, the slow part) runs beside the output drain and
    // the network cleanup. The exit is published once all of it is done, as the reference records
    // a stop only after deleting the task and releasing the network: a `wait` answers with the
    // container's resources free, and the removal that usually follows has nothing left to wait
    // for. (Publishing it before the teardown, for compose's one-off run, made the suite flaky:
    // see issue 77's note.) The output is in the log by then (a `logs` right after `wait` sees
    // all of it). Once the task is gone its root filesystem is unmounted while the supervisor's
    // record goes.
    const task = (async () => {
      try {
        await this.deps.supervisor.deleteTask(id);
      } catch (err) {
        if (!isCode(err, 'NotFound')) this.deps.log.warn({ err, id }, 'delete task failed');
      }
      const [gone] = await Promise.all([
        this.records.delete(id),
        this.deps.layers.unmountRW(id).catch((err) => this.deps.log.warn({ err, id }, 'unmount failed')),
        this.deps.volumes?.releaseRun(id).catch((err) => this.deps.log.warn({ err, id }, 'volume unmount failed')),
        this.deps.shm?.release(this.shmDir(id)).catch((err) => this.deps.log.warn({ err, id }, 'shm unmount failed')),
      ]);
      if (gone) this.records.clean.add(id);
    })();
    // The host ports go before the exit is published, as the reference releases the network before
    // it records the stop: a `docker stop a && docker run -p <a's port> b` must find the port free.
    const ports = this.deps.ports?.unpublish(id).catch((err) => this.deps.log.warn({ err, id }, 'releasing published ports failed'));
    const net = Promise.all([
      this.net.unplug(id).catch((err) => this.deps.log.warn({ err, id }, 'network detach failed')),
      this.deps.links?.revoke(id),
    ]);
    // The output ends with the process (or within 2 s, when something else holds its pipes): the
    // streams close and the log is flushed and closed then, while the task is being deleted.
    const output = within(run.hub.ended, 2000).then(async () => {
      this.runs.stopWatching(run);
      run.reset = true;
      run.io.close();
      await run.logger?.close().catch(() => {});
    });
    await Promise.all([output, ports, task, net]);
    const ranMs = Date.now() - run.startedAt;
    // Decided before the write (it reads the status being written).
    const phase = phaseAfter(exitStatus);
    this.status.set(id, (s) => ({
      ...s,
      phase,
      pid: 0,
      exitCode: exitStatus,
      oomKilled: run.oom,
      finishedAt: rfc3339Nano(exitedAt ?? new Date()),
      exitSeq: s.exitSeq + 1,
      stopDeadline: null,
      stopKilled: false,
      ports: [],
    }));
    run.markRecorded();
    await this.deps.stdio.remove(this.fifoDir(id), 'init').catch(() => {});
    this.runs.delete(id, run);
    return ranMs;
  }

  /**
   * Removal, once no run is left: whatever the supervisor still holds, the network endpoint and
   * address, the read-write layer, the container's directory and FIFOs. The caller deletes the record.
   */
  async teardown(id: string): Promise<void> {
    if (!this.records.clean.has(id)) await this.records.clear(id);
    await this.deps.shm?.release(this.shmDir(id)).catch((err) => this.deps.log.warn({ err, id }, 'shm unmount failed'));
    this.status.set(id, (s) => ({ ...s, phase: 'removing' }));
    const network = this.deps.network;
    await Promise.all([
      this.net.unplug(id).catch(() => {}).then(() => network?.release(id)),
      this.deps.layers.removeRW(id),
      this.removeContainerDir(id),
    ]);
    // Normally gone with the run's FIFOs already: one lstat.
    rmSync(this.fifoDir(id), { recursive: true, force: true });
    this.records.clean.delete(id);
  }

  /**
   * The container's directory: a few files, unlinked side by side then the directory (what
   * fs.promises.rm does one lstat, unlink or rmdir at a time, twice the round trips). All
   * asynchronously: freeing their blocks can wait on the disk.
   */
  async removeContainerDir(id: string): Promise<void> {
    const dir = this.containerDir(id);
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw err;
    }
    await Promise.all(
      names.map((n) =>
        unlink(join(dir, n)).catch((err: NodeJS.ErrnoException) => {
          if (err.code === 'EISDIR' || err.code === 'EPERM') return rm(join(dir, n), { recursive: true, force: true });
          if (err.code !== 'ENOENT') throw err;
        }),
      ),
    );
    await rmdir(dir).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOTEMPTY' || err.code === 'EEXIST') return rm(dir, { recursive: true, force: true });
      if (err.code !== 'ENOENT') throw err;
    });
  }

}

/** 127 when the command was not found, 126 when it could not be executed, else null. */
function runtimeExitCode(message: string): 126 | 127 | null {
  if (/executable file not found|no such file or directory/i.test(message)) return 127;
  if (/permission denied|not a directory|is a directory/i.test(message)) return 126;
  return null;
}

/**
 * Where a container's log driver writes: json-file <dir>/<id>-json.log, local
 * <dir>/local-logs/container.log (its directory is made by the driver), a remote driver its
 * dual-logging cache <dir>/container-cached.log (unless cache-disabled); '' for none. Inspect
 * shows LogPath for json-file only, as the reference (the other formats are not an API).
 */
export function logPathFor(dir: string, id: string, type: string): string {
  if (type === 'none') return '';
  if (type === 'local') return join(dir, 'local-logs', 'container.log');
  if (REMOTE_DRIVERS.has(type)) return cachedLogPath(dir);
  return join(dir, `${id}-json.log`);
}

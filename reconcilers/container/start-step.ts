// The start of a container's run, safe to repeat after a crash at any line: the supervisor's
// record, stdio, log writer, task and network, with everything undone when a step fails (the
// failure is staged in status, as `docker start` reports it). Also what a run is made of (its
// OCI spec and root filesystem), which live restore's adoption builds again.
import type { Logger } from 'pino';
import { errorCode, isUnreachable } from '../../lib/errors.ts';
import { rfc3339Nano, ZERO_TIME } from '../../lib/ids.ts';
import { type ContainerSpec, Containers, type PublishedPort } from '../../store/kinds/container.ts';

import type { LoggerLike, ProcessIOLike } from './deps.ts';
import { withCloseIO } from './close-io.ts';
import { containerLogInfo } from './deps.ts';
import type { Run } from './runs.ts';
import type { RunParts } from './run-steps.ts';
import { bindShm, joinNamespaceOf } from './namespaces.ts';
import { volumeMountSources } from './volume-steps.ts';
import { linkedContainers, linkEnv, writeLinkHosts } from './links.ts';

export interface ReconcileContext {
  signal: AbortSignal;
  log: Logger;
}

export class StartSteps {
  /** What the run steps share (./run-steps.ts). */
  private readonly parts: RunParts;

  constructor(parts: RunParts) {
    this.parts = parts;
  }

  /** Starts a run; `unreachable` when it failed because the supervisor could not be reached (see start-retry.ts). */
  async startRun(id: string, ctx: ReconcileContext): Promise<{ unreachable: boolean }> {
    const spec = this.parts.store.get(Containers, id)!.spec;
    const status = this.parts.status.get(id);
    const sup = this.parts.deps.supervisor;
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
      const linked = linkedContainers(this.parts.store, spec);
      writeLinkHosts(status.hostsPath, linked);
      const ep = await this.parts.net.primaryEndpointOf(id, spec);
      // A container in a user namespace needs a network namespace that namespace owns (to mount
      // sysfs): the runtime makes it and the plumbing goes in by the task's pid, as the reference's.
      const ownNetns = !!this.parts.deps.remapRoot && spec.hostConfig.UsernsMode !== 'host';
      if (ep && this.parts.deps.netns && !ownNetns) netnsPath = this.parts.net.netnsPath(id);
      const { oci, rootfs } = await this.runSpec(id, spec, linked, netnsPath);
      const mode = spec.hostConfig.NetworkMode;
      const runtime = this.parts.deps.runtimes.resolve(spec.hostConfig.Runtime);
      const group = this.parts.deps.shimGroup?.(id, runtime.name);
      if (group) {
        const o = oci as { annotations?: Record<string, string> };
        o.annotations = { ...o.annotations, [group.annotation]: group.group };
      }
      this.parts.records.clean.delete(id);
      // The supervisor's record is created while the FIFOs and the log file are prepared here.
      // The network tools run while the supervisor works, never before a request to it: each
      // spawn stalls this thread for its fork (~3-5 ms at this process's size, page tables copied).
      const record = this.parts.records.create(id, { id, spec: oci, runtime, labels: { 'engine/container': 'true' } });
      creating = record.then(() => true, () => false);
      // On a network: its namespace is made now, and plumbed (interface, addresses, host ports)
      // while the supervisor creates the task that joins it.
      let netnsMade: Promise<void> | undefined;
      if (netnsPath) {
        netnsMade = this.parts.deps.netns!.create(netnsPath);
        plumbing = netnsMade.then(() => this.parts.net.plumb(id, spec, ep!, netnsPath!, taskRequested.promise));
        plumbing.catch(() => {}); // awaited below, or settled by the failure path
      }
      io = await this.parts.deps.stdio.open({ dir: this.parts.paths.fifoDir(id), procId: 'init', stdin: !!spec.config.OpenStdin, tty: !!spec.config.Tty });
      const hub = withCloseIO(this.parts.deps.stdio.hub(io), () => sup.closeIO(id, undefined), taskCreated.promise);
      this.parts.runs.announce(id, hub, (err) => ctx.log.warn({ err }, 'attach watcher failed'));
      if (status.logPath) {
        logger = await this.parts.deps.logging.open(id, status.logPath, spec.hostConfig.LogConfig, containerLogInfo(spec));
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
        plumbing = this.parts.net.plumb(id, spec, ep, task.pid, Promise.resolve());
        ports = await plumbing;
      }
      if (ep && linked.length) await this.parts.deps.links?.allow(id, ep.NetworkID, ep.IPAddress, linked);
      const run = this.parts.runs.add(id, { io, hub, logger, pid: task.pid, startedAt: Date.now(), oci: oci as Run['oci'], rootfs });
      const { pid } = await sup.startTask(id);
      run.pid = pid;
      this.parts.status.stage(id, (s) => ({
        ...s,
        phase: 'running',
        pid,
        sandboxKey: mode === 'host' ? '' : `/proc/${pid}/ns/net`,
        ports,
        // The limits this run started with; a later `docker update` is applied from here.
        appliedResources: JSON.stringify(this.parts.deps.spec.updateResources(spec.hostConfig)),
        updateError: '',
        startedAt: rfc3339Nano(),
        finishedAt: s.finishedAt || ZERO_TIME,
        exitCode: 0,
        error: '',
        errorCode: '',
        oomKilled: false,
      }));
      return { unreachable: false };
    } catch (err) {
      taskRequested.reject(err);
      this.parts.runs.delete(id);
      io?.close();
      await logger?.close().catch(() => {});
      if (!created && creating) created = await creating;
      if (created) await this.parts.records.clear(id);
      await this.parts.deps.layers.unmountRW(id).catch(() => {});
      await this.parts.deps.volumes?.releaseRun(id).catch(() => {});
      // Plumbing still under way must end before what it made is taken away.
      await plumbing?.catch(() => {});
      await this.parts.deps.ports?.unpublish(id).catch(() => {});
      if (netnsPath) await this.parts.net.unplug(id).catch(() => {});
      await this.parts.deps.links?.revoke(id).catch(() => {});
      const message = err instanceof Error ? err.message : String(err);
      const exitCode = runtimeExitCode(message);
      ctx.log.info({ err: message }, 'container start failed');
      this.parts.status.stage(id, (s) => ({
        ...s,
        error: message,
        errorCode: exitCode !== null ? 'InvalidArgument' : errorCode(err),
        exitCode: exitCode ?? 128,
        pid: 0,
      }));
      // A create cut off by a supervisor crash can leave its bundle ("failed to start shim: mkdir …:
      // file exists") or the runtime's state ("container with given ID already exists") behind: the
      // clear above removed them (supervisor-records.ts), so it is tried again.
      return { unreachable: isUnreachable(err) || /failed to start shim: mkdir \S+: file exists|runc create failed: container with given ID already exists/.test(message) };
    }
  }

  /**
   * What a run of the container is made of: its volumes' sources, its root filesystem mounted, and
   * the OCI spec (namespaces it joins, a shareable /dev/shm). A start creates the task from it; an
   * adoption keeps it for exec.
   */
  async runSpec(id: string, spec: ContainerSpec, linked: ReturnType<typeof linkedContainers>, netnsPath?: string): Promise<{ oci: Run['oci']; rootfs: string }> {
    const status = this.parts.status.get(id);
    const volumeMounts = await volumeMountSources(id, spec, this.parts.deps.volumes);
    const rootfs = await this.parts.deps.layers.mountRW(id);
    const oci = await this.parts.deps.spec.build({
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
      cgroupsPath: `${this.parts.deps.cgroupParent}/${id}`,
      ...(netnsPath ? { netnsPath } : {}),
      ...(spec.labels ? { selinux: spec.labels } : {}),
    });
    const mode = spec.hostConfig.NetworkMode;
    if (mode.startsWith('container:')) this.join(oci, 'network', mode.slice('container:'.length));
    const pidMode = String(spec.hostConfig.PidMode ?? '');
    if (pidMode.startsWith('container:')) this.join(oci, 'pid', pidMode.slice('container:'.length));
    const ipcMode = String(spec.hostConfig.IpcMode ?? '');
    if (ipcMode.startsWith('container:')) this.join(oci, 'ipc', ipcMode.slice('container:'.length));
    if (ipcMode === 'shareable' && this.parts.deps.shm) {
      // Its /dev/shm lives on the host, where the containers joining its IPC find it.
      await this.parts.deps.shm.ensure(this.parts.paths.shmDir(id), Number(spec.hostConfig.ShmSize) || 64 * 1024 * 1024);
      bindShm(oci as Record<string, unknown>, this.parts.paths.shmDir(id));
    }
    return { oci: oci as Run['oci'], rootfs };
  }

  /** `--network|--pid|--ipc container:<ref>` into the OCI spec (see namespaces.ts). */
  private join(oci: object, type: 'network' | 'pid' | 'ipc', ref: string): void {
    joinNamespaceOf(oci as Record<string, unknown>, type, ref, {
      containers: this.parts.store.list(Containers),
      runOf: (cid) => this.parts.runs.get(cid),
      shmDirOf: this.parts.deps.shm ? (cid) => this.parts.paths.shmDir(cid) : undefined,
    });
  }
}

/** 127 when the command was not found, 126 when it could not be executed, else null. */
function runtimeExitCode(message: string): 126 | 127 | null {
  if (/executable file not found|no such file or directory/i.test(message)) return 127;
  if (/permission denied|not a directory|is a directory/i.test(message)) return 126;
  return null;
}

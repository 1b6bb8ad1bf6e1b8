// Stopping and collecting a container's runs, each step safe to repeat after a crash: signal
// the task, stop it within its grace period, collect a run once it exited (the task deleted,
// ports and network released, output drained, then the exit recorded), and the removal's
// teardown of whatever the supervisor, network and disk still hold.
import { readdirSync, rmSync } from 'node:fs';
import { rm, rmdir, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { isCode } from '../../lib/errors.ts';
import { rfc3339Nano } from '../../lib/ids.ts';

import type { Run } from './runs.ts';
import type { RunParts } from './run-steps.ts';
import { parseSignal } from './signals.ts';

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms).unref());

/** `p`, or nothing after `ms`; the timer goes when `p` settles first. */
function within(p: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const t = new Promise<void>((r) => (timer = setTimeout(r, ms).unref()));
  return Promise.race([p.then(() => {}, () => {}), t]).finally(() => clearTimeout(timer));
}

export class StopSteps {
  /** What the run steps share (./run-steps.ts). */
  private readonly parts: RunParts;

  constructor(parts: RunParts) {
    this.parts = parts;
  }

  async signal(id: string, sig: number): Promise<void> {
    try {
      await this.parts.deps.supervisor.killTask(id, sig);
    } catch (err) {
      if (!isCode(err, 'NotFound')) throw err;
    }
  }

  /** Stop signal, up to `timeoutS` seconds (negative: forever), then SIGKILL. */
  async stopProcess(id: string, run: Run, stopSignal: string | undefined, timeoutS: number): Promise<void> {
    if (this.parts.status.get(id).phase === 'paused') {
      await this.parts.deps.supervisor.resume(id).catch(() => {});
    }
    await this.signal(id, parseSignal(stopSignal, 'SIGTERM'));
    if (timeoutS >= 0) {
      const done = await Promise.race([run.exited.then(() => true), sleep(timeoutS * 1000).then(() => false)]);
      if (done) return;
      await this.parts.deps.supervisor.killTask(id, 9, { all: true }).catch((err) => {
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
        await this.parts.deps.supervisor.deleteTask(id);
      } catch (err) {
        if (!isCode(err, 'NotFound')) this.parts.deps.log.warn({ err, id }, 'delete task failed');
      }
      const [gone] = await Promise.all([
        this.parts.records.delete(id),
        this.parts.deps.layers.unmountRW(id).catch((err) => this.parts.deps.log.warn({ err, id }, 'unmount failed')),
        this.parts.deps.volumes?.releaseRun(id).catch((err) => this.parts.deps.log.warn({ err, id }, 'volume unmount failed')),
        this.parts.deps.shm?.release(this.parts.paths.shmDir(id)).catch((err) => this.parts.deps.log.warn({ err, id }, 'shm unmount failed')),
      ]);
      if (gone) this.parts.records.clean.add(id);
    })();
    // The host ports go before the exit is published, as the reference releases the network before
    // it records the stop: a `docker stop a && docker run -p <a's port> b` must find the port free.
    const ports = this.parts.deps.ports?.unpublish(id).catch((err) => this.parts.deps.log.warn({ err, id }, 'releasing published ports failed'));
    const net = Promise.all([
      this.parts.net.unplug(id).catch((err) => this.parts.deps.log.warn({ err, id }, 'network detach failed')),
      this.parts.deps.links?.revoke(id),
    ]);
    // The output ends with the process (or within 2 s, when something else holds its pipes): the
    // streams close and the log is flushed and closed then, while the task is being deleted.
    const output = within(run.hub.ended, 2000).then(async () => {
      this.parts.runs.stopWatching(run);
      run.reset = true;
      run.io.close();
      await run.logger?.close().catch(() => {});
    });
    await Promise.all([output, ports, task, net]);
    const ranMs = Date.now() - run.startedAt;
    // Decided before the write (it reads the status being written).
    const phase = phaseAfter(exitStatus);
    this.parts.status.set(id, (s) => ({
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
    await this.parts.deps.stdio.remove(this.parts.paths.fifoDir(id), 'init').catch(() => {});
    this.parts.runs.delete(id, run);
    return ranMs;
  }

  /**
   * Removal, once no run is left: whatever the supervisor still holds, the network endpoint and
   * address, the read-write layer, the container's directory and FIFOs. The caller deletes the record.
   */
  async teardown(id: string): Promise<void> {
    if (!this.parts.records.clean.has(id)) await this.parts.records.clear(id);
    await this.parts.deps.shm?.release(this.parts.paths.shmDir(id)).catch((err) => this.parts.deps.log.warn({ err, id }, 'shm unmount failed'));
    this.parts.status.set(id, (s) => ({ ...s, phase: 'removing' }));
    const network = this.parts.deps.network;
    await Promise.all([
      this.parts.net.unplug(id).catch(() => {}).then(() => network?.release(id)),
      this.parts.deps.layers.removeRW(id),
      this.removeContainerDir(id),
    ]);
    // Normally gone with the run's FIFOs already: one lstat.
    rmSync(this.parts.paths.fifoDir(id), { recursive: true, force: true });
    this.parts.records.clean.delete(id);
  }

  /**
   * The container's directory: a few files, unlinked side by side then the directory (what
   * fs.promises.rm does one lstat, unlink or rmdir at a time, twice the round trips). All
   * asynchronously: freeing their blocks can wait on the disk.
   */
  async removeContainerDir(id: string): Promise<void> {
    const dir = this.parts.paths.containerDir(id);
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

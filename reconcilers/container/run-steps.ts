// The steps of a container's runs, each safe to repeat after a crash at any line: prepare the
// container (directory, /etc files, read-write layer) here; start a run (start-step.ts); signal,
// stop, collect and tear down (stop-steps.ts); the network side (run-network.ts) and what the
// supervisor holds (supervisor-records.ts). The reconciler decides which step is due; these
// perform them and stage what they observed in status.
import { appendFileSync, chownSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { type ContainerSpec } from '../../store/kinds/container.ts';

import type { ReconcilerStore } from '../store-like.ts';
import type { ContainerReconcilerDeps } from './deps.ts';
import { ContainerPaths } from './container-paths.ts';
import type { RunRegistry } from './runs.ts';
import { primaryRequest } from './endpoint-config.ts';
import { primaryEndpoint } from '../../store/kinds/endpoint.ts';
import { copyUpVolumes } from './volume-steps.ts';
import { RunNetwork } from './run-network.ts';
import { StartSteps } from './start-step.ts';
import { StopSteps } from './stop-steps.ts';
import { SupervisorRecords } from './supervisor-records.ts';
import type { StagedStatus } from './staged-status.ts';
import { Images } from '../../store/kinds/image.ts';
import { cachedLogPath, REMOTE_DRIVERS } from '../../drivers/logging/cache.ts';

export type { ReconcileContext } from './start-step.ts';

/** What the start and stop steps share: the store, the wiring, the runs, staged status and the run steps' own parts. */
export interface RunParts {
  store: ReconcilerStore;
  deps: ContainerReconcilerDeps;
  runs: RunRegistry;
  status: StagedStatus;
  net: RunNetwork;
  records: SupervisorRecords;
  paths: ContainerPaths;
}

export class RunSteps {
  private readonly store: ReconcilerStore;
  private readonly deps: ContainerReconcilerDeps;
  private readonly status: StagedStatus;
  /** Where each container's files are (./container-paths.ts). */
  readonly paths: ContainerPaths;
  /** The network side of the runs (./run-network.ts). */
  readonly net: RunNetwork;
  /** What the supervisor holds for each container (./supervisor-records.ts). */
  readonly records: SupervisorRecords;
  /** Starting a run (./start-step.ts). */
  readonly start: StartSteps;
  /** Signalling, stopping, collecting and tearing down (./stop-steps.ts). */
  readonly stop: StopSteps;

  constructor(store: ReconcilerStore, deps: ContainerReconcilerDeps, runs: RunRegistry, status: StagedStatus) {
    this.store = store;
    this.deps = deps;
    this.status = status;
    this.paths = new ContainerPaths(deps);
    this.net = new RunNetwork(store, deps, status);
    this.records = new SupervisorRecords(deps.supervisor);
    const parts: RunParts = { store, deps, runs, status, net: this.net, records: this.records, paths: this.paths };
    this.start = new StartSteps(parts);
    this.stop = new StopSteps(parts);
  }

  /** Create step: the container's directory, /etc files and read-write layer. */
  async prepare(id: string, spec: ContainerSpec): Promise<void> {
    const dir = this.paths.containerDir(id);
    mkdirSync(dir, { recursive: true, mode: 0o710 });
    const remap = this.deps.remapRoot;
    // The remapped root passes through to its /etc files (root and its group, as the reference).
    if (remap) for (const d of [dirname(dir), dir]) chownSync(d, 0, remap.gid);
    const ep = await this.deps.network?.allocate(id, spec.hostConfig.NetworkMode, primaryRequest(spec, primaryEndpoint(this.store, id)));
    const nameserver = ep ? this.deps.network?.nameserverFor(ep) : undefined;
    const files = await this.deps.spec.writeEtcFiles(dir, spec.config, spec.hostConfig, nameserver ? { nameserver } : {});
    if (ep) appendFileSync(files.hosts, `${ep.IPAddress}\t${spec.config.Hostname}\n${ep.GlobalIPv6Address ? `${ep.GlobalIPv6Address}\t${spec.config.Hostname}\n` : ''}`);
    if (remap) for (const f of [files.hosts, files.hostname, files.resolvConf]) if (f) chownSync(f, remap.uid, remap.gid);
    const image = this.store.get(Images, spec.imageId);
    await this.deps.layers.createRW(id, image?.spec.chainId ?? null, spec.hostConfig.StorageOpt ?? undefined);
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

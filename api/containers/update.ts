// POST /containers/{id}/update (`docker update`): the cgroup limits and the restart policy the
// reference daemon lets change, checked as it checks them, written into the container's
// HostConfig (the level); the container reconciler gives a running task the new limits. A
// running container's update answers once it is applied; when the task refuses it, the old
// values are put back and the reason answered, as the reference does.
import { conflict, internal, invalidArgument, unavailable } from '../../lib/errors.ts';
import { checkCpuset } from '../../admission/containers/resource-checks.ts';
import { type HostConfig, type RestartPolicy, Containers, type ContainerResource as CR, findContainer } from '../../store/kinds/container.ts';

import type { App } from '../app.ts';
import { goBody, parseWith } from '../../lib/go-json.ts';
import { idParams } from '../request.ts';
import { observed, writeAndWait } from '../write-and-wait.ts';
import { BLKIO_WEIGHT_WARNING } from '../../admission/containers/create-request.ts';
import * as z from 'zod';
import { updateBodySchema, type UpdateBody } from './update-schema.ts';
import type { ApiStore } from './store.ts';


/** The numeric limits `docker update` changes; 0 (or absent) leaves one as it is. */
const NUMBERS = ['BlkioWeight', 'CpuShares', 'NanoCpus', 'CpuPeriod', 'CpuQuota', 'CpuRealtimePeriod', 'CpuRealtimeRuntime', 'Memory', 'MemorySwap', 'MemoryReservation', 'KernelMemory'] as const;
const STRINGS = ['CpusetCpus', 'CpusetMems'] as const;
const MIN_MEMORY = 6 * 1024 * 1024;
const RESTART_NAMES = new Set(['no', 'always', 'unless-stopped', 'on-failure']);

type Update = Partial<Record<(typeof NUMBERS)[number], number>> & Partial<Record<(typeof STRINGS)[number], string>> & { PidsLimit?: number; RestartPolicy?: RestartPolicy };

/** The route's body schema: types checked as Go's decoder checks them, unknown fields ignored (made on first use). */
const updateBody = goBody(z.lazy(updateBodySchema));

/** A body checked outside a route (tests). */
export function parseUpdate(input: unknown): Update {
  if (input === '') return {};
  return toUpdate(parseWith(updateBodySchema(), input));
}

/** The checked body as an update: zeros dropped, the restart policy checked as the reference checks it. */
function toUpdate(body: UpdateBody): Update {
  const u: Update = {};
  for (const k of NUMBERS) {
    const v = body[k];
    if (v !== undefined && v !== null && v !== 0) u[k] = v;
  }
  for (const k of STRINGS) {
    const v = body[k];
    if (v) u[k] = v;
  }
  if (body.PidsLimit !== undefined && body.PidsLimit !== null) u.PidsLimit = body.PidsLimit;
  const rp = body.RestartPolicy;
  if (rp && (rp.Name || rp.MaximumRetryCount)) {
    const name = rp.Name || 'no';
    if (!RESTART_NAMES.has(name)) throw invalidArgument(`invalid restart policy: unknown policy '${name}'; use one of 'no', 'always', 'on-failure', or 'unless-stopped'`);
    const max = rp.MaximumRetryCount ?? 0;
    if (max < 0) throw invalidArgument('invalid restart policy: maximum retry count cannot be negative');
    if (name !== 'on-failure' && max > 0) throw invalidArgument(`invalid restart policy: maximum retry count can only be used with 'on-failure'`);
    u.RestartPolicy = { Name: name as RestartPolicy['Name'], MaximumRetryCount: max };
  }
  return u;
}

/** The container's HostConfig with the update applied; the reference's refusals (400) first. */
export function applyUpdate(c: CR, u: Update): HostConfig {
  const cur = c.spec.hostConfig as HostConfig & Record<string, unknown>;
  const num = (k: string) => (typeof cur[k] === 'number' ? (cur[k] as number) : 0);
  const cannot = (msg: string) => invalidArgument(`Cannot update container ${c.name}: ${msg}`);
  if (u.Memory !== undefined && u.Memory < MIN_MEMORY) throw invalidArgument('Minimum memory limit allowed is 6MB');
  if (u.Memory !== undefined && u.MemorySwap !== undefined && u.MemorySwap > 0 && u.MemorySwap < u.Memory) {
    throw invalidArgument('Minimum memoryswap limit should be larger than memory limit, see usage');
  }
  if (u.NanoCpus !== undefined && u.CpuPeriod !== undefined) throw invalidArgument('Conflicting options: Nano CPUs and CPU Period cannot both be set');
  if (u.NanoCpus !== undefined && u.CpuQuota !== undefined) throw invalidArgument('Conflicting options: Nano CPUs and CPU Quota cannot both be set');
  if (u.NanoCpus !== undefined && (num('CpuQuota') > 0 || num('CpuPeriod') > 0)) throw cannot('Conflicting options: Nano CPUs cannot be updated as CPU Period or CPU Quota has already been set');
  if ((u.CpuQuota !== undefined || u.CpuPeriod !== undefined) && num('NanoCpus') > 0) throw cannot('Conflicting options: CPU Quota or CPU Period cannot be updated as NanoCPUs has already been set');
  if (u.Memory !== undefined && u.MemorySwap === undefined && num('MemorySwap') > 0 && u.Memory > num('MemorySwap')) {
    throw cannot('Memory limit should be smaller than already set memoryswap limit, update the memoryswap at the same time');
  }
  checkCpuset(u.CpusetCpus, undefined, 'cpus');
  checkCpuset(u.CpusetMems, undefined, 'mems');
  if (u.RestartPolicy && u.RestartPolicy.Name !== 'no' && cur.AutoRemove) throw cannot('Restart policy cannot be updated because AutoRemove is enabled for the container');
  const next: Record<string, unknown> = { ...cur };
  for (const k of [...NUMBERS, ...STRINGS]) if (u[k] !== undefined) next[k] = u[k];
  if (u.PidsLimit !== undefined) next.PidsLimit = u.PidsLimit > 0 ? u.PidsLimit : 0;
  if (u.RestartPolicy) next.RestartPolicy = u.RestartPolicy;
  return next as unknown as HostConfig;
}

export function updateRoutes(deps: { store: ApiStore; waitTimeoutMs?: number; blkioWeight?: boolean }) {
  const { store } = deps;
  const timeoutMs = deps.waitTimeoutMs ?? 60_000;
  return async function register(app: App): Promise<void> {
    app.post('/containers/:id/update', { schema: { params: idParams, body: updateBody } }, async (req) => {
      const c = findContainer(store, req.params.id);
      const u = toUpdate(req.body);
      const warnings: string[] = [];
      if (u.BlkioWeight !== undefined && deps.blkioWeight === false) {
        delete u.BlkioWeight;
        warnings.push(BLKIO_WEIGHT_WARNING);
      }
      if (c.spec.desired === 'removed' || c.status.phase === 'removing' || c.status.phase === 'dead') {
        throw conflict(`Cannot update container ${c.name}: container is marked for removal and cannot be "update"`);
      }
      const old = c.spec.hostConfig;
      const hostConfig = applyUpdate(c, u);
      // A task gets the new limits from the reconciler: answered once it has; without one, once written.
      const running = c.status.phase === 'running' || c.status.phase === 'paused';
      const r = await writeAndWait(store, Containers, c.name, (s) => ({ ...s, hostConfig }), (x, w) => !running || observed(x, w), {
        timeoutMs,
        timedOut: () => unavailable(`Cannot update container ${c.name}: the new limits were not applied in time`),
      });
      if (running && r?.status.updateError) {
        store.updateSpec(Containers, c.name, (s) => ({ ...s, hostConfig: old }));
        throw internal(`Cannot update container ${c.name}: ${r.status.updateError}`);
      }
      return { Warnings: warnings };
    });
  };
}

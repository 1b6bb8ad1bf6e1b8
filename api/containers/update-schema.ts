// The body of POST /containers/{id}/update, a container.UpdateConfig checked as the reference's
// decoder checks it (see go-json.ts). Resources is embedded in UpdateConfig, so Go names its
// fields straight under UpdateConfig; RestartPolicy is a struct of its own.
import type { z } from 'zod';
import { at, body, type GoInt, int, list, str, strArray, struct } from '../go-json.ts';

const uc = at('UpdateConfig', '');
const rp = at('RestartPolicy', 'RestartPolicy');

const RESOURCE_INTS = {
  BlkioWeight: 'uint16', CpuShares: 'int64', NanoCpus: 'int64', CpuPeriod: 'int64', CpuQuota: 'int64',
  CpuRealtimePeriod: 'int64', CpuRealtimeRuntime: 'int64', Memory: 'int64', MemorySwap: 'int64',
  MemoryReservation: 'int64', KernelMemory: 'int64', PidsLimit: 'int64', KernelMemoryTCP: 'int64',
  MemorySwappiness: 'int64', CpuCount: 'int64', CpuPercent: 'int64', IOMaximumIOps: 'uint64', IOMaximumBandwidth: 'uint64',
} as const satisfies Record<string, GoInt>;
/** The schema, made on the first update (an idle daemon need not hold it). */
function buildUpdateSchema() {
  const resourceInts = Object.fromEntries(Object.entries(RESOURCE_INTS).map(([k, t]) => [k, int(uc(k), t)])) as { [K in keyof typeof RESOURCE_INTS]: ReturnType<typeof int> };

  return struct(body('UpdateConfig'), 'container.UpdateConfig', {
    ...resourceInts,
    CpusetCpus: str(uc('CpusetCpus')),
    CpusetMems: str(uc('CpusetMems')),
    CgroupParent: str(uc('CgroupParent')),
    // Not applied by update, but Go decodes them, so a value of the wrong type is refused all the same.
    BlkioWeightDevice: list(uc('BlkioWeightDevice'), '[]*blkiodev.WeightDevice'),
    BlkioDeviceReadBps: list(uc('BlkioDeviceReadBps'), '[]*blkiodev.ThrottleDevice'),
    BlkioDeviceWriteBps: list(uc('BlkioDeviceWriteBps'), '[]*blkiodev.ThrottleDevice'),
    BlkioDeviceReadIOps: list(uc('BlkioDeviceReadIOps'), '[]*blkiodev.ThrottleDevice'),
    BlkioDeviceWriteIOps: list(uc('BlkioDeviceWriteIOps'), '[]*blkiodev.ThrottleDevice'),
    Devices: list(uc('Devices'), '[]container.DeviceMapping'),
    DeviceCgroupRules: strArray(uc('DeviceCgroupRules')),
    DeviceRequests: list(uc('DeviceRequests'), '[]container.DeviceRequest'),
    Ulimits: list(uc('Ulimits'), '[]*units.Ulimit'),
    RestartPolicy: struct(uc('RestartPolicy'), 'container.RestartPolicy', {
      Name: str(rp('Name'), 'container.RestartPolicyMode'),
      MaximumRetryCount: int(rp('MaximumRetryCount'), 'int'),
    }),
  });
}

let updateSchema: ReturnType<typeof buildUpdateSchema> | undefined;

/** The schema (made once, on first use). */
export function updateBodySchema(): ReturnType<typeof buildUpdateSchema> {
  return (updateSchema ??= buildUpdateSchema());
}

export type UpdateBody = NonNullable<z.output<ReturnType<typeof buildUpdateSchema>>>;

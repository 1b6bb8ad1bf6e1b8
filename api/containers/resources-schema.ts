// The fields of Go's container.Resources. It is embedded in HostConfig (create) and in UpdateConfig
// (update), so Go names its fields straight under either struct: one list, checked under each.
import { type At, type GoInt, int, list, str, strArray } from '../go-json.ts';

/** Resources' integer fields with their Go types. */
const RESOURCE_INTS = {
  BlkioWeight: 'uint16', CpuShares: 'int64', NanoCpus: 'int64', CpuPeriod: 'int64', CpuQuota: 'int64',
  CpuRealtimePeriod: 'int64', CpuRealtimeRuntime: 'int64', Memory: 'int64', MemorySwap: 'int64',
  MemoryReservation: 'int64', KernelMemory: 'int64', PidsLimit: 'int64', KernelMemoryTCP: 'int64',
  MemorySwappiness: 'int64', CpuCount: 'int64', CpuPercent: 'int64', IOMaximumIOps: 'uint64', IOMaximumBandwidth: 'uint64',
} as const satisfies Record<string, GoInt>;

/** The Resources fields of a schema whose field names `at` places (HostConfig.X or UpdateConfig's X). */
export function resourceFields(at: (name: string) => At) {
  const ints = Object.fromEntries(Object.entries(RESOURCE_INTS).map(([k, t]) => [k, int(at(k), t)])) as { [K in keyof typeof RESOURCE_INTS]: ReturnType<typeof int> };
  return {
    ...ints,
    CpusetCpus: str(at('CpusetCpus')),
    CpusetMems: str(at('CpusetMems')),
    CgroupParent: str(at('CgroupParent')),
    BlkioWeightDevice: list(at('BlkioWeightDevice'), '[]*blkiodev.WeightDevice'),
    BlkioDeviceReadBps: list(at('BlkioDeviceReadBps'), '[]*blkiodev.ThrottleDevice'),
    BlkioDeviceWriteBps: list(at('BlkioDeviceWriteBps'), '[]*blkiodev.ThrottleDevice'),
    BlkioDeviceReadIOps: list(at('BlkioDeviceReadIOps'), '[]*blkiodev.ThrottleDevice'),
    BlkioDeviceWriteIOps: list(at('BlkioDeviceWriteIOps'), '[]*blkiodev.ThrottleDevice'),
    Devices: list(at('Devices'), '[]container.DeviceMapping'),
    DeviceCgroupRules: strArray(at('DeviceCgroupRules')),
    DeviceRequests: list(at('DeviceRequests'), '[]container.DeviceRequest'),
    Ulimits: list(at('Ulimits'), '[]*units.Ulimit'),
  };
}

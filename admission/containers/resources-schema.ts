// The fields of Go's container.Resources. It is embedded in HostConfig (create) and in UpdateConfig
// (update), so Go names its fields straight under either struct: one list, checked under each.
import * as z from 'zod';
import { at as fieldsOf, type At, type GoInt, int, list, str, strArray, struct, unmarshal } from '../../lib/go-json.ts';

/** Resources' integer fields with their Go types. */
const RESOURCE_INTS = {
  BlkioWeight: 'uint16', CpuShares: 'int64', NanoCpus: 'int64', CpuPeriod: 'int64', CpuQuota: 'int64',
  CpuRealtimePeriod: 'int64', CpuRealtimeRuntime: 'int64', Memory: 'int64', MemorySwap: 'int64',
  MemoryReservation: 'int64', KernelMemory: 'int64', PidsLimit: 'int64', KernelMemoryTCP: 'int64',
  MemorySwappiness: 'int64', CpuCount: 'int64', CpuPercent: 'int64', IOMaximumIOps: 'uint64', IOMaximumBandwidth: 'uint64',
} as const satisfies Record<string, GoInt>;

/**
 * A Go list of pointers to a small struct (`[]*blkiodev.ThrottleDevice`): a list, each element null
 * or that struct, each field of its type. Go names an element's field after the struct and the
 * list's path: `ThrottleDevice.HostConfig.BlkioDeviceWriteBps.Rate`.
 */
function structList(f: At, pkg: string, name: string, fields: (inner: (field: string) => At) => z.ZodRawShape) {
  return z.array(struct(f, `${pkg}.${name}`, fields(fieldsOf(name, f.path))), { error: unmarshal(f.struct, f.path, `[]*${pkg}.${name}`) }).nullish();
}

const throttle = (f: At) => structList(f, 'blkiodev', 'ThrottleDevice', (e) => ({ Path: str(e('Path')), Rate: int(e('Rate'), 'uint64') }));

/** The Resources fields of a schema whose field names `at` places (HostConfig.X or UpdateConfig's X). */
export function resourceFields(at: (name: string) => At) {
  const ints = Object.fromEntries(Object.entries(RESOURCE_INTS).map(([k, t]) => [k, int(at(k), t)])) as { [K in keyof typeof RESOURCE_INTS]: ReturnType<typeof int> };
  return {
    ...ints,
    CpusetCpus: str(at('CpusetCpus')),
    CpusetMems: str(at('CpusetMems')),
    CgroupParent: str(at('CgroupParent')),
    BlkioWeightDevice: structList(at('BlkioWeightDevice'), 'blkiodev', 'WeightDevice', (e) => ({ Path: str(e('Path')), Weight: int(e('Weight'), 'uint16') })),
    BlkioDeviceReadBps: throttle(at('BlkioDeviceReadBps')),
    BlkioDeviceWriteBps: throttle(at('BlkioDeviceWriteBps')),
    BlkioDeviceReadIOps: throttle(at('BlkioDeviceReadIOps')),
    BlkioDeviceWriteIOps: throttle(at('BlkioDeviceWriteIOps')),
    Devices: list(at('Devices'), '[]container.DeviceMapping'),
    DeviceCgroupRules: strArray(at('DeviceCgroupRules')),
    DeviceRequests: list(at('DeviceRequests'), '[]container.DeviceRequest'),
    Ulimits: structList(at('Ulimits'), 'units', 'Ulimit', (e) => ({ Name: str(e('Name')), Hard: int(e('Hard'), 'int64'), Soft: int(e('Soft'), 'int64') })),
  };
}

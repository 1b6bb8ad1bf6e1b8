// HostConfig.DeviceRequests (and `--device vendor.com/class=name`) as CDI device names, the way the
// reference's device drivers pick them: "cdi" takes its DeviceIDs as CDI names; a request for the
// "gpu" capability (`--gpus`) is answered through CDI when a spec offers the nvidia.com/gpu class;
// anything else is the reference's "could not select device driver" error. Shared by admission
// (refused before anything is written) and the spec builder (which injects the devices).
import { invalidArgument } from './errors.ts';

export interface DeviceRequest {
  Driver?: string;
  Count?: number;
  DeviceIDs?: string[] | null;
  Capabilities?: string[][] | null;
  Options?: Record<string, string> | null;
}

/** The CDI devices the daemon knows (drivers/cdi/registry.ts), when CDI is on. */
export interface CdiCatalog {
  has(name: string): boolean;
  /** Every device name of a kind ("nvidia.com/gpu"), as "kind=name", sorted. */
  namesOfKind(kind: string): string[];
}

const GPU_KIND = 'nvidia.com/gpu';
/** The capabilities the nvidia driver answers (the reference's nvidia driver's list). */
const GPU_CAPS = new Set(['gpu', 'nvidia', 'compute', 'compat32', 'graphics', 'utility', 'video', 'display']);

// The CDI library's rules: vendor and class start with a letter and end with a letter or digit;
// a device name starts and ends with a letter or digit (drivers/cdi/spec.ts validates specs so).
const KIND_PART = '[A-Za-z](?:[A-Za-z0-9_.-]*[A-Za-z0-9])?';
const CDI_NAME = new RegExp(`^${KIND_PART}/${KIND_PART}=[A-Za-z0-9](?:[A-Za-z0-9_.:-]*[A-Za-z0-9])?$`);

/** `vendor.com/class=name`: a CDI device name, not a host path. */
export function isCdiName(s: string): boolean {
  return CDI_NAME.test(s);
}

/** Go's %v of [][]string: [[gpu] [compute utility]]. */
function goCaps(caps: string[][] | null | undefined): string {
  return `[${(caps ?? []).map((c) => `[${c.join(' ')}]`).join(' ')}]`;
}

function noDriver(driver: string, caps: string[][] | null | undefined): Error {
  return invalidArgument(`could not select device driver "${driver}" with capabilities: ${goCaps(caps)}`);
}

/** Whether the request's capabilities are the GPU driver's: one of its sets all GPU capabilities. */
function wantsGpu(r: DeviceRequest): boolean {
  return (r.Capabilities ?? []).some((set) => set.length > 0 && set.every((c) => GPU_CAPS.has(c)));
}

/** The CDI names a GPU request gets: all (Count -1), the first Count, or the DeviceIDs asked for. */
function gpuDevices(r: DeviceRequest, catalog: CdiCatalog): string[] {
  const all = catalog.namesOfKind(GPU_KIND);
  if (r.DeviceIDs?.length) return r.DeviceIDs.map((id) => (isCdiName(id) ? id : `${GPU_KIND}=${id}`));
  const units = all.filter((n) => n !== `${GPU_KIND}=all`);
  if (r.Count === -1) return catalog.has(`${GPU_KIND}=all`) ? [`${GPU_KIND}=all`] : units;
  const n = r.Count ?? 0;
  if (n > units.length) throw invalidArgument(`could not select device driver "" with capabilities: ${goCaps(r.Capabilities)}: ${n} GPUs asked for, ${units.length} available`);
  return units.slice(0, n);
}

/** A request as the API's JSON may hold it: lists that are not lists of strings count as none. */
function tidy(r: DeviceRequest): DeviceRequest {
  const strings = (v: unknown) => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);
  const caps = Array.isArray(r?.Capabilities) ? r.Capabilities.map(strings) : [];
  return { Driver: typeof r?.Driver === 'string' ? r.Driver : '', Count: typeof r?.Count === 'number' ? r.Count : 0, DeviceIDs: strings(r?.DeviceIDs), Capabilities: caps };
}

/**
 * The CDI devices of a container's DeviceRequests and CDI-named Devices, checked against the
 * catalog (undefined: CDI is off). Throws the reference's errors.
 */
export function cdiDevicesOf(requests: readonly DeviceRequest[] | null | undefined, devices: ReadonlyArray<{ PathOnHost?: string }> | null | undefined, catalog: CdiCatalog | undefined): string[] {
  const names: string[] = [];
  for (const d of devices ?? []) if (typeof d?.PathOnHost === 'string' && isCdiName(d.PathOnHost)) names.push(d.PathOnHost);
  for (const given of requests ?? []) {
    const r = tidy(given);
    const driver = r.Driver ?? '';
    if (driver === 'cdi') {
      if (!catalog) throw noDriver('cdi', r.Capabilities);
      names.push(...(r.DeviceIDs ?? []));
    } else if ((driver === '' || driver === 'nvidia') && wantsGpu(r) && catalog?.namesOfKind(GPU_KIND).length) {
      names.push(...gpuDevices(r, catalog));
    } else {
      throw noDriver(driver, r.Capabilities);
    }
  }
  if (names.length && !catalog) throw noDriver('cdi', []);
  const unknown = names.filter((n) => !catalog!.has(n));
  if (unknown.length) throw invalidArgument(`CDI device injection failed: unresolvable CDI devices ${unknown.join(', ')}`);
  return [...new Set(names)];
}

/** HostConfig.Devices without the CDI-named ones (those are injected through CDI instead). */
export function hostDevicesOnly<T extends { PathOnHost?: string }>(devices: readonly T[] | null | undefined): T[] {
  return (devices ?? []).filter((d) => !(typeof d?.PathOnHost === 'string' && isCdiName(d.PathOnHost)));
}

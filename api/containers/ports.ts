// Published and exposed ports as clients read them: inspect's NetworkSettings.Ports and `docker
// ps`'s Ports, built from the spec (admission/containers/port-bindings.ts validated it) and from the
// host side's record of what the running container actually has published (ContainerStatus.ports).
import type { ContainerSpec, ContainerStatus, PublishedPort } from '../../store/kinds/container.ts';
import { byteOrder } from '../../lib/compare.ts';
import { parsePortKey, portKey, type PortBindingJSON, type PortSummary } from '../../admission/containers/port-bindings.ts';

/** Whether the container has its own network namespace on a network that maps ports. */
function mapsPorts(spec: ContainerSpec): boolean {
  const mode = spec.hostConfig.NetworkMode;
  return !(mode === 'host' || mode === 'none' || mode.startsWith('container:'));
}

function isUp(status: ContainerStatus): boolean {
  return status.phase === 'running' || status.phase === 'paused';
}

/**
 * inspect's NetworkSettings.Ports: each exposed (or bound) port → what the running container has
 * published for it (HostPort as a string), or null when it is not published. `{}` when the
 * container is not running (the reference drops the map when the network is released) or has no
 * network namespace of its own.
 */
export function portsView(spec: ContainerSpec, status: ContainerStatus): Record<string, PortBindingJSON[] | null> {
  if (!isUp(status) || !mapsPorts(spec)) return {};
  const map = new Map<string, PortBindingJSON[] | null>();
  const addKey = (key: string) => {
    let k = key;
    try {
      const p = parsePortKey(key);
      k = portKey(p.port, p.proto);
    } catch {
      return;
    }
    if (!map.has(k)) map.set(k, null);
  };
  for (const key of Object.keys(spec.config.ExposedPorts ?? {})) addKey(key);
  for (const key of Object.keys((spec.hostConfig.PortBindings as Record<string, unknown> | null | undefined) ?? {})) addKey(key);
  for (const p of status.ports ?? ([] as PublishedPort[])) {
    const k = portKey(p.containerPort, p.proto);
    const list = map.get(k) ?? [];
    list.push({ HostIp: p.hostIp, HostPort: p.hostPort > 0 ? String(p.hostPort) : '' });
    map.set(k, list);
  }
  const out: Record<string, PortBindingJSON[] | null> = {};
  for (const k of [...map.keys()].sort(byteOrder)) out[k] = map.get(k) ?? null;
  return out;
}

/**
 * `GET /containers/json`'s Ports: one entry per published binding (IP, PublicPort) and one per
 * exposed but unpublished port (PrivatePort and Type only); empty when not running. Sorted by
 * PrivatePort, Type, then IP and PublicPort, so the list is stable.
 */
export function summaryPorts(spec: ContainerSpec, status: ContainerStatus): PortSummary[] {
  const out: PortSummary[] = [];
  for (const [key, bindings] of Object.entries(portsView(spec, status))) {
    const { port, proto } = parsePortKey(key);
    if (!bindings || bindings.length === 0) {
      out.push({ PrivatePort: port, Type: proto });
      continue;
    }
    for (const b of bindings) {
      const pub = Number.parseInt(b.HostPort, 10);
      // Field order as the reference writes them: IP, PrivatePort, PublicPort, Type.
      out.push({ ...(b.HostIp ? { IP: b.HostIp } : {}), PrivatePort: port, ...(pub > 0 ? { PublicPort: pub } : {}), Type: proto });
    }
  }
  return out.sort(
    (a, b) => a.PrivatePort - b.PrivatePort || byteOrder(a.Type, b.Type) || byteOrder(a.IP ?? '', b.IP ?? '') || (a.PublicPort ?? 0) - (b.PublicPort ?? 0),
  );
}

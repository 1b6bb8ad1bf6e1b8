// A service in the reference's Service shape (docs/reference-services.md §1): Version, times, Spec
// (with swarmkit's defaults for insertDefaults), PreviousSpec after an update, Endpoint (its spec,
// for host-mode ports the ports, its virtual IP on each overlay network it joins), ServiceStatus with status=true;
// and the GET /services filters (id and name prefixes, label, mode; another key refused).
import { invalidArgument } from '../../lib/errors.ts';
import { modeName, withDefaults, withRegistryAuth, type ServiceSpec } from '../../lib/swarm/service-spec.ts';
import { matchKVList, parseFilters } from '../filters.ts';
import type { ServiceRecord } from './port.ts';
import { versionView } from '../../lib/swarm/task.ts';

export interface ServiceCounts {
  RunningTasks: number;
  DesiredTasks: number;
  CompletedTasks: number;
}

export function serviceView(s: ServiceRecord, o: { insertDefaults?: boolean; status?: ServiceCounts } = {}): Record<string, unknown> {
  const shown = (x: ServiceSpec) => withRegistryAuth(o.insertDefaults ? withDefaults(x) : x, undefined);
  const spec = shown(s.Spec);
  const ep = s.Spec.EndpointSpec;
  const endpoint: Record<string, unknown> = { Spec: ep ?? {} };
  const ports = s.EndpointPorts ?? ep?.Ports;
  if (ports?.length) endpoint['Ports'] = ports.map((p) => ({ Protocol: p.Protocol, TargetPort: p.TargetPort, PublishedPort: p.PublishedPort, PublishMode: p.PublishMode }));
  if (s.VirtualIPs?.length) endpoint['VirtualIPs'] = s.VirtualIPs;
  return {
    ID: s.ID,
    Version: { Index: s.version },
    CreatedAt: s.CreatedAt,
    UpdatedAt: s.UpdatedAt,
    Spec: spec,
    ...(s.PreviousSpec ? { PreviousSpec: shown(s.PreviousSpec) } : {}),
    ...(s.UpdateStatus ? { UpdateStatus: s.UpdateStatus } : {}),
    ...(s.JobStatus ? { JobStatus: { JobIteration: versionView(s.JobStatus.JobIteration), LastExecution: s.JobStatus.LastExecution } } : {}),
    Endpoint: endpoint,
    ...(o.status ? { ServiceStatus: o.status } : {}),
  };
}

const SERVICE_FILTERS: ReadonlySet<string> = new Set(['id', 'label', 'mode', 'name']);

/** The `filters` query of GET /services as a predicate (an unknown mode matches nothing, as the reference). */
export function serviceFilter(raw: string | undefined): (s: ServiceRecord) => boolean {
  const f = parseFilters(raw);
  for (const k of f.keys()) if (!SERVICE_FILTERS.has(k)) throw invalidArgument(`Invalid filter '${k}'`);
  const ids = f.get('id') ?? [];
  const names = f.get('name') ?? [];
  const modes = f.get('mode') ?? [];
  return (s) =>
    (!ids.length || ids.some((x) => s.ID.startsWith(x))) &&
    (!names.length || names.some((x) => s.Spec.Name.startsWith(x))) &&
    (!modes.length || modes.includes(modeName(s.Spec))) &&
    matchKVList(f.get('label'), s.Spec.Labels);
}

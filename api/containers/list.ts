// GET /containers/json: newest first, from the store's memory (never waits on the supervisor).
import { invalidArgument } from '../../lib/errors.ts';
import { invalidFilter, matchKVList, parseFilters } from '../filters.ts';
import { isRunning, Containers, type ContainerResource as CR } from '../../store/kinds/container.ts';
import type { ApiStore } from './store.ts';
import { mountsView } from './mounts-view.ts';
import { linkNamesOf } from '../../admission/containers/links.ts';
import { Volumes } from '../../store/kinds/volume.ts';
import { healthOf, stateName, summaryView } from './views.ts';
import { bridgeNetworkTest, networkNameResolver } from '../networks/views.ts';
import { Endpoints, type EndpointResource } from '../../store/kinds/endpoint.ts';
import { shownImageId } from '../images/resolve.ts';
import { imageManifestDescriptor } from '../images/platforms.ts';
import { Images } from '../../store/kinds/image.ts';


const HEALTH_VALUES = new Set(['starting', 'healthy', 'unhealthy', 'none']);
const KEYS = new Set(['ancestor', 'before', 'exited', 'id', 'isolation', 'label', 'name', 'status', 'health', 'since', 'volume', 'network', 'is-task', 'publish', 'expose']);
const STATUSES = new Set(['created', 'restarting', 'running', 'removing', 'paused', 'exited', 'dead']);

function regexMatch(pattern: string, value: string): boolean {
  try {
    return new RegExp(pattern).test(value);
  } catch {
    return false;
  }
}

export interface ListOptions {
  all: boolean;
  limit: number;
  size: boolean;
  filters: string;
  sizeRw: (id: string) => Promise<number>;
  findContainer: (ref: string) => CR;
  resolveImageId: (ref: string) => string;
  /** The request's API version (ImageManifestDescriptor from 1.48). */
  apiVersion?: number;
}

export async function listContainers(store: ApiStore, o: ListOptions): Promise<unknown[]> {
  const f = parseFilters(o.filters, KEYS);
  for (const s of f.get('status') ?? []) if (!STATUSES.has(s)) throw invalidFilter(`status=${s}`);
  for (const e of f.get('exited') ?? []) if (!/^-?\d+$/.test(e)) throw invalidFilter(`exited=${e}`);
  for (const h of f.get('health') ?? []) if (!HEALTH_VALUES.has(h)) throw invalidArgument(`Unrecognised filter value for health: ${h}`);
  const all = o.all || o.limit > 0 || f.has('status') || f.has('exited');

  let items = store.list(Containers).slice();
  items.sort((a, b) => (a.spec.created < b.spec.created ? 1 : a.spec.created > b.spec.created ? -1 : 0));

  const before = f.get('before')?.map((r) => o.findContainer(r).spec.created);
  const since = f.get('since')?.map((r) => o.findContainer(r).spec.created);
  const ancestors = f.get('ancestor')?.map((r) => {
    try {
      return o.resolveImageId(r);
    } catch {
      return `missing:${r}`;
    }
  });

  const networkName = networkNameResolver(store);
  const endpointsOf = endpointIndex(store);
  const isBridgeNetwork = bridgeNetworkTest(store);
  const wantedNetworks = f.get('network');
  /** On a network the filter names: by name, or by id prefix (as the reference matches it). */
  const onNetwork = (c: CR) => {
    const view = summaryView(c, { now: 0, networkName, endpoints: endpointsOf(c.name), isBridgeNetwork }).NetworkSettings as { Networks: Record<string, { NetworkID: string }> };
    const ids = [...Object.values(view.Networks).map((n) => n.NetworkID), ...endpointsOf(c.name).map((e) => e.spec.networkId)].filter(Boolean);
    return wantedNetworks!.some((v) => v in view.Networks || ids.some((id) => id.startsWith(v)));
  };

  items = items.filter((c) => {
    const st = stateName(c.status);
    if (!all && !isRunning(c.status)) return false;
    const ids = f.get('id');
    if (ids && !ids.some((p) => c.name.startsWith(p) || regexMatch(p, c.name))) return false;
    const names = f.get('name');
    if (names && !names.some((p) => c.spec.name === p || c.spec.name === `/${p}` || regexMatch(p, c.spec.name) || regexMatch(p, c.spec.name.slice(1)))) return false;
    const labels = f.get('label');
    if (!matchKVList(labels, c.spec.config.Labels ?? {})) return false;
    const statuses = f.get('status');
    if (statuses && !statuses.includes(st)) return false;
    const health = f.get('health');
    if (health && !health.includes(healthOf(c)?.Status ?? 'none')) return false;
    const exited = f.get('exited');
    if (exited && !(c.status.phase === 'exited' && exited.map(Number).includes(c.status.exitCode))) return false;
    if (before && !before.every((t) => c.spec.created < t)) return false;
    if (since && !since.every((t) => c.spec.created > t)) return false;
    if (ancestors && !ancestors.includes(c.spec.imageId)) return false;
    const volumes = f.get('volume');
    if (volumes && !volumes.some((v) => mountsView(c.spec, () => '').some((m) => m.Name === v || m.Destination === v || (m.Type === 'bind' && m.Source === v)))) return false;
    if (wantedNetworks && !onNetwork(c)) return false;
    return true;
  });
  if (o.limit > 0) items = items.slice(0, o.limit);
  const now = Date.now();
  const volumeSource = (name: string) => store.get(Volumes, name)?.status.mountpoint ?? '';
  const imageId = (name: string) => shownImageId(store, name);
  const manifestDescriptor = (o.apiVersion ?? 0) >= 1.48 ? (name: string) => imageManifestDescriptor(store.get(Images, name)) : undefined;
  // A linked container is also listed under its link names ("/parent/alias"), as the reference.
  const everyone = store.list(Containers);
  const withLinks = (c: CR, v: Record<string, unknown>) => {
    const extra = linkNamesOf(everyone, c);
    if (extra.length) v.Names = [c.spec.name, ...extra];
    return v;
  };
  if (!o.size) return items.map((c) => withLinks(c, summaryView(c, { now, volumeSource, networkName, endpoints: endpointsOf(c.name), isBridgeNetwork, imageId, manifestDescriptor })));
  return Promise.all(
    items.map(async (c) => {
      const rw = await o.sizeRw(c.name).catch(() => 0);
      return withLinks(c, summaryView(c, { now, size: { rw, rootFs: rw }, volumeSource, networkName, endpoints: endpointsOf(c.name), isBridgeNetwork, imageId, manifestDescriptor }));
    }),
  );
}

/** Endpoint records by container, read once per listing. */
function endpointIndex(store: Pick<ApiStore, 'list'>): (containerId: string) => EndpointResource[] {
  const by = new Map<string, EndpointResource[]>();
  for (const e of store.list(Endpoints)) {
    const list = by.get(e.spec.containerId);
    if (list) list.push(e);
    else by.set(e.spec.containerId, [e]);
  }
  return (id) => by.get(id) ?? [];
}

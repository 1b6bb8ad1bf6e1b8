// Container admission: a create body checked and normalised against its image, and the container,
// its endpoints and new volumes written in one transaction, with the reference's refusals before
// anything is written. POST /containers/create, the builder's RUN steps and a stack's services
// go through it; what answers the client afterwards (waiting for the reconciler to prepare
// the container) is the caller's.
import { conflict, invalidArgument, isCode } from '../../lib/errors.ts';
import { newId, rfc3339Nano, shortId, ZERO_TIME } from '../../lib/ids.ts';
import { type ContainerSpec, type ContainerStatus, containerByName, type ContainerResource, Containers, findContainer } from '../../store/kinds/container.ts';
import type { ImageResource } from '../../store/kinds/image.ts';
import { endpointsFromCreate, Endpoints, newEndpoint } from '../../store/kinds/endpoint.ts';
import { findNetwork, isBridged } from '../../store/kinds/network.ts';
import { Volumes } from '../../store/kinds/volume.ts';
import type { AdmissionStore } from '../store.ts';
import { resolveContainerMounts } from '../volumes/container-mounts.ts';
import { parseCreateBody } from './create-schema.ts';
import { normalizeCreate, type CreateDefaults } from './create-request.ts';
import { startLevel } from './lifecycle.ts';
import { normalizeLinks } from './links.ts';
import type { OwnerRef } from '../../store/owner.ts';
import { generateName, normalizeName } from './names.ts';

export interface AdmissionDeps {
  store: AdmissionStore;
  /** The image record a container of `ref` is made from, for `platform` (create's query) when given. */
  resolveImage: (ref: string, platform?: string) => ImageResource;
  defaults: CreateDefaults;
}

/**
 * A create body admitted: checked and normalised against its image (the reference's messages,
 * before anything is written), then the container, its endpoints and its new volumes written in one
 * transaction. Answers the record as written (its generation is what the reconciler's preparation
 * will have observed) and the warnings.
 */
export function admitContainer(
  deps: AdmissionDeps, input: unknown, opts: { name?: string; platform?: string; ownerRef?: OwnerRef; start?: boolean },
): { created: ContainerResource; warnings: string[] } {
  const { store } = deps;
  const body = parseCreateBody(input);
  const imageRef = body.Image;
  if (!imageRef) throw invalidArgument('No image was specified');
  const image = deps.resolveImage(imageRef, opts.platform);
  const n = normalizeCreate(body, JSON.parse(image.spec.rawConfig), deps.defaults);
  const mode = n.hostConfig.NetworkMode;
  // A user-defined network must exist (by name, id or id prefix). 400, not 404: a 404 on
  // create makes the docker CLI take it for a missing image and try to pull.
  if (!['bridge', 'none', 'host'].includes(mode) && !mode.startsWith('container:')) {
    try {
      findNetwork(store, mode);
    } catch (err) {
      if (isCode(err, 'NotFound')) throw invalidArgument((err as Error).message);
      throw err;
    }
  }
  // Every other user network its EndpointsConfig names must exist too: 404 `network NAME not
  // found`, before anything is written (no container, endpoint or volume is left behind).
  for (const key of endpointsConfigKeys(body.NetworkingConfig)) {
    if (BUILTIN_NETWORKS.has(key)) continue;
    findNetwork(store, key);
  }
  const id = newId();
  const taken = (nm: string) => !!containerByName(store, nm);
  const rawName = opts.name;
  const name = rawName ? normalizeName(rawName) : generateName(taken, shortId(id));
  if (!n.config.Hostname) n.config.Hostname = shortId(id);
  checkMacAddresses(n.config, body.NetworkingConfig);
  const links = normalizeLinks(n.hostConfig, name, (ref) => findContainer(store, ref));
  if (links) n.hostConfig.Links = links;
  const existing = containerByName(store, name);
  if (existing) {
    throw conflict(`Conflict. The container name "${name}" is already in use by container "${existing.name}". You have to remove (or rename) that container to be able to reuse that name.`);
  }
  // Each network it joins is an endpoint record of its own (its NetworkMode one marked primary).
  const split = endpointsFromCreate(mode, body.NetworkingConfig, (ref) => {
    try {
      const net = findNetwork(store, ref);
      return isBridged(net.spec) ? net : undefined;
    } catch {
      return undefined;
    }
  });
  const spec: ContainerSpec = {
    id, name, created: rfc3339Nano(), imageId: image.name, config: n.config, hostConfig: n.hostConfig,
    networkingConfig: split.networkingConfig ?? null,
    path: n.path, args: n.args, desired: 'created', runGeneration: 0, manuallyStopped: false,
  };
  if (opts.ownerRef) spec.ownerRef = opts.ownerRef;
  if (deps.defaults.selinuxLabels) {
    const l = deps.defaults.selinuxLabels(n.hostConfig);
    if (l.securityOpt.length || n.hostConfig.SecurityOpt) n.hostConfig.SecurityOpt = l.securityOpt;
    if (l.labels) spec.labels = l.labels;
  }
  // Created and started in one write (an owner's replica): the reconciler prepares, then runs it.
  if (opts.start) Object.assign(spec, startLevel(spec));
  const vols = resolveContainerMounts(store, { containerId: id, config: n.config, hostConfig: n.hostConfig, findContainer: (ref) => findContainer(store, ref) });
  if (vols.mountPoints.length) spec.mountPoints = vols.mountPoints;
  const status: ContainerStatus = {
    observedGeneration: 0, phase: 'created', pid: 0, exitCode: 0, error: '', errorCode: '', startedAt: ZERO_TIME,
    finishedAt: ZERO_TIME, oomKilled: false, restartCount: 0, runGeneration: 0, exitSeq: 0,
    logPath: '', hostnamePath: '', hostsPath: '', resolvConfPath: '', driver: '', rootfs: '', prepared: false,
  };
  const created = store.transaction((tx) => {
    for (const v of vols.newVolumes) {
      tx.create(Volumes, v.name, v, { observedGeneration: 0, phase: 'pending', error: '', mountpoint: '' });
    }
    for (const { net, config, primary } of [...(split.primary ? [{ ...split.primary, primary: true }] : []), ...split.extras.map((x) => ({ ...x, primary: false }))]) {
      const e = newEndpoint(id, net, config, primary);
      tx.create(Endpoints, e.name, e.spec, e.status);
    }
    return tx.create(Containers, id, spec, status);
  });
  return { created, warnings: n.warnings };
}

/** The predefined networks (and the default mode's names): not looked up by the create itself. */
const BUILTIN_NETWORKS = new Set(['', 'default', 'bridge', 'host', 'none']);

/** The networks a create's NetworkingConfig.EndpointsConfig names. */
function endpointsConfigKeys(networking: unknown): string[] {
  const eps = (networking as { EndpointsConfig?: unknown } | null | undefined)?.EndpointsConfig;
  return eps && typeof eps === 'object' ? Object.keys(eps) : [];
}

const MAC = /^[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}$/;

/** Config.MacAddress and each endpoint's MacAddress: 400 `invalid MAC address` before anything is written. */
function checkMacAddresses(config: { MacAddress?: string }, networking: unknown): void {
  const macs: unknown[] = [config.MacAddress];
  const eps = (networking as { EndpointsConfig?: Record<string, { MacAddress?: unknown } | null> } | null)?.EndpointsConfig;
  if (eps && typeof eps === 'object') for (const ep of Object.values(eps)) macs.push(ep?.MacAddress);
  for (const m of macs) {
    if (m === undefined || m === null || m === '') continue;
    if (typeof m !== 'string' || !MAC.test(m)) throw invalidArgument(`invalid MAC address: ${String(m)}`);
  }
}

// System routes: ping, version, info, data usage, and the swarm-mode answers of a node that is not
// in a swarm.
import { arch, release } from 'node:os';
import type { FastifyReply } from 'fastify';
import * as z from 'zod';
import { unavailable } from '../../lib/errors.ts';

import type { ApiStore } from '../containers/store.ts';
import type { SystemInfoPort } from '../ports.ts';
import { isUsable } from '../images/resolve.ts';
import type { App } from '../app.ts';
import { apiVersion, q, restParams } from '../request.ts';
import type { LayerSizes } from '../images/layers.ts';
import { imageDiskUsage } from '../images/usage.ts';
import { summaryView as containerSummary } from '../containers/views.ts';
import { defaultInfo } from './info-defaults.ts';
import type { ClusterPort } from '../nodes/port.ts';
import { serviceRoutes } from '../services/routes.ts';
import { secretRoutes } from '../secrets/routes.ts';
import { nodeRoutes } from '../nodes/routes.ts';
import { pingSwarmHeader, swarmInfo } from '../nodes/views.ts';
import type { SwarmPort } from '../swarm/port.ts';
import { swarmRoutes } from '../swarm/routes.ts';
import { clusterInfo } from '../../lib/swarm/cluster-object.ts';
import { volumesOf, volumeView } from '../volumes/views.ts';
import { Images } from '../../store/kinds/image.ts';
import { Containers } from '../../store/kinds/container.ts';
import { liveVolumes } from '../../store/kinds/volume.ts';

export interface VersionInfo {
  version: string;
  apiVersion: string;
  minApiVersion: string;
  gitCommit: string;
  goVersion?: string;
  buildTime?: string;
}

export interface SystemRouteDeps {
  store: ApiStore;
  info: SystemInfoPort;
  versionInfo: VersionInfo;
  experimental: boolean;
  /** Layer sizes for the image figures of /system/df. */
  layers?: LayerSizes;
  /** Bytes of a container's own changes (SizeRw in /system/df). */
  sizeRw?: (id: string) => Promise<number>;
  /** Bytes used by a volume's data (UsageData.Size in /system/df). */
  volumeSize?: (name: string) => Promise<number>;
  /** Records the store could not read at open (quarantined): each one a line of `docker info`'s warnings. */
  storeWarnings?: () => string[];
  /**
   * Cluster membership as it is now (undefined while the node is in no cluster): the Swarm section
   * of /info, the Swarm header of /_ping, GET /nodes. A getter: a node joins and leaves at run time.
   */
  cluster?: () => ClusterPort | undefined;
  /** The node's swarm (init, leave, inspect, update): the swarm routes; without it they answer as a node in no swarm. */
  swarm?: SwarmPort;
}

/** /info's Swarm section from the membership (and the swarm's cluster object when the node is in one). */
function clusterSwarm(c: ClusterPort, swarm: SwarmPort | undefined): Record<string, unknown> {
  const nodes = c.nodes();
  const live = nodes.filter((n) => n.state !== 'down');
  const rec = swarm?.cached();
  return swarmInfo(c.self(), live, {
    leaderId: c.leaderId,
    clusterId: rec?.id ?? CLUSTER_ID,
    error: c.error,
    state: c.state,
    manager: swarm ? swarm.local().manager : true,
    ...(rec ? { cluster: clusterInfo(rec) } : {}),
  });
}

/** /info's Swarm section: the swarm's (its state while it starts), from the membership once it runs; undefined in none. */
function swarmSection(swarm: SwarmPort | undefined, cluster: ClusterPort | undefined): Record<string, unknown> | undefined {
  if (swarm?.inSwarm) {
    const l = swarm.local();
    if (!cluster || l.state === 'pending' || l.state === 'error' || l.state === 'locked') return swarmInfo(undefined, [], { state: l.state, clusterId: '', error: l.error });
    return clusterSwarm(cluster, swarm);
  }
  return cluster ? clusterSwarm(cluster, undefined) : undefined;
}

/** /_ping's Swarm header. */
function swarmHeader(swarm: SwarmPort | undefined, cluster: ClusterPort | undefined): string {
  if (swarm?.inSwarm) {
    const l = swarm.local();
    return pingSwarmHeader(l.state, l.manager);
  }
  return cluster ? pingSwarmHeader(cluster.state, true) : 'inactive';
}

/** One cluster per etcd prefix: its id is fixed (the CLI shows it as ClusterID). */
const CLUSTER_ID = 'engine0000000000000000000';

const NOT_A_MANAGER =
  'This node is not a swarm manager. Use "docker swarm init" or "docker swarm join" to connect this node to swarm and try again.';

const GO_ARCH: Record<string, string> = { x64: 'amd64', ia32: '386', arm64: 'arm64', arm: 'arm', s390x: 's390x', ppc64: 'ppc64le', riscv64: 'riscv64' };

type Counts = { Containers: number; ContainersRunning: number; ContainersPaused: number; ContainersStopped: number; Images: number };

export function liveCounts(store: ApiStore): Counts {
  const containers = store.list(Containers);
  let running = 0;
  let paused = 0;
  for (const c of containers) {
    const phase = c.status?.phase;
    if (phase === 'paused') paused++;
    else if (phase === 'running' || phase === 'restarting') running++;
  }
  return {
    Containers: containers.length,
    ContainersRunning: running,
    ContainersPaused: paused,
    ContainersStopped: containers.length - running - paused,
    Images: store.list(Images).filter(isUsable).length,
  };
}

export function systemRoutes(deps: SystemRouteDeps) {
  const { store, versionInfo } = deps;
  const experimental = deps.experimental;

  function pingHeaders(reply: FastifyReply): void {
    reply.header('Api-Version', versionInfo.apiVersion);
    reply.header('Builder-Version', '1');
    reply.header('Docker-Experimental', String(experimental));
    reply.header('Swarm', swarmHeader(deps.swarm, deps.cluster?.()));
    reply.header('Cache-Control', 'no-cache, no-store, must-revalidate');
    reply.header('Pragma', 'no-cache');
    reply.header('Content-Type', 'text/plain; charset=utf-8');
  }

  async function version(): Promise<Record<string, unknown>> {
    const goVersion = versionInfo.goVersion ?? `node${process.versions.node}`;
    const osArch = GO_ARCH[arch()] ?? arch();
    const kernel = release();
    const buildTime = versionInfo.buildTime ?? '';
    let components: Awaited<ReturnType<SystemInfoPort['components']>> = [];
    try {
      components = await deps.info.components();
    } catch {
      // component versions are informative only
    }
    return {
      Platform: { Name: 'Engine' },
      Components: [
        {
          Name: 'Engine',
          Version: versionInfo.version,
          Details: {
            ApiVersion: versionInfo.apiVersion,
            Arch: osArch,
            BuildTime: buildTime,
            Experimental: String(experimental),
            GitCommit: versionInfo.gitCommit,
            GoVersion: goVersion,
            KernelVersion: kernel,
            MinAPIVersion: versionInfo.minApiVersion,
            Os: 'linux',
          },
        },
        ...components,
      ],
      Version: versionInfo.version,
      ApiVersion: versionInfo.apiVersion,
      MinAPIVersion: versionInfo.minApiVersion,
      GitCommit: versionInfo.gitCommit,
      GoVersion: goVersion,
      Os: 'linux',
      Arch: osArch,
      KernelVersion: kernel,
      Experimental: experimental,
      BuildTime: buildTime,
    };
  }

  async function info(): Promise<Record<string, unknown>> {
    const machine = await deps.info.info();
    const swarm = swarmSection(deps.swarm, deps.cluster?.());
    return {
      ...defaultInfo(),
      ...machine,
      ...liveCounts(store),
      ...(swarm ? { Swarm: swarm } : {}),
      Warnings: [...((machine.Warnings as string[] | undefined) ?? []), ...(deps.storeWarnings?.() ?? [])],
      ServerVersion: versionInfo.version,
      ExperimentalBuild: experimental,
      SystemTime: new Date().toISOString(),
    };
  }

  async function dataUsage(types: Set<string>, apiVersion: number): Promise<Record<string, unknown>> {
    const want = (t: string) => types.size === 0 || types.has(t);
    const out: Record<string, unknown> = {};
    if (want('image')) Object.assign(out, imageDiskUsage(store, { apiVersion, layers: deps.layers }));
    if (want('container')) {
      const now = Date.now();
      const containers = store.list(Containers);
      out.Containers = await Promise.all(
        containers.map(async (c) => {
          const rw = (await deps.sizeRw?.(c.name).catch(() => 0)) ?? 0;
          const image = store.get(Images, c.spec.imageId)?.spec.size ?? 0;
          return containerSummary(c, { now, size: { rw, rootFs: rw + image } });
        }),
      );
    }
    if (want('volume')) {
      const used = new Map<string, number>();
      for (const c of store.list(Containers)) for (const n of volumesOf(c)) used.set(n, (used.get(n) ?? 0) + 1);
      out.Volumes = await Promise.all(
        liveVolumes(store).map(async (v) => {
          const size = deps.volumeSize ? await deps.volumeSize(v.name).catch(() => -1) : -1;
          return volumeView(v, { Size: size, RefCount: used.get(v.name) ?? 0 });
        }),
      );
    }
    if (want('build-cache')) out.BuildCache = [];
    return out;
  }

  return async function register(app: App): Promise<void> {
    app.route({
      method: 'GET',
      url: '/_ping',
      exposeHeadRoute: false,
      handler: async (_req, reply) => {
        pingHeaders(reply);
        reply.send('OK');
      },
    });
    app.head('/_ping', async (_req, reply) => {
      pingHeaders(reply);
      reply.header('Content-Length', '0');
      reply.send();
    });

    app.get('/version', version);
    app.get('/info', info);
    app.get('/system/df', { schema: { querystring: z.looseObject({ type: q.list() }) } }, async (req) => dataUsage(new Set(req.query.type), apiVersion(req)));

    const notManager = async () => {
      throw unavailable(NOT_A_MANAGER);
    };
    if (deps.swarm) await app.register(swarmRoutes(deps.swarm, NOT_A_MANAGER));
    else {
      app.post('/swarm/leave', async () => {
        throw unavailable('This node is not part of a swarm');
      });
    }
    for (const area of ['swarm', 'nodes', 'services', 'tasks', 'secrets', 'configs']) {
      // GET /nodes and /nodes/{id} are node routes (api/nodes/routes.ts), GET /swarm a swarm route
      // (api/swarm/routes.ts): 503 as these while the node is in no cluster.
      const all: Array<'GET' | 'POST' | 'DELETE' | 'PUT'> = ['GET', 'POST', 'DELETE', 'PUT'];
      const own = area === 'nodes' || ((area === 'swarm' || area === 'services' || area === 'tasks' || area === 'secrets' || area === 'configs') && deps.swarm);
      app.route({ method: own ? all.slice(1) : all, url: `/${area}`, handler: notManager });
      app.route({ method: all, url: `/${area}/*`, schema: { params: restParams }, handler: notManager });
    }
    await app.register(nodeRoutes({ cluster: () => deps.cluster?.(), swarm: deps.swarm, notInCluster: NOT_A_MANAGER }));
    const swarm = deps.swarm;
    if (swarm) await app.register(secretRoutes({ secrets: () => swarm.secrets(), configs: () => swarm.configs() }));
    if (swarm) await app.register(serviceRoutes({ services: () => swarm.services(), nodes: () => (deps.cluster?.()?.nodes() ?? []).map((n) => ({ id: n.id, hostname: n.hostname })) }));
  };
}

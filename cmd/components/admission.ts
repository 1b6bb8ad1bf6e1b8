// Admission's dependencies, built once from the daemon's options: what a container create and a
// network create are checked and defaulted against. The API's create routes and the stack
// reconciler (which writes its objects through admission, not through the API) share them.
import { rootlessNoCgroups } from '../system-info.ts';
import type { AdmissionDeps } from '../../admission/containers/admit.ts';
import type { CreateDefaults } from '../../admission/containers/create-request.ts';
import type { NetworkAdmissionDeps } from '../../admission/networks/admit.ts';
import { resolveForPlatform } from '../../api/images/platforms.ts';
import { validateLogConfig } from '../../drivers/logging/index.ts';
import { hostRouteSubnets } from '../../drivers/network/routes.ts';
import { validateBind } from '../../drivers/oci/index.ts';
import { generatedLabelOpts, initLabels, labelOptions, McsAllocator, selinuxActive, type LabelHostConfig, type SelinuxLabels } from '../../drivers/oci/selinux.ts';
import { Containers, findContainer, type HostConfig } from '../../store/kinds/container.ts';
import { DEFAULT_CHAIN_PREFIX } from '../../reconcilers/network/deps.ts';
import { component } from './registry.ts';
import { blkioWeightSupported, hostCpus } from '../daemon-helpers.ts';
import type { DaemonEnv } from './env.ts';

/**
 * A new container's SELinux labels (where SELinux is active): its options with the ones the
 * reference adds, and a level no other container holds (the store's containers are the levels in use).
 */
export function containerLabels(store: AdmissionDeps['store'], h: HostConfig, newAllocator = () => new McsAllocator(), active = true): { securityOpt: string[]; labels?: SelinuxLabels } {
  const processLabelOf = (ref: string) => {
    try {
      return findContainer(store, ref).spec.labels?.processLabel ?? '';
    } catch {
      return '';
    }
  };
  const given = Array.isArray(h.SecurityOpt) ? (h.SecurityOpt as string[]) : [];
  const securityOpt = [...given, ...generatedLabelOpts({ ...h, SecurityOpt: given } as LabelHostConfig, processLabelOf)];
  if (!active) return { securityOpt };
  const mcs = newAllocator();
  for (const c of store.list(Containers)) if (c.spec.labels) mcs.reserveLabel(c.spec.labels.processLabel);
  return { securityOpt, labels: initLabels(labelOptions(securityOpt), mcs) };
}

export interface Admission {
  containers: AdmissionDeps;
  networks: Required<NetworkAdmissionDeps>;
}

export function admissionComponent({ cfg }: DaemonEnv) {
  return component({
    id: 'admission',
    requires: ['store', 'runtimes', 'userns', 'cdi'],
    init: (ctx) => {
      const store = ctx.get('store');
      const runtimes = ctx.get('runtimes');
      const defaults: CreateDefaults = {
        get runtime() {
          return runtimes.default;
        },
        hasRuntime: (n) => runtimes.names().includes(n),
        shmSize: cfg.defaultShmSize || 64 * 1024 * 1024,
        ipcMode: cfg.defaultIpcMode || 'private',
        cgroupnsMode: cfg.defaultCgroupnsMode || 'private',
        blkioWeight: blkioWeightSupported(),
        hostCpus: hostCpus(),
        logConfig: { Type: cfg.logDriver || 'json-file', Config: cfg.logOpts ?? {} },
        validateLogConfig,
        validateBind,
        usernsRemap: !!ctx.get('userns').map,
        cdi: () => ctx.get('cdi').registry,
        // Rootless mode on cgroup v1: no limits (the reference's warnings).
        ...(rootlessNoCgroups(cfg) ? { noCgroups: true } : {}),
        // The label options the reference adds whether or not SELinux is on (label=disable for
        // --privileged, host pid/ipc: dockerd 20.10 shows them on a host without it); labels where it is.
        selinuxLabels: (h: HostConfig) => containerLabels(store, h, undefined, selinuxActive(!!cfg.selinuxEnabled)),
      };
      return {
        containers: { store, resolveImage: (ref, platform) => resolveForPlatform(store, ref, platform), defaults },
        networks: {
          store,
          defaults: {
            mtu: cfg.mtu,
            iptables: cfg.iptables,
            ip6tables: cfg.iptables && cfg.ip6tables,
            ipForward: cfg.ipForward,
            userlandProxy: cfg.userlandProxy,
            chainPrefix: process.env.ENGINE_IPTABLES_CHAIN_PREFIX || DEFAULT_CHAIN_PREFIX,
            pools: cfg.defaultAddressPools ?? [],
            driverOpts: cfg.defaultNetworkOpts ?? {},
            hostRoutes: hostRouteSubnets,
          },
        },
      };
    },
  });
}

// Networking: the bridge driver with the default network, attaching containers to networks,
// published ports (and the userland proxies behind them) and the embedded DNS servers.
import { rootlesskitPorts } from '../../drivers/network/rootlesskit-ports.ts';
import { component } from './registry.ts';
import type { DaemonEnv } from './env.ts';
import { BridgeDriver } from '../../drivers/network/bridge-driver.ts';
import { dnsUpstreams, startDnsServer } from '../../drivers/network/dns-server.ts';
import { PortProxies } from '../../drivers/network/port-proxy.ts';
import { NetworkAttacher } from '../../reconcilers/network/attacher.ts';
import { ensureDefaultNetwork } from '../../reconcilers/network/default-network.ts';
import { NetworkDns } from '../../reconcilers/network/dns.ts';
import { PortPublisher } from '../../reconcilers/network/ports.ts';
import { Containers } from '../../store/kinds/container.ts';

export function networkComponents({ cfg, log }: DaemonEnv) {
  return [
    component({
      id: 'bridge',
      requires: ['store'],
      init: async (ctx) => {
        const driver = new BridgeDriver({ log: log.child({ component: 'network' }) });
        await ensureDefaultNetwork(
          ctx.get('store'),
          {
            bridge: cfg.bridge,
            bip: cfg.bip,
            fixedCidr: cfg.fixedCidr,
            mtu: cfg.mtu,
            iptables: cfg.iptables,
            ipForward: cfg.ipForward,
            ipMasq: cfg.ipMasq,
            icc: cfg.icc,
            defaultGateway: cfg.defaultGateway,
            ipv6: cfg.ipv6,
            fixedCidrV6: cfg.fixedCidrV6,
            defaultGatewayV6: cfg.defaultGatewayV6,
            ip6tables: cfg.ip6tables,
            userlandProxy: cfg.userlandProxy,
            // Tests running several daemons side by side give each its own chains.
            chainPrefix: process.env.ENGINE_IPTABLES_CHAIN_PREFIX || undefined,
          },
          { driver },
        );
        return driver;
      },
    }),
    component({
      id: 'network-attacher',
      // After the bridge: the default network exists before anything is attached to it.
      requires: ['store', 'bridge'],
      init: (ctx) => new NetworkAttacher(ctx.get('store'), ctx.get('bridge'), log),
    }),
    component({
      id: 'port-proxies',
      requires: [],
      init: () => {
        // Rootless: ports are exposed on the host through rootlesskit's port driver too.
        const parent = cfg.rootless ? rootlesskitPorts() : undefined;
        return new PortProxies({ log: log.child({ component: 'port-proxy' }), binary: cfg.userlandProxyPath || undefined, ...(parent ? { parent } : {}) });
      },
      close: (proxies) => proxies.closeAll(),
    }),
    component({
      id: 'ports',
      requires: ['store', 'bridge', 'port-proxies'],
      init: async (ctx) => {
        const ports = new PortPublisher(ctx.get('store'), ctx.get('bridge'), {
          log: log.child({ component: 'ports' }),
          defaultIp: cfg.ip || '0.0.0.0',
          userlandProxy: cfg.userlandProxy !== false,
          proxy: cfg.userlandProxy !== false ? ctx.get('port-proxies') : undefined,
        });
        // No run of the last life is left (they are stopped at start-up): neither are its published
        // ports — unless live restore adopts the runs: the ports of containers last seen running stay.
        const store = ctx.get('store');
        const lastSeenRunning = (id: string) => ['running', 'paused'].includes(store.get(Containers, id)?.status.phase ?? '');
        const swept = await ports.sweep(undefined, cfg.liveRestore ? lastSeenRunning : undefined);
        if (swept) log.info({ ports: swept }, 'published ports of the previous run released');
        return ports;
      },
    }),
    component({
      id: 'dns',
      requires: ['store'],
      init: (ctx) => {
        const dnsLog = log.child({ component: 'dns' });
        return new NetworkDns(ctx.get('store'), { start: (o) => startDnsServer({ ...o, log: dnsLog }) }, dnsUpstreams(() => cfg.dns ?? []), dnsLog);
      },
      close: (dns) => dns.closeAll(),
    }),
  ];
}

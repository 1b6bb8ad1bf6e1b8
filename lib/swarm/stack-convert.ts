// A cluster stack's Compose application as the swarm objects the docker CLI's `stack deploy` makes
// for it (docker/cli's cli/compose/convert): networks (overlay, `NS_default` for services that name
// none), secrets and configs (their content as data), and services, every one named `NS_KEY` and
// labelled `com.docker.stack.namespace=NS`, so a stack applied here and one deployed by the CLI are
// the same thing to either client. Pure: the secret and config ids are filled in by the caller
// (cmd/swarm/stacks.ts) once they exist. What cannot be said to a swarm is refused in words.
import { invalidArgument } from '../errors.ts';
import { asList, durationNs, serviceNetworks, sizeBytes, toMap } from '../compose/normalize.ts';
import type { ComposeApp, ComposeService } from '../compose/schema.ts';

export const NAMESPACE_LABEL = 'com.docker.stack.namespace';

type Json = Record<string, unknown>;

export interface StackObjects {
  networks: Array<{ key: string; name: string; body: Json }>;
  secrets: Array<{ key: string; name: string; spec: { Name: string; Labels: Record<string, string>; Data: string } }>;
  configs: Array<{ key: string; name: string; spec: { Name: string; Labels: Record<string, string>; Data: string } }>;
  /** Each service's spec; its secrets' and configs' references name them (SecretName, ConfigName) without ids yet. */
  services: Array<{ key: string; name: string; spec: Json }>;
}

const scoped = (ns: string, key: string) => `${ns}_${key}`;

/** The CLI's convertRestartPolicy of a service's `restart`. */
function restartPolicy(r: string | undefined): Json | undefined {
  if (r === undefined) return undefined;
  if (r === 'no') return { Condition: 'none' };
  if (r === 'always' || r === 'unless-stopped') return { Condition: 'any' };
  const n = /^on-failure(?::(\d+))?$/.exec(r);
  return n ? { Condition: 'on-failure', ...(n[1] ? { MaxAttempts: Number(n[1]) } : {}) } : undefined;
}

/** The CLI's convertEndpointSpec: short ports publish in ingress mode, long ones as they say. */
function endpointPorts(svcName: string, svc: ComposeService): Json[] {
  const out: Json[] = [];
  for (const p of svc.ports ?? []) {
    if (typeof p === 'object') {
      if (p.host_ip) throw invalidArgument(`services.${svcName}.ports: host_ip is not supported in a cluster stack`);
      if (typeof p.published === 'string' && p.published.includes('-')) throw invalidArgument(`services.${svcName}.ports: port ranges are not supported in a cluster stack`);
      out.push({ Protocol: p.protocol ?? 'tcp', TargetPort: p.target, ...(p.published !== undefined && Number(p.published) ? { PublishedPort: Number(p.published) } : {}), PublishMode: p.mode ?? 'ingress' });
      continue;
    }
    const [spec, proto = 'tcp'] = String(p).split('/');
    const parts = spec!.split(':');
    if (parts.length > 2) throw invalidArgument(`services.${svcName}.ports: a host address (${String(p)}) is not supported in a cluster stack`);
    if (parts.some((x) => !/^\d+$/.test(x))) throw invalidArgument(`services.${svcName}.ports: invalid port ${JSON.stringify(String(p))} (port ranges are not supported in a cluster stack)`);
    const target = Number(parts.pop());
    const published = parts.length ? Number(parts[0]) : undefined;
    out.push({ Protocol: proto, TargetPort: target, ...(published ? { PublishedPort: published } : {}), PublishMode: 'ingress' });
  }
  return out;
}

function mounts(ns: string, svc: ComposeService, app: ComposeApp): Json[] {
  const out: Json[] = [];
  const volume = (src: string) => (app.volumes && src in app.volumes ? scoped(ns, src) : src);
  const nsLabels = { Labels: { [NAMESPACE_LABEL]: ns } };
  for (const v of svc.volumes ?? []) {
    if (typeof v === 'object') {
      const source = v.type === 'volume' && v.source ? volume(v.source) : v.source;
      out.push({
        Type: v.type,
        ...(source ? { Source: source } : {}),
        Target: v.target,
        ...(v.read_only ? { ReadOnly: true } : {}),
        ...(v.type === 'tmpfs' && v.tmpfs?.size !== undefined ? { TmpfsOptions: { SizeBytes: sizeBytes(v.tmpfs.size) } } : {}),
        ...(v.type === 'volume' ? { VolumeOptions: { ...nsLabels, ...(v.volume?.nocopy ? { NoCopy: true } : {}) } } : {}),
      });
      continue;
    }
    const [src, target, mode = ''] = v.split(':');
    if (target === undefined) {
      out.push({ Type: 'volume', Target: src });
      continue;
    }
    const isBind = src!.startsWith('/') || src!.startsWith('.');
    out.push({ Type: isBind ? 'bind' : 'volume', Source: isBind ? src : volume(src!), Target: target, ...(mode.split(',').includes('ro') ? { ReadOnly: true } : {}), ...(isBind ? {} : { VolumeOptions: nsLabels }) });
  }
  for (const t of svc.tmpfs === undefined ? [] : Array.isArray(svc.tmpfs) ? svc.tmpfs : [svc.tmpfs]) out.push({ Type: 'tmpfs', Target: t });
  return out;
}

/** A service's secret or config references, as the CLI writes them (File: target, uid/gid 0, mode 0444). */
function fileRefs(ns: string, kind: 'secrets' | 'configs', refs: ComposeService['secrets']): Json[] | undefined {
  if (!refs?.length) return undefined;
  return refs.map((ref) => {
    const source = typeof ref === 'string' ? ref : ref.source;
    const target = typeof ref === 'string' || !ref.target ? source : ref.target;
    const mode = typeof ref === 'string' || ref.mode === undefined ? 0o444 : ref.mode;
    return { File: { Name: target, UID: '0', GID: '0', Mode: mode }, [kind === 'secrets' ? 'SecretName' : 'ConfigName']: scoped(ns, source) };
  });
}

function healthcheck(svc: ComposeService): Json | undefined {
  const h = svc.healthcheck;
  if (!h) return undefined;
  if (h.disable) return { Test: ['NONE'] };
  return {
    ...(h.test !== undefined ? { Test: typeof h.test === 'string' ? ['CMD-SHELL', h.test] : h.test } : {}),
    ...(h.interval ? { Interval: durationNs(h.interval) } : {}),
    ...(h.timeout ? { Timeout: durationNs(h.timeout) } : {}),
    ...(h.retries !== undefined ? { Retries: h.retries } : {}),
    ...(h.start_period ? { StartPeriod: durationNs(h.start_period) } : {}),
  };
}

function resources(svc: ComposeService): Json | undefined {
  const r = svc.deploy?.resources;
  if (!r) return undefined;
  const one = (x: { cpus?: string | number; memory?: string | number } | undefined) => ({
    ...(x?.cpus !== undefined ? { NanoCPUs: Math.round(Number(x.cpus) * 1e9) } : {}),
    ...(x?.memory !== undefined ? { MemoryBytes: sizeBytes(x.memory) } : {}),
  });
  const generic = r.reservations?.generic_resources?.map((g) => ({ DiscreteResourceSpec: { Kind: g.discrete_resource_spec.kind, Value: g.discrete_resource_spec.value } }));
  return { ...(r.limits ? { Limits: one(r.limits) } : {}), ...(r.reservations ? { Reservations: { ...one(r.reservations), ...(generic?.length ? { GenericResources: generic } : {}) } } : {}) };
}

function updateConfig(svc: ComposeService): Json | undefined {
  const u = svc.deploy?.update_config;
  if (!u) return undefined;
  return {
    Parallelism: u.parallelism ?? 1,
    ...(u.delay ? { Delay: durationNs(u.delay) } : {}),
    ...(u.failure_action ? { FailureAction: u.failure_action } : {}),
    ...(u.monitor ? { Monitor: durationNs(u.monitor) } : {}),
    ...(u.order ? { Order: u.order } : {}),
  };
}

function serviceSpec(ns: string, key: string, svc: ComposeService, app: ComposeApp): Json {
  const nsLabel = { [NAMESPACE_LABEL]: ns };
  const env = Object.entries(toMap(svc.environment)).map(([k, v]) => `${k}=${v}`).sort();
  const ports = endpointPorts(key, svc);
  const secrets = fileRefs(ns, 'secrets', svc.secrets);
  const configs = fileRefs(ns, 'configs', svc.configs);
  const mountList = mounts(ns, svc, app);
  const health = healthcheck(svc);
  const res = resources(svc);
  const restart = restartPolicy(svc.restart);
  const constraints = svc.deploy?.placement?.constraints;
  const update = updateConfig(svc);
  return {
    Name: scoped(ns, key),
    Labels: nsLabel,
    TaskTemplate: {
      ContainerSpec: {
        Image: svc.image,
        ...(svc.entrypoint !== undefined ? { Command: asList(svc.entrypoint) } : {}),
        ...(svc.command !== undefined ? { Args: asList(svc.command) } : {}),
        Labels: { ...toMap(svc.labels), ...nsLabel },
        ...(env.length ? { Env: env } : {}),
        ...(svc.working_dir ? { Dir: svc.working_dir } : {}),
        ...(svc.user ? { User: svc.user } : {}),
        ...(svc.init !== undefined ? { Init: svc.init } : {}),
        ...(svc.stop_signal ? { StopSignal: svc.stop_signal } : {}),
        ...(svc.stop_grace_period ? { StopGracePeriod: durationNs(svc.stop_grace_period) } : {}),
        ...(health ? { Healthcheck: health } : {}),
        ...(mountList.length ? { Mounts: mountList } : {}),
        ...(secrets ? { Secrets: secrets } : {}),
        ...(configs ? { Configs: configs } : {}),
      },
      ...(res ? { Resources: res } : {}),
      ...(restart ? { RestartPolicy: restart } : {}),
      ...(constraints?.length ? { Placement: { Constraints: constraints } } : {}),
      Networks: serviceNetworks(svc).map((n) => ({ Target: scoped(ns, n.key), Aliases: [key, ...n.aliases] })),
    },
    Mode: { Replicated: { Replicas: svc.deploy?.replicas ?? 1 } },
    ...(update ? { UpdateConfig: update } : {}),
    EndpointSpec: { Mode: 'vip', ...(ports.length ? { Ports: ports } : {}) },
  };
}

/** What `docker stack deploy -c FILE NS` would create for `app`, in the order it creates them. */
export function stackObjects(ns: string, app: ComposeApp): StackObjects {
  const nsLabel = { [NAMESPACE_LABEL]: ns };
  const used = new Set<string>();
  const services: StackObjects['services'] = [];
  for (const [key, def] of Object.entries(app.services)) {
    const svc: ComposeService = def ?? { image: '' };
    for (const n of serviceNetworks(svc)) used.add(n.key);
    services.push({ key, name: scoped(ns, key), spec: serviceSpec(ns, key, svc, app) });
  }
  const networks = [...used].map((key) => {
    const def = app.networks?.[key] ?? null;
    if (def?.driver === 'bridge') throw invalidArgument(`networks.${key}.driver: a cluster stack's networks are overlay networks (leave the driver out)`);
    const name = scoped(ns, key);
    return {
      key,
      name,
      body: {
        Name: name,
        Driver: 'overlay',
        Labels: { ...toMap(def?.labels), ...nsLabel },
        ...(def?.internal ? { Internal: true } : {}),
        ...(def?.ipam?.config ? { IPAM: { Driver: 'default', Config: def.ipam.config.map((c) => ({ ...(c.subnet ? { Subnet: c.subnet } : {}), ...(c.gateway ? { Gateway: c.gateway } : {}) })) } } : {}),
      },
    };
  });
  const files = (m: ComposeApp['secrets']) =>
    Object.entries(m ?? {}).map(([key, c]) => ({ key, name: scoped(ns, key), spec: { Name: scoped(ns, key), Labels: nsLabel, Data: Buffer.from(c.content, 'utf8').toString('base64') } }));
  return { networks, secrets: files(app.secrets), configs: files(app.configs), services };
}

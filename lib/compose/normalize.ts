// A stack's Compose application as the Engine API objects Compose v2 would create for it: the
// project's networks and volumes, and per service the container create body (named
// PROJECT-SERVICE-N, labelled as Compose labels them plus our owner label) and the service's
// config hash, which changes exactly when a container of the service must be recreated.
import { createHash } from 'node:crypto';
import { canonicalJson } from '../canonical-json.ts';
import { parseRamSize } from '../volume-options.ts';
import type { ComposeApp, ComposeService } from './schema.ts';

export const LABEL = {
  project: 'com.docker.compose.project',
  service: 'com.docker.compose.service',
  number: 'com.docker.compose.container-number',
  configHash: 'com.docker.compose.config-hash',
  oneoff: 'com.docker.compose.oneoff',
  network: 'com.docker.compose.network',
  volume: 'com.docker.compose.volume',
  /** Ours: what a stack created (never adopted otherwise). */
  owner: 'engine.stack.owner',
} as const;

type Json = Record<string, unknown>;

/** deploy.update_config with the Compose specification's defaults; `parallelism` 0 is all at once. */
export interface UpdatePolicy {
  parallelism: number;
  delayMs: number;
  order: 'start-first' | 'stop-first';
  failureAction: 'rollback' | 'pause' | 'continue';
  monitorMs: number;
}

export interface ServicePlan {
  name: string;
  replicas: number;
  /** The replica numbers: 1..replicas. */
  slots: number[];
  /** The config hash of slot `n` (the service's: every slot is made alike). */
  hashFor(n: number): string;
  /** How a change rolls: without update_config every replica at once (as `compose up`), stop-first. */
  update: UpdatePolicy;
  /** The healthcheck's interval (ms; 30 s when unset), for how long an unhealthy replica is kept. */
  healthIntervalMs: number;
  /** restart: no — runs once; Ready when it exited 0. */
  oneShot: boolean;
  hasHealthcheck: boolean;
  configHash: string;
  /** The container create body for replica `n` (1-based). */
  body(n: number): Json;
  containerName(n: number): string;
}

export interface ProjectPlan {
  networks: Array<{ key: string; name: string; body: Json }>;
  volumes: Array<{ key: string; name: string; body: Json }>;
  services: ServicePlan[];
}

/** `KEY=VALUE` list or map (environment, labels) as a map of strings. */
export function toMap(v: string[] | Record<string, string | number | boolean | null> | undefined): Record<string, string> {
  if (!v) return {};
  if (Array.isArray(v)) {
    const out: Record<string, string> = {};
    for (const e of v) {
      const i = e.indexOf('=');
      out[i < 0 ? e : e.slice(0, i)] = i < 0 ? '' : e.slice(i + 1);
    }
    return out;
  }
  return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, x === null ? '' : String(x)]));
}

/** Nanoseconds of a Compose duration ("1m30s", "500ms"). */
export function durationNs(d: string | undefined): number | undefined {
  if (!d) return undefined;
  const unit: Record<string, number> = { ns: 1, us: 1e3, µs: 1e3, ms: 1e6, s: 1e9, m: 60e9, h: 3600e9 };
  let total = 0;
  for (const m of d.matchAll(/(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/g)) total += Number(m[1]) * unit[m[2]!]!;
  return Math.round(total);
}

/** Bytes of a Compose size (binary units: go-units RAMInBytes, as Compose reads them). */
export function sizeBytes(v: string | number | undefined): number | undefined {
  if (v === undefined) return undefined;
  return typeof v === 'number' ? v : parseRamSize(v.trim());
}

/** A command as a list: a string runs under /bin/sh -c. */
export const asList = (v: string | string[] | undefined): string[] | undefined => (v === undefined ? undefined : Array.isArray(v) ? v : ['/bin/sh', '-c', v]);

/** Ports in short ("[ip:][host:]container[/proto]") or long syntax, as PortBindings and ExposedPorts. */
function ports(svc: ComposeService): { exposed: Json; bindings: Record<string, Array<{ HostIp: string; HostPort: string }>> } {
  const exposed: Json = {};
  const bindings: Record<string, Array<{ HostIp: string; HostPort: string }>> = {};
  const bind = (target: number, proto: string, hostIp: string, hostPort: string) => {
    const key = `${target}/${proto}`;
    exposed[key] = {};
    (bindings[key] ??= []).push({ HostIp: hostIp, HostPort: hostPort });
  };
  for (const p of svc.ports ?? []) {
    if (typeof p === 'object') {
      bind(p.target, p.protocol ?? 'tcp', p.host_ip ?? '', p.published === undefined ? '' : String(p.published));
      continue;
    }
    const [spec, proto = 'tcp'] = String(p).split('/');
    const parts = spec!.split(':');
    const target = Number(parts.pop());
    const hostPort = parts.pop() ?? '';
    const hostIp = parts.join(':');
    bind(target, proto, hostIp, hostPort);
  }
  for (const e of svc.expose ?? []) {
    const [port, proto = 'tcp'] = String(e).split('/');
    exposed[`${port}/${proto}`] = {};
  }
  return { exposed, bindings };
}

function mounts(project: string, svc: ComposeService, app: ComposeApp): Json[] {
  const out: Json[] = [];
  for (const v of svc.volumes ?? []) {
    if (typeof v === 'object') {
      const source = v.type === 'volume' && v.source && app.volumes && v.source in app.volumes ? `${project}_${v.source}` : v.source;
      out.push({
        Type: v.type,
        ...(source ? { Source: source } : {}),
        Target: v.target,
        ReadOnly: !!v.read_only,
        ...(v.type === 'tmpfs' && v.tmpfs?.size !== undefined ? { TmpfsOptions: { SizeBytes: sizeBytes(v.tmpfs.size) } } : {}),
        ...(v.type === 'volume' && v.volume?.nocopy ? { VolumeOptions: { NoCopy: true } } : {}),
      });
      continue;
    }
    const [src, target, mode = ''] = v.split(':');
    if (target === undefined) {
      out.push({ Type: 'volume', Target: src, ReadOnly: false });
      continue;
    }
    const isBind = src!.startsWith('/') || src!.startsWith('.');
    const source = isBind ? src : `${project}_${src}`;
    out.push({ Type: isBind ? 'bind' : 'volume', Source: source, Target: target, ReadOnly: mode.split(',').includes('ro') });
  }
  return out;
}

/** Networks the service joins (its aliases: the service name and any declared), by their key in the document. */
export function serviceNetworks(svc: ComposeService): Array<{ key: string; aliases: string[] }> {
  if (!svc.networks) return [{ key: 'default', aliases: [] }];
  if (Array.isArray(svc.networks)) return svc.networks.map((key) => ({ key, aliases: [] }));
  return Object.entries(svc.networks).map(([key, v]) => ({ key, aliases: v?.aliases ?? [] }));
}

function restartPolicy(r: string | undefined): Json {
  if (!r || r === 'no') return { Name: 'no' };
  const [name, count] = r.split(':');
  return { Name: name, ...(count ? { MaximumRetryCount: Number(count) } : {}) };
}

/** Our hash of what a service's containers are made from (documented in docs/api-extensions.md). */
function hashOf(value: unknown): string {
  return createHash('sha256').update(canonicalJson(value)).digest('hex');
}

/** The files a service's configs and secrets are mounted from, written by the reconciler before its containers. */
export interface ProjectFile {
  kind: 'configs' | 'secrets';
  name: string;
  content: string;
}

export function projectFiles(app: ComposeApp): ProjectFile[] {
  return [
    ...Object.entries(app.configs ?? {}).map(([name, c]) => ({ kind: 'configs' as const, name, content: c.content })),
    ...Object.entries(app.secrets ?? {}).map(([name, c]) => ({ kind: 'secrets' as const, name, content: c.content })),
  ];
}

/** Read-only binds of a service's configs (at /NAME) and secrets (at /run/secrets/NAME) from `filesDir`. */
function fileMounts(svc: ComposeService, filesDir: string): Json[] {
  const out: Json[] = [];
  for (const [kind, refs] of [['configs', svc.configs], ['secrets', svc.secrets]] as const) {
    for (const ref of refs ?? []) {
      const source = typeof ref === 'string' ? ref : ref.source;
      const target = typeof ref === 'string' || !ref.target ? (kind === 'configs' ? `/${source}` : `/run/secrets/${source}`) : ref.target.startsWith('/') ? ref.target : kind === 'secrets' ? `/run/secrets/${ref.target}` : `/${ref.target}`;
      out.push({ Type: 'bind', Source: `${filesDir}/${kind}/${source}`, Target: target, ReadOnly: true });
    }
  }
  return out;
}

/** What a document refers to that it does not declare (a network, volume, config or secret), as a 400's words. */
export function undeclaredReference(app: ComposeApp): string | undefined {
  for (const [name, def] of Object.entries(app.services)) {
    if (!def) continue;
    for (const n of serviceNetworks(def)) {
      if (n.key !== 'default' && !(app.networks && n.key in app.networks)) return `services.${name}.networks: service "${name}" refers to undefined network ${n.key}`;
    }
    for (const v of def.volumes ?? []) {
      const [src, target] = typeof v === 'string' ? v.split(':') : [v.type === 'volume' ? v.source : undefined, v.target];
      const named = typeof v === 'string' ? target !== undefined && !src!.startsWith('/') && !src!.startsWith('.') : !!src;
      if (named && !(app.volumes && src! in app.volumes)) return `services.${name}.volumes: service "${name}" refers to undefined volume ${src}`;
    }
    for (const [kind, refs] of [['configs', def.configs], ['secrets', def.secrets]] as const) {
      for (const ref of refs ?? []) {
        const source = typeof ref === 'string' ? ref : ref.source;
        if (!app[kind]?.[source]) return `services.${name}.${kind}: service "${name}" refers to undefined ${kind === 'configs' ? 'config' : 'secret'} ${source}`;
      }
    }
  }
  return undefined;
}

export function planProject(project: string, app: ComposeApp, filesDir: string): ProjectPlan {
  const netName = (key: string) => `${project}_${key}`;
  const usedNetworks = new Set<string>();
  const services: ServicePlan[] = [];
  for (const [name, def] of Object.entries(app.services)) {
    const svc: ComposeService = def ?? { image: '' };
    const nets = serviceNetworks(svc);
    for (const n of nets) usedNetworks.add(n.key);
    const { exposed, bindings } = ports(svc);
    const files = [...(svc.configs ?? []), ...(svc.secrets ?? [])].map((f) => (typeof f === 'string' ? f : f.source));
    const contents = Object.fromEntries(files.map((f) => [f, app.configs?.[f]?.content ?? app.secrets?.[f]?.content ?? null]));
    // What containers are made of: not the replica count, nor how changes roll or what the service waits for.
    const { deploy: { replicas: _r, update_config: _u, ...deployRest } = {}, depends_on: _d, ...made } = svc;
    const configHash = hashOf({ svc: { ...made, ...(Object.keys(deployRest).length ? { deploy: deployRest } : {}) }, contents, networks: nets });
    const uc = svc.deploy?.update_config;
    const replicas = svc.deploy?.replicas ?? 1;
    const limits = svc.deploy?.resources?.limits;
    const labels = toMap(svc.labels);
    const oneShot = svc.restart === 'no';
    const plan: ServicePlan = {
      name,
      replicas,
      slots: Array.from({ length: replicas }, (_, i) => i + 1),
      hashFor: () => configHash,
      update: {
        parallelism: uc ? (uc.parallelism ?? 1) : 0,
        delayMs: Math.round((durationNs(uc?.delay) ?? 0) / 1e6),
        order: uc?.order ?? 'stop-first',
        failureAction: uc?.failure_action ?? 'pause',
        monitorMs: Math.round((durationNs(uc?.monitor) ?? 0) / 1e6),
      },
      healthIntervalMs: Math.round((durationNs(svc.healthcheck?.interval) ?? 30e9) / 1e6),
      oneShot,
      hasHealthcheck: !!svc.healthcheck && !svc.healthcheck.disable,
      configHash,
      containerName: (n) => `${project}-${name}-${n}`,
      body: (n) => {
        const [first, ...rest] = nets;
        return {
          Image: svc.image,
          ...(svc.command !== undefined ? { Cmd: asList(svc.command) } : {}),
          ...(svc.entrypoint !== undefined ? { Entrypoint: typeof svc.entrypoint === 'string' ? ['/bin/sh', '-c', svc.entrypoint] : svc.entrypoint } : {}),
          Env: Object.entries(toMap(svc.environment)).map(([k, v]) => `${k}=${v}`),
          ...(svc.working_dir ? { WorkingDir: svc.working_dir } : {}),
          ...(svc.user ? { User: svc.user } : {}),
          ExposedPorts: exposed,
          ...(svc.stop_signal ? { StopSignal: svc.stop_signal } : {}),
          ...(svc.stop_grace_period ? { StopTimeout: Math.round((durationNs(svc.stop_grace_period) ?? 0) / 1e9) } : {}),
          ...(svc.healthcheck
            ? {
                Healthcheck: svc.healthcheck.disable
                  ? { Test: ['NONE'] }
                  : {
                      Test: typeof svc.healthcheck.test === 'string' ? ['CMD-SHELL', svc.healthcheck.test] : svc.healthcheck.test,
                      Interval: durationNs(svc.healthcheck.interval),
                      Timeout: durationNs(svc.healthcheck.timeout),
                      Retries: svc.healthcheck.retries,
                      StartPeriod: durationNs(svc.healthcheck.start_period),
                    },
              }
            : {}),
          Labels: {
            ...labels,
            [LABEL.project]: project,
            [LABEL.service]: name,
            [LABEL.number]: String(n),
            [LABEL.configHash]: configHash,
            [LABEL.oneoff]: 'False',
            [LABEL.owner]: project,
          },
          HostConfig: {
            NetworkMode: netName(first!.key),
            PortBindings: bindings,
            Mounts: [...mounts(project, svc, app), ...fileMounts(svc, filesDir)],
            ...(svc.tmpfs ? { Tmpfs: Object.fromEntries((Array.isArray(svc.tmpfs) ? svc.tmpfs : [svc.tmpfs]).map((t) => [t, ''])) } : {}),
            RestartPolicy: restartPolicy(svc.restart),
            ...(svc.init !== undefined ? { Init: svc.init } : {}),
            ...(limits?.cpus !== undefined ? { NanoCpus: Math.round(Number(limits.cpus) * 1e9) } : {}),
            ...(limits?.memory !== undefined ? { Memory: sizeBytes(limits.memory) } : {}),
          },
          NetworkingConfig: {
            EndpointsConfig: Object.fromEntries([first!, ...rest].map((x) => [netName(x.key), { Aliases: [name, ...x.aliases] }])),
          },
        };
      },
    };
    services.push(plan);
  }
  const networks = [...usedNetworks].map((key) => {
    const def = app.networks?.[key] ?? null;
    return {
      key,
      name: netName(key),
      body: {
        Name: netName(key),
        Driver: 'bridge',
        Internal: !!def?.internal,
        Labels: { ...toMap(def?.labels), [LABEL.project]: project, [LABEL.network]: key, [LABEL.owner]: project },
        ...(def?.ipam?.config ? { IPAM: { Config: def.ipam.config.map((c) => ({ ...(c.subnet ? { Subnet: c.subnet } : {}), ...(c.gateway ? { Gateway: c.gateway } : {}) })) } } : {}),
      },
    };
  });
  const volumes = Object.entries(app.volumes ?? {}).map(([key, def]) => ({
    key,
    name: `${project}_${key}`,
    body: { Name: `${project}_${key}`, Driver: 'local', DriverOpts: def?.driver_opts ?? {}, Labels: { ...toMap(def?.labels), [LABEL.project]: project, [LABEL.volume]: key, [LABEL.owner]: project } },
  }));
  return { networks, volumes, services };
}

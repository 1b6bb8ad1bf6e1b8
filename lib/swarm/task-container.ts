// The container a task runs, as the reference's executor makes it (moby's daemon/cluster/executor/
// container/container.go): the ContainerSpec's image, Command as the entrypoint and Args as the
// command, env (with DOCKER_RESOURCE_<KIND> for the generic resources it was given), the labels it
// names and the reference's com.docker.swarm.* ones, dir, user, hostname, tty, mounts, hosts, DNS,
// healthcheck, read-only root, stop signal and grace, init, capabilities, sysctls, ulimits, groups,
// privileges (security options);
// the resource limits; the service's log driver; ports published in host mode; no restart policy
// (the orchestrator replaces a task that ended). A create body as POST /containers/create takes it.
import { resourceEnv, type Claim } from '../cluster/placement.ts';
import { taskLabels, type NodeTask } from './task.ts';

type Obj = Record<string, unknown>;
const obj = (v: unknown): Obj => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Obj) : {});
const strs = (v: unknown): string[] | undefined => (Array.isArray(v) ? v.map(String) : undefined);

/** "IP host1 host2" (the service's Hosts) as ExtraHosts' "host:IP" entries. */
function extraHosts(hosts: string[] | undefined): string[] | undefined {
  if (!hosts) return undefined;
  return hosts.flatMap((h) => {
    const [ip, ...names] = h.trim().split(/\s+/);
    return ip ? names.map((n) => `${n}:${ip}`) : [];
  });
}

/**
 * ContainerSpec.Privileges as security options (moby's executor, applyPrivileges): the SELinux
 * context, the seccomp and AppArmor modes, no-new-privileges. (CredentialSpec is Windows'.)
 */
function securityOpts(p: Obj): string[] | undefined {
  const out: string[] = [];
  const se = obj(p['SELinuxContext']);
  if (se['Disable']) out.push('label=disable');
  for (const [k, opt] of [['User', 'user'], ['Role', 'role'], ['Type', 'type'], ['Level', 'level']] as const) if (se[k]) out.push(`label=${opt}:${String(se[k])}`);
  const sc = obj(p['Seccomp']);
  if (sc['Mode'] === 'unconfined') out.push('seccomp=unconfined');
  else if (sc['Mode'] === 'custom' && typeof sc['Profile'] === 'string') out.push(`seccomp=${Buffer.from(sc['Profile'], 'base64').toString('utf8')}`);
  if (obj(p['AppArmor'])['Mode'] === 'disabled') out.push('apparmor=unconfined');
  if (p['NoNewPrivileges']) out.push('no-new-privileges=true');
  return out.length ? out : undefined;
}

/** The overlay networks a task's container joins: the first as its NetworkMode, each with the address taken for it. */
export interface TaskNetworkConfig {
  mode: string;
  endpoints: Record<string, { IPAMConfig: { IPv4Address: string }; Aliases?: string[] }>;
}

/**
 * The CDI devices a task's discrete generic resources name on this node: a unit `kind=unit` is
 * the device of class `kind` named `unit` (e.g. `--node-generic-resource gpu=GPU-aaa` and the
 * device `example.com/gpu=GPU-aaa`); units no CDI device names only get their environment.
 */
export function claimDevices(claims: readonly Claim[], devices: readonly string[]): string[] {
  const out: string[] = [];
  for (const c of claims) {
    if (!('unit' in c)) continue;
    const found = devices.find((d) => d.endsWith(`/${c.kind}=${c.unit}`));
    if (found) out.push(found);
  }
  return out;
}

export function containerBodyOf(t: NodeTask, nets?: TaskNetworkConfig, binds: readonly Obj[] = [], cdiDevices: readonly string[] = []): Obj {
  const devices = claimDevices(t.Claims ?? [], cdiDevices);
  const cs = obj(t.Spec['ContainerSpec']);
  const limits = obj(obj(t.Spec['Resources'])['Limits']);
  const dns = obj(cs['DNSConfig']);
  const log = obj(t.Spec['LogDriver']);
  const generic = Object.entries(resourceEnv(t.Claims ?? [])).map(([k, v]) => `${k}=${v}`);
  const env = [...(strs(cs['Env']) ?? []), ...generic];
  const ports = t.HostPorts ?? [];
  const grace = cs['StopGracePeriod'];
  const hostConfig: Obj = {
    ...(nets?.mode ? { NetworkMode: nets.mode } : {}),
    RestartPolicy: { Name: '', MaximumRetryCount: 0 },
    // The service's mounts, and the binds of its secrets and configs (their files on this node).
    ...(cs['Mounts'] || binds.length ? { Mounts: [...((cs['Mounts'] as Obj[] | undefined) ?? []), ...binds] } : {}),
    ...(cs['ReadOnly'] ? { ReadonlyRootfs: true } : {}),
    ...(extraHosts(strs(cs['Hosts'])) ? { ExtraHosts: extraHosts(strs(cs['Hosts'])) } : {}),
    ...(dns['Nameservers'] ? { Dns: dns['Nameservers'] } : {}),
    ...(dns['Search'] ? { DnsSearch: dns['Search'] } : {}),
    ...(dns['Options'] ? { DnsOptions: dns['Options'] } : {}),
    ...(cs['Init'] !== undefined && cs['Init'] !== null ? { Init: cs['Init'] } : {}),
    ...(cs['CapabilityAdd'] ? { CapAdd: cs['CapabilityAdd'] } : {}),
    ...(cs['CapabilityDrop'] ? { CapDrop: cs['CapabilityDrop'] } : {}),
    ...(cs['Sysctls'] ? { Sysctls: cs['Sysctls'] } : {}),
    ...(cs['Ulimits'] ? { Ulimits: cs['Ulimits'] } : {}),
    ...(cs['Groups'] ? { GroupAdd: cs['Groups'] } : {}),
    ...(securityOpts(obj(cs['Privileges'])) ? { SecurityOpt: securityOpts(obj(cs['Privileges'])) } : {}),
    ...(limits['NanoCPUs'] ? { NanoCpus: limits['NanoCPUs'] } : {}),
    ...(limits['MemoryBytes'] ? { Memory: limits['MemoryBytes'] } : {}),
    ...(limits['Pids'] ? { PidsLimit: limits['Pids'] } : {}),
    ...(log['Name'] ? { LogConfig: { Type: log['Name'], Config: log['Options'] ?? {} } } : {}),
    ...(ports.length ? { PortBindings: Object.fromEntries(ports.map((p) => [`${p.TargetPort}/${p.Protocol}`, [{ HostIp: '', HostPort: String(p.PublishedPort ?? '') }]])) } : {}),
    // The devices its generic resources name: the task gets the unit it was placed on, not only its name.
    ...(devices.length ? { DeviceRequests: [{ Driver: 'cdi', DeviceIDs: devices }] } : {}),
  };
  return {
    Image: cs['Image'],
    ...(strs(cs['Command']) ? { Entrypoint: strs(cs['Command']) } : {}),
    ...(strs(cs['Args']) ? { Cmd: strs(cs['Args']) } : {}),
    ...(env.length ? { Env: env } : {}),
    Labels: { ...(obj(cs['Labels']) as Record<string, string>), ...taskLabels(t) },
    ...(cs['Dir'] ? { WorkingDir: cs['Dir'] } : {}),
    ...(cs['User'] ? { User: cs['User'] } : {}),
    ...(cs['Hostname'] ? { Hostname: cs['Hostname'] } : {}),
    ...(cs['TTY'] ? { Tty: true } : {}),
    ...(cs['OpenStdin'] ? { OpenStdin: true } : {}),
    ...(cs['StopSignal'] ? { StopSignal: cs['StopSignal'] } : {}),
    ...(typeof grace === 'number' ? { StopTimeout: Math.round(grace / 1e9) } : {}),
    ...(cs['Healthcheck'] ? { Healthcheck: cs['Healthcheck'] } : {}),
    ...(ports.length ? { ExposedPorts: Object.fromEntries(ports.map((p) => [`${p.TargetPort}/${p.Protocol}`, {}])) } : {}),
    HostConfig: hostConfig,
    ...(nets?.mode ? { NetworkingConfig: { EndpointsConfig: nets.endpoints } } : {}),
  };
}

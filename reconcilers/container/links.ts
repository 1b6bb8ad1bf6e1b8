// What legacy links do when a container on the default bridge starts: every linked container
// must be running; its address goes into /etc/hosts under the alias, its hostname and its name;
// the ALIAS_NAME, ALIAS_PORT_* and ALIAS_ENV_* variables describe it (the container's own Env
// wins over them); and with --icc=false the two may talk on the linked container's exposed ports.
import { copyFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { internal } from '../../lib/errors.ts';
import { type ContainerSpec, containerByName, isRunning, Containers, type ContainerResource as CR } from '../../store/kinds/container.ts';
import type { ReconcilerStore } from '../store-like.ts';


export interface LinkedContainer {
  /** "/parent/alias" */
  linkName: string;
  alias: string;
  /** "/child" */
  childName: string;
  hostname: string;
  ip: string;
  env: string[];
  ports: Array<{ port: number; proto: string }>;
}

/** The stored "/child:/parent/alias" (or a plain "name:alias"). */
function parse(l: string): { name: string; alias: string } {
  const [a, b] = l.split(':');
  if (b === undefined) return { name: a!.replace(/^\//, ''), alias: a!.replace(/^\//, '') };
  return { name: a!.replace(/^\//, ''), alias: b.split('/').pop()! };
}

/** The containers `spec` links to; throws the reference's error for one that is not running. Default bridge only. */
export function linkedContainers(store: Pick<ReconcilerStore, 'get' | 'byIndex'>, spec: ContainerSpec): LinkedContainer[] {
  const mode = spec.hostConfig.NetworkMode || 'default';
  if (mode !== 'bridge' && mode !== 'default') return [];
  const links = (spec.hostConfig.Links ?? []).filter((l) => typeof l === 'string');
  if (links.length === 0) return [];
  const out: LinkedContainer[] = [];
  for (const l of links) {
    const { name, alias } = parse(l);
    const linkName = `${spec.name}/${alias}`;
    const child: CR | undefined = containerByName(store, name) ?? store.get(Containers, name);
    if (!child || !isRunning(child.status)) throw internal(`Cannot link to a non running container: /${name} AS ${linkName}`);
    const ip = child.status.endpoint?.IPAddress ?? '';
    const ports = Object.keys(child.spec.config.ExposedPorts ?? {}).map((k) => {
      const [p, proto = 'tcp'] = k.split('/');
      return { port: Number(p), proto };
    });
    out.push({ linkName, alias, childName: child.spec.name, hostname: child.spec.config.Hostname, ip, env: child.spec.config.Env ?? [], ports });
  }
  return out;
}

/** The variables of one link, as the reference writes them (ports sorted TCP first, ranges summarised). */
export function linkEnv(l: LinkedContainer): string[] {
  const alias = l.alias.toUpperCase().replaceAll('-', '_');
  const ports = [...l.ports].sort((a, b) => (a.proto === b.proto ? a.port - b.port : a.proto === 'tcp' ? -1 : b.proto === 'tcp' ? 1 : a.proto < b.proto ? -1 : 1));
  const env: string[] = [];
  let start = ports[0];
  let end = ports[0];
  ports.forEach((p, i) => {
    if (i === 0) env.push(`${alias}_PORT=${p.proto}://${l.ip}:${p.port}`);
    const prefix = `${alias}_PORT_${p.port}_${p.proto.toUpperCase()}`;
    env.push(`${prefix}=${p.proto}://${l.ip}:${p.port}`, `${prefix}_ADDR=${l.ip}`, `${prefix}_PORT=${p.port}`, `${prefix}_PROTO=${p.proto}`);
    if (i > 0 && p.port === end!.port + 1 && p.proto === end!.proto) {
      end = p;
      if (i < ports.length - 1) return;
    }
    if (end !== start) {
      const pre = `${alias}_PORT_${start!.port}_${start!.proto.toUpperCase()}`;
      env.push(`${pre}_START=${start!.proto}://${l.ip}:${start!.port}`, `${pre}_PORT_START=${start!.port}`, `${pre}_END=${end!.proto}://${l.ip}:${end!.port}`, `${pre}_PORT_END=${end!.port}`);
    }
    start = p;
    end = p;
  });
  env.push(`${alias}_NAME=${l.linkName}`);
  for (const v of l.env) {
    const i = v.indexOf('=');
    if (i < 0) continue;
    const k = v.slice(0, i);
    if (k === 'HOME' || k === 'PATH') continue;
    env.push(`${alias}_ENV_${k}=${v.slice(i + 1)}`);
  }
  return env;
}

/** The hosts line of a link: the alias, the linked container's hostname, and its name unless that is the alias. */
export function linkHostsLine(l: LinkedContainer): string {
  const name = l.childName.replace(/^\//, '');
  return `${l.ip}\t${l.alias} ${l.hostname}${l.alias !== name ? ` ${name}` : ''}`;
}

/**
 * /etc/hosts with the links' lines: the file as prepared at create is kept beside it the first
 * time, so each start writes the current links (a removed link leaves no line behind).
 */
export function writeLinkHosts(hostsPath: string, links: LinkedContainer[]): void {
  if (!hostsPath) return;
  const base = `${hostsPath}.nolinks`;
  if (links.length === 0 && !existsSync(base)) return;
  if (!existsSync(base)) copyFileSync(hostsPath, base);
  const text = readFileSync(base, 'utf8');
  writeFileSync(hostsPath, text + links.map((l) => `${linkHostsLine(l)}\n`).join(''));
}

/** The container's own line in /etc/hosts (and in its copy without links) moved to its new address. */
export function renameHostsEntry(hostsPath: string, oldIp: string, newIp: string): void {
  for (const path of [hostsPath, `${hostsPath}.nolinks`]) {
    if (!path || !existsSync(path)) continue;
    const lines = readFileSync(path, 'utf8').split('\n');
    writeFileSync(path, lines.map((l) => (l.startsWith(`${oldIp}\t`) ? newIp + l.slice(oldIp.length) : l)).join('\n'));
  }
}

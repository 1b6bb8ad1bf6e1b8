// The per-container /etc/hostname, /etc/hosts and /etc/resolv.conf, written into the
// container's directory and bind-mounted by the spec. Small files read and written with direct
// syscalls: each fs.promises call would cost a threadpool round trip (several for a writeFile),
// more CPU than the write itself, on every container create.
import { invalidArgument } from '../../lib/errors.ts';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { EtcFiles, SpecContainerConfig, SpecHostConfig } from './types.ts';

export interface HostEtcPaths {
  hosts: string;
  resolvConf: string;
  /** Used when the host's resolv.conf points at systemd-resolved's stub (127.0.0.53). */
  systemdResolvConf: string;
}

export const DEFAULT_HOST_ETC: HostEtcPaths = {
  hosts: '/etc/hosts',
  resolvConf: '/etc/resolv.conf',
  systemdResolvConf: '/run/systemd/resolve/resolv.conf',
};

export const DEFAULT_HOSTS = [
  '127.0.0.1\tlocalhost',
  '::1\tlocalhost ip6-localhost ip6-loopback',
  'fe00::0\tip6-localnet',
  'ff00::0\tip6-mcastprefix',
  'ff02::1\tip6-allnodes',
  'ff02::2\tip6-allrouters',
].join('\n') + '\n';

const DEFAULT_NAMESERVERS = ['8.8.8.8', '8.8.4.4'];

const readOr = (p: string, fallback: string) => {
  try {
    return readFileSync(p, 'utf8');
  } catch {
    return fallback;
  }
};

/** "name:ip" (or "name=ip"); the IP may itself contain colons (IPv6). */
function extraHostLines(extra: readonly string[] | null, hostGatewayIp: string | undefined): string {
  let out = '';
  for (const e of extra ?? []) {
    const m = /^([^:=]+)[:=](.+)$/.exec(e);
    if (!m) continue;
    let ip = m[2]!.replace(/^\[(.*)\]$/, '$1');
    if (ip === 'host-gateway') {
      if (!hostGatewayIp) throw invalidArgument('unable to derive the IP value for host-gateway');
      ip = hostGatewayIp;
    }
    out += `${ip}\t${m[1]}\n`;
  }
  return out;
}

interface Resolv {
  nameservers: string[];
  search: string[];
  options: string[];
}

function parseResolv(text: string): Resolv {
  const r: Resolv = { nameservers: [], search: [], options: [] };
  for (const line of text.split('\n')) {
    const f = line.trim().split(/\s+/);
    if (f[0] === 'nameserver' && f[1]) r.nameservers.push(f[1]);
    else if ((f[0] === 'search' || f[0] === 'domain') && f.length > 1) r.search = f.slice(1);
    else if (f[0] === 'options' && f.length > 1) r.options.push(...f.slice(1));
  }
  return r;
}

const isLocalhostNs = (ns: string) => /^127\./.test(ns) || ns === '::1' || ns === '0:0:0:0:0:0:0:1';
const isIPv6 = (ns: string) => ns.includes(':');

/** The host's resolv.conf with localhost (and, without IPv6 networking, IPv6) nameservers removed. */
export function filterResolvConf(text: string): string {
  const kept: string[] = [];
  let nameservers = 0;
  for (const line of text.split('\n')) {
    const f = line.trim().split(/\s+/);
    if (f[0] === 'nameserver' && f[1]) {
      if (isLocalhostNs(f[1]) || isIPv6(f[1])) continue;
      nameservers++;
    }
    kept.push(line);
  }
  let out = kept.join('\n');
  if (nameservers === 0) {
    if (out !== '' && !out.endsWith('\n')) out += '\n';
    out += DEFAULT_NAMESERVERS.map((n) => `nameserver ${n}\n`).join('');
  }
  return out;
}

export function buildResolvConf(dns: readonly string[], search: readonly string[], options: readonly string[]): string {
  let out = '';
  if (search.length > 0 && search.join(' ').trim() !== '.') out += `search ${search.join(' ')}\n`;
  for (const ns of dns) out += `nameserver ${ns}\n`;
  if (options.length > 0 && options.join(' ').trim() !== '') out += `options ${options.join(' ')}\n`;
  return out;
}

function hostResolvConf(paths: HostEtcPaths): string {
  const text = readOr(paths.resolvConf, '');
  const ns = parseResolv(text).nameservers;
  if (ns.length > 0 && ns.every((n) => n === '127.0.0.53')) {
    const systemd = readOr(paths.systemdResolvConf, '');
    if (systemd) return systemd;
  }
  return text;
}

/** What the daemon's options add to every container's /etc files. */
export interface EtcDefaults {
  dns?: { servers: string[]; search: string[]; options: string[] };
  hostGatewayIp?: string;
}

export async function writeEtcFiles(
  dir: string,
  config: SpecContainerConfig,
  hostConfig: SpecHostConfig,
  paths: HostEtcPaths = DEFAULT_HOST_ETC,
  opts: EtcDefaults & { nameserver?: string } = {},
): Promise<EtcFiles> {
  const files: EtcFiles = { hostname: join(dir, 'hostname'), hosts: join(dir, 'hosts'), resolvConf: join(dir, 'resolv.conf') };
  const hostNet = hostConfig.NetworkMode === 'host';

  const hosts = hostNet ? readOr(paths.hosts, DEFAULT_HOSTS) : DEFAULT_HOSTS;
  const hostsText = hosts + (hosts === '' || hosts.endsWith('\n') ? '' : '\n') + extraHostLines(hostConfig.ExtraHosts, opts.hostGatewayIp);

  const raw = hostResolvConf(paths);
  let resolv: string;
  // On a user-defined network the embedded DNS answers (and forwards what it does not know).
  // The container's own settings, else the daemon's --dns, --dns-search, --dns-opt.
  const pick = (own: string[] | null | undefined, daemon: string[] | undefined) => (own?.length ? own : (daemon ?? []));
  const dns = opts.nameserver ? [opts.nameserver] : pick(hostConfig.Dns, opts.dns?.servers);
  const search = pick(hostConfig.DnsSearch, opts.dns?.search);
  const options = pick(hostConfig.DnsOptions, opts.dns?.options);
  if (dns.length || search.length || options.length) {
    const base = parseResolv(hostNet ? raw : filterResolvConf(raw));
    let opts2 = options.length ? options : base.options;
    // As the reference's embedded DNS: unqualified names are asked as they are (ndots:0) unless an ndots is set.
    if (opts.nameserver && !opts2.some((o) => o.startsWith('ndots'))) opts2 = [...opts2, 'ndots:0'];
    resolv = buildResolvConf(dns.length ? dns : base.nameservers, search.length ? search : base.search, opts2);
  } else {
    resolv = hostNet ? raw : filterResolvConf(raw);
  }

  writeFileSync(files.hostname, `${config.Hostname}\n`, { mode: 0o644 });
  writeFileSync(files.hosts, hostsText, { mode: 0o644 });
  writeFileSync(files.resolvConf, resolv, { mode: 0o644 });
  return files;
}

// Per-registry rules: which registries are insecure, where their certificates live, which ones
// receive non-distributable layers, and which requests go through a proxy.
import { lookup } from 'node:dns/promises';
import { readdir, readFile } from 'node:fs/promises';
import { BlockList, isIP } from 'node:net';
import { join } from 'node:path';
import { rootCertificates } from 'node:tls';

/** `host:port` lists and CIDRs, matched against the registry's name or its resolved addresses. */
export interface HostMatcher {
  matches(hostPort: string): Promise<boolean>;
}

function stripScheme(s: string): string {
  return s.replace(/^[a-z]+:\/\//i, '').replace(/\/+$/, '');
}

/** Split `host[:port]` (IPv6 in brackets) into its host part. */
export function hostOf(hostPort: string): string {
  if (hostPort.startsWith('[')) return hostPort.slice(1, hostPort.indexOf(']'));
  const i = hostPort.lastIndexOf(':');
  return i >= 0 && hostPort.indexOf(':') === i ? hostPort.slice(0, i) : hostPort;
}

function familyOf(ip: string): 'ipv4' | 'ipv6' {
  return isIP(ip) === 6 ? 'ipv6' : 'ipv4';
}

/** Addresses a host name stands for (an IP literal stands for itself). Unresolvable: none. */
async function addressesOf(host: string): Promise<string[]> {
  if (isIP(host)) return [host];
  try {
    return (await lookup(host, { all: true })).map((a) => a.address);
  } catch {
    return [];
  }
}

export function createHostMatcher(entries: string[], alwaysCidrs: string[] = []): HostMatcher {
  const names = new Set<string>();
  const cidrs = new BlockList();
  let anyCidr = false;
  for (const raw of [...entries, ...alwaysCidrs]) {
    const e = stripScheme(raw.trim());
    const slash = e.indexOf('/');
    if (slash > 0 && isIP(e.slice(0, slash))) {
      const ip = e.slice(0, slash);
      cidrs.addSubnet(ip, Number(e.slice(slash + 1)), familyOf(ip));
      anyCidr = true;
    } else if (e) {
      names.add(e.toLowerCase());
    }
  }
  return {
    async matches(hostPort: string): Promise<boolean> {
      const hp = hostPort.toLowerCase();
      if (names.has(hp)) return true;
      if (!anyCidr) return false;
      for (const addr of await addressesOf(hostOf(hp))) {
        if (cidrs.check(addr, familyOf(addr))) return true;
      }
      return false;
    },
  };
}

/** Registries reached over plain HTTP or TLS without verification: the configured ones plus loopback. */
export function createInsecureMatcher(insecure: string[]): HostMatcher {
  return createHostMatcher(insecure, ['127.0.0.0/8', '::1/128']);
}

export interface TlsFiles {
  ca?: string[];
  cert?: string;
  key?: string;
}

/**
 * TLS material from `<certsDir>/<host:port>/`: every `*.crt` is a CA added to the system roots;
 * a `*.cert` with a `*.key` of the same stem is the client certificate.
 */
export async function loadTlsFiles(certsDir: string, hostPort: string): Promise<TlsFiles> {
  const dir = join(certsDir, hostPort);
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return {};
  }
  const out: TlsFiles = {};
  const cas: string[] = [];
  for (const n of names.sort()) {
    if (n.endsWith('.crt')) cas.push(await readFile(join(dir, n), 'utf8'));
    if (n.endsWith('.cert') && !out.cert) {
      const key = `${n.slice(0, -5)}.key`;
      if (names.includes(key)) {
        out.cert = await readFile(join(dir, n), 'utf8');
        out.key = await readFile(join(dir, key), 'utf8');
      }
    }
  }
  if (cas.length) out.ca = [...rootCertificates, ...cas];
  return out;
}

export interface ProxySettings {
  http?: string;
  https?: string;
  noProxy?: string;
}

/** Daemon settings win; without any, the process environment (upper or lower case) applies. */
export function proxySettings(configured: ProxySettings | undefined, env: NodeJS.ProcessEnv = process.env): ProxySettings {
  if (configured) return configured;
  return {
    http: env.HTTP_PROXY ?? env.http_proxy,
    https: env.HTTPS_PROXY ?? env.https_proxy,
    noProxy: env.NO_PROXY ?? env.no_proxy,
  };
}

/** The proxy URL for a request, or undefined. Loopback destinations never go through a proxy. */
export function proxyFor(url: URL, settings: ProxySettings): URL | undefined {
  const proxy = url.protocol === 'https:' ? settings.https : settings.http;
  if (!proxy) return undefined;
  const host = url.hostname.replace(/^\[|\]$/g, '').toLowerCase();
  if (host === 'localhost' || host.endsWith('.localhost')) return undefined;
  if (isIP(host)) {
    const bl = new BlockList();
    bl.addSubnet('127.0.0.0', 8, 'ipv4');
    bl.addAddress('::1', 'ipv6');
    if (bl.check(host, familyOf(host))) return undefined;
  }
  const port = url.port || (url.protocol === 'https:' ? '443' : '80');
  for (const raw of (settings.noProxy ?? '').split(',')) {
    const e = raw.trim().toLowerCase();
    if (!e) continue;
    if (e === '*') return undefined;
    const slash = e.indexOf('/');
    if (slash > 0 && isIP(e.slice(0, slash)) && isIP(host)) {
      const bl = new BlockList();
      bl.addSubnet(e.slice(0, slash), Number(e.slice(slash + 1)), familyOf(e.slice(0, slash)));
      if (familyOf(host) === familyOf(e.slice(0, slash)) && bl.check(host, familyOf(host))) return undefined;
      continue;
    }
    let ehost = e;
    let eport = '';
    const m = /^(.*):(\d+)$/.exec(e);
    if (m && !e.includes('::')) {
      ehost = m[1]!;
      eport = m[2]!;
    }
    if (eport && eport !== port) continue;
    const bare = ehost.replace(/^\*?\./, '');
    if (host === bare || host.endsWith(`.${bare}`)) return undefined;
  }
  try {
    return new URL(proxy.includes('://') ? proxy : `http://${proxy}`);
  } catch {
    return undefined;
  }
}

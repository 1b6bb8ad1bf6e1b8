// The addresses of `swarm init` and `swarm join` as the reference resolves them (moby's
// daemon/cluster/listen_addr.go, in its words): ListenAddr normalised to host:port (port 2377 by
// default), its host an IP (0.0.0.0 allowed) or an interface name; AdvertiseAddr an IP that is not
// unspecified or an interface, its port the listen port unless it names one; otherwise the
// daemon's default advertise address, otherwise the system's one address. Interfaces are passed in
// (`os.networkInterfaces()` in the daemon), so the rules are tested on tables.
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import { joinHostPort } from '../host-port.ts';

export const DEFAULT_LISTEN_PORT = '2377';

export interface IfaceAddr {
  address: string;
  family: 'IPv4' | 'IPv6';
  internal: boolean;
}
export type Interfaces = Record<string, readonly IfaceAddr[] | undefined>;

/** A refusal in the reference's words (the API answers 400). */
export class SwarmAddressError extends Error {}

const err = (msg: string) => new SwarmAddressError(msg);
const BAD_LISTEN = 'listen address must be an IP address or network interface (with optional port number)';
const BAD_ADVERTISE = 'advertise address must be a non-zero IP address or network interface (with optional port number)';
const BAD_DATA_PATH = 'data path address must be a non-zero IP address or network interface (without a port number)';
const BAD_DEFAULT_ADVERTISE = 'default advertise address must be a non-zero IP address or network interface (without a port number)';
const NOT_AN_IDENTIFIER = Symbol('bad identifier');

/** host and port of "host:port", "[v6]:port", ":port" (Go's net.SplitHostPort); undefined when it is not one. */
export function splitHostPort(s: string): { host: string; port: string } | undefined {
  const m = /^\[([^\]]*)\]:([^:]*)$/.exec(s) ?? /^([^:[\]]*):([^:]*)$/.exec(s);
  return m ? { host: m[1]!, port: m[2]! } : undefined;
}

/** The reference's normalisation of a listen or remote address: host:port with 0.0.0.0 and 2377 for what is left out. */
export function normaliseAddr(addr: string): string {
  if (!addr) throw err('invalid empty address');
  let a = addr.startsWith('tcp://') ? addr.slice('tcp://'.length) : addr;
  if (a.includes('://') || a.includes('/')) return addr; // the reference keeps what it cannot parse, and refuses it later
  if (!a.includes(':') || (a.startsWith('[') && a.endsWith(']'))) a = `${a}:${DEFAULT_LISTEN_PORT}`;
  const hp = splitHostPort(a);
  if (!hp) return addr;
  const host = hp.host || '0.0.0.0';
  return joinHostPort(host, hp.port || DEFAULT_LISTEN_PORT);
}

function interfaceAddr(name: string, ifaces: Interfaces): string | undefined {
  const addrs = ifaces[name];
  if (!addrs) return undefined;
  let v4: string | undefined;
  let v6: string | undefined;
  for (const a of addrs) {
    if (a.family === 'IPv4') {
      if (v4) throw err(`interface ${name} has more than one IPv4 address (${v4} and ${a.address})`);
      v4 = a.address;
    } else {
      if (v6) throw err(`interface ${name} has more than one IPv6 address (${v6} and ${a.address})`);
      v6 = a.address;
    }
  }
  if (!v4 && !v6) throw err(`interface ${name} has no usable IPv4 or IPv6 address`);
  return v4 ?? v6;
}

const unspecified = (ip: string) => ipaddr.parse(ip).range() === 'unspecified';

/** An interface's address, or the input as an IP (unspecified only when allowed). */
function resolveInput(input: string, ifaces: Interfaces, unspecifiedOk: boolean): string | typeof NOT_AN_IDENTIFIER {
  const byName = interfaceAddr(input, ifaces);
  if (byName) return byName;
  if (isIP(input) && (unspecifiedOk || !unspecified(input))) return ipaddr.parse(input).toString();
  return NOT_AN_IDENTIFIER;
}

/** ListenAddr (normalised) as host IP and port. */
export function resolveListenAddr(listenAddr: string, ifaces: Interfaces): { host: string; port: string } {
  const hp = splitHostPort(listenAddr);
  if (!hp) throw err(`could not parse listen address ${listenAddr}`);
  const host = resolveInput(hp.host, ifaces, true);
  if (host === NOT_AN_IDENTIFIER) throw err(BAD_LISTEN);
  return { host, port: hp.port };
}

/** The system's one global unicast address outside `managed` subnets (loopback and internal interfaces skipped). */
export function systemAddr(ifaces: Interfaces, managed: readonly string[] = []): string {
  const nets = managed.map((c) => ipaddr.parseCIDR(c));
  const inManaged = (ip: string) => {
    const a = ipaddr.parse(ip);
    return nets.some(([n, bits]) => n.kind() === a.kind() && a.match(n, bits));
  };
  let chosen: { addr: string; iface: string } | undefined;
  const multiple = (a: { addr: string; iface: string }, b: { addr: string; iface: string }) =>
    a.iface === b.iface
      ? err(`could not choose an IP address to advertise since this system has multiple addresses on interface ${a.iface} (${a.addr} and ${b.addr})`)
      : err(`could not choose an IP address to advertise since this system has multiple addresses on different interfaces (${a.addr} on ${a.iface} and ${b.addr} on ${b.iface})`);
  for (const [iface, addrs] of Object.entries(ifaces)) {
    if (!addrs || addrs.some((a) => a.internal)) continue;
    let v4: string | undefined;
    let v6: string | undefined;
    let skip = false;
    for (const a of addrs) {
      const r = ipaddr.parse(a.address).range();
      if (!(r === 'unicast' || r === 'private' || r === 'uniqueLocal' || r === 'carrierGradeNat')) continue;
      if (inManaged(a.address)) {
        skip = true;
        break;
      }
      if (a.family === 'IPv4') {
        if (v4) throw multiple({ addr: v4, iface }, { addr: a.address, iface });
        v4 = a.address;
      } else {
        if (v6) throw multiple({ addr: v6, iface }, { addr: a.address, iface });
        v6 = a.address;
      }
    }
    const mine = skip ? undefined : (v4 ?? v6);
    if (!mine) continue;
    if (chosen) throw multiple(chosen, { addr: mine, iface });
    chosen = { addr: mine, iface };
  }
  if (!chosen) throw err("could not find the system's IP address");
  return chosen.addr;
}

/** AdvertiseAddr (or the daemon's default, or the system's) as host IP and port. */
export function resolveAdvertiseAddr(o: { advertiseAddr: string; listenPort: string; defaultAdvertiseAddr: string; ifaces: Interfaces; managed?: readonly string[] }): { host: string; port: string } {
  if (o.advertiseAddr) {
    const hp = splitHostPort(o.advertiseAddr) ?? { host: o.advertiseAddr, port: o.listenPort };
    const host = resolveInput(hp.host, o.ifaces, false);
    if (host === NOT_AN_IDENTIFIER) throw err(BAD_ADVERTISE);
    return { host, port: hp.port };
  }
  if (o.defaultAdvertiseAddr) {
    const host = resolveInput(o.defaultAdvertiseAddr, o.ifaces, false);
    if (host === NOT_AN_IDENTIFIER) throw err(BAD_DEFAULT_ADVERTISE);
    return { host, port: o.listenPort };
  }
  return { host: systemAddr(o.ifaces, o.managed), port: o.listenPort };
}

/** DataPathAddr: empty, or an IP that is not unspecified, or an interface. */
export function resolveDataPathAddr(dataPathAddr: string, ifaces: Interfaces): string {
  if (!dataPathAddr) return '';
  const host = resolveInput(dataPathAddr, ifaces, false);
  if (host === NOT_AN_IDENTIFIER) throw err(BAD_DATA_PATH);
  return host;
}

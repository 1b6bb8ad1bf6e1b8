// Published and exposed ports as a create asks for them: HostConfig.PortBindings and
// Config.ExposedPorts validated with the reference's messages, their keys normalised to "80/tcp".
// What the create routes and a stack's containers are admitted with (admission/containers/).
import { isIP } from 'node:net';
import { invalidArgument } from '../../lib/errors.ts';
export type Proto = 'tcp' | 'udp' | 'sctp';
export interface PortBindingJSON {
  HostIp: string;
  HostPort: string;
}
export type PortBindingMap = Record<string, PortBindingJSON[]>;
export interface PortSummary {
  IP?: string;
  PrivatePort: number;
  PublicPort?: number;
  Type: string;
}

const PROTOS = new Set<string>(['tcp', 'udp', 'sctp']);

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A decimal port number 0-65535 (the reference's parsePortNumber), or null. */
function portNumber(s: string): number | null {
  if (!/^[0-9]+$/.test(s)) return null;
  const n = Number(s);
  return n <= 65535 ? n : null;
}

/** "80", "80/tcp", "53/UDP" → { port, proto }; anything else is refused with the reference's texts. */
export function parsePortKey(key: string): { port: number; proto: Proto } {
  const slash = key.indexOf('/');
  const portStr = slash < 0 ? key : key.slice(0, slash);
  const protoStr = slash < 0 ? '' : key.slice(slash + 1);
  const port = portNumber(portStr);
  // The reference quotes the port part of the key: `invalid port specification: "x"`.
  if (port === null || port === 0) throw invalidArgument(`invalid port specification: ${JSON.stringify(portStr)}`);
  const proto = (protoStr || 'tcp').toLowerCase();
  if (!PROTOS.has(proto)) throw invalidArgument(`invalid proto: ${protoStr}`);
  return { port, proto: proto as Proto };
}

/** The canonical key "80/tcp". */
export function portKey(port: number, proto: string): string {
  return `${port}/${proto}`;
}

/** A HostPort: '' (ephemeral), a port "8080" or a range "8000-8010" (start <= end). */
function validHostPort(hp: string): boolean {
  if (hp === '') return true;
  const dash = hp.indexOf('-');
  if (dash < 0) return portNumber(hp) !== null;
  const start = portNumber(hp.slice(0, dash));
  const end = portNumber(hp.slice(dash + 1));
  return start !== null && end !== null && end >= start;
}

/** An address Go's net.ParseIP accepts: IPv4 or IPv6, no brackets, no zone. */
function validHostIp(ip: string): boolean {
  return ip === '' || (isIP(ip) !== 0 && !ip.includes('%'));
}

/**
 * Validates HostConfig.PortBindings as the reference does at create and returns it with keys
 * normalised ("80" → "80/tcp", "53/UDP" → "53/udp"); bindings of keys that normalise alike are
 * joined. null when absent.
 */
export function normalizePortBindings(raw: unknown): PortBindingMap | null {
  if (raw === null || raw === undefined) return null;
  if (!isObj(raw)) throw invalidArgument('invalid PortBindings: expected an object');
  const out: PortBindingMap = {};
  for (const [key, list] of Object.entries(raw)) {
    const { port, proto } = parsePortKey(key);
    const k = portKey(port, proto);
    const bindings = (out[k] ??= []);
    if (list === null || list === undefined) continue;
    if (!Array.isArray(list)) throw invalidArgument(`invalid PortBindings: expected an array of bindings for ${key}`);
    for (const b of list) {
      if (b !== null && !isObj(b)) throw invalidArgument(`invalid PortBindings: expected an array of bindings for ${key}`);
      const o: Obj = b ?? {};
      const hostIp = field(o, 'HostIp') ?? '';
      const hostPort = field(o, 'HostPort') ?? '';
      if (typeof hostIp !== 'string' || !validHostIp(hostIp)) throw invalidArgument(`invalid IP address: ${String(hostIp)}`);
      if (typeof hostPort !== 'string' || !validHostPort(hostPort)) throw invalidArgument(`invalid port specification: ${JSON.stringify(String(hostPort))}`);
      bindings.push({ HostIp: hostIp, HostPort: hostPort });
    }
  }
  return out;
}

/**
 * Validates Config.ExposedPorts like PortBindings' keys, normalises its keys, and adds every
 * PortBindings key (so `-p` alone exposes the port). null when nothing is exposed.
 */
export function normalizeExposedPorts(raw: unknown, bindings: Record<string, unknown> | null | undefined): Record<string, object> | null {
  if (raw !== null && raw !== undefined && !isObj(raw)) throw invalidArgument('invalid ExposedPorts: expected an object');
  const out: Record<string, object> = {};
  for (const key of Object.keys((raw as Obj | null | undefined) ?? {})) {
    const { port, proto } = parsePortKey(key);
    out[portKey(port, proto)] = {};
  }
  for (const key of Object.keys(bindings ?? {})) out[key] = {};
  return Object.keys(out).length ? out : null;
}

/** Joins the image's EXPOSE ports into the container's (image keys normalised when they parse). */
export function mergeExposedPorts(own: Record<string, object> | null, image: Record<string, object> | null | undefined): Record<string, object> | null {
  const out: Record<string, object> = { ...(own ?? {}) };
  for (const key of Object.keys(image ?? {})) {
    let k = key;
    try {
      const p = parsePortKey(key);
      k = portKey(p.port, p.proto);
    } catch {
      // An image written elsewhere with an odd key: keep it as it is.
    }
    out[k] = {};
  }
  return Object.keys(out).length ? out : null;
}

function field(o: Obj, name: string): unknown {
  if (name in o) return o[name];
  const lower = name.toLowerCase();
  for (const k of Object.keys(o)) if (k.toLowerCase() === lower) return o[k];
  return undefined;
}

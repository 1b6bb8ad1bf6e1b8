// The credentials a client sends for a registry: the X-Registry-Auth header (base64 JSON AuthConfig)
// and the AuthConfig objects inside it, as the reference reads them.
import type { RegistryAuth } from './ports/registry.ts';

/** X-Registry-Auth: base64url (or base64) JSON AuthConfig; empty, `{}` or garbage mean anonymous. */
export function decodeRegistryAuth(header: string | string[] | undefined): RegistryAuth | undefined {
  const h = Array.isArray(header) ? header[0] : header;
  if (!h) return undefined;
  try {
    return authConfigOf(JSON.parse(Buffer.from(h, 'base64').toString('utf8')));
  } catch {
    return undefined;
  }
}

/** The credentials of one decoded AuthConfig object; anything else means anonymous. */
export function authConfigOf(v: unknown): RegistryAuth | undefined {
  if (!v || typeof v !== 'object' || Array.isArray(v)) return undefined;
  const out: RegistryAuth = {};
  for (const k of ['username', 'password', 'auth', 'email', 'serveraddress', 'identitytoken', 'registrytoken'] as const) {
    const x = (v as Record<string, unknown>)[k];
    if (typeof x === 'string' && x) out[k] = x;
  }
  return Object.keys(out).length ? out : undefined;
}

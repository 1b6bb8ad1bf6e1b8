// Registry authentication: WWW-Authenticate challenges, Basic credentials, and the bearer token
// flow (GET realm with Basic credentials, or the OAuth2 refresh-token POST for identity tokens).
import { EngineError } from '../../lib/errors.ts';
import type { HttpResponse } from './transport.ts';
import type { AuthConfig } from './types.ts';

export interface Challenge {
  scheme: string;
  params: Record<string, string>;
}

/** Parse `Bearer realm="...",service="...",scope="..."` (one or more challenges). */
export function parseChallenges(headers: string | string[] | undefined): Challenge[] {
  const out: Challenge[] = [];
  for (const h of Array.isArray(headers) ? headers : headers ? [headers] : []) {
    const m = /^\s*([A-Za-z][\w-]*)\s*(.*)$/s.exec(h);
    if (!m) continue;
    const params: Record<string, string> = {};
    const pre = /([\w-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^,\s]*))/g;
    let p: RegExpExecArray | null;
    while ((p = pre.exec(m[2] ?? ''))) params[p[1]!.toLowerCase()] = (p[2] ?? p[3] ?? '').replace(/\\(.)/g, '$1');
    out.push({ scheme: m[1]!.toLowerCase(), params });
  }
  return out;
}

export interface Credentials {
  username: string;
  password: string;
}

/** Username and password from an AuthConfig (explicit fields, else the `auth` base64 pair). */
export function credentialsOf(auth: AuthConfig | undefined): Credentials | undefined {
  if (!auth) return undefined;
  if (auth.username || auth.password) return { username: auth.username ?? '', password: auth.password ?? '' };
  if (auth.auth) {
    const dec = Buffer.from(auth.auth, 'base64').toString('utf8');
    const i = dec.indexOf(':');
    if (i > 0) return { username: dec.slice(0, i), password: dec.slice(i + 1) };
  }
  return undefined;
}

export function basicHeader(c: Credentials): string {
  return `Basic ${Buffer.from(`${c.username}:${c.password}`).toString('base64')}`;
}

export interface TokenResponse {
  token: string;
  refreshToken?: string;
}

export interface TokenRequest {
  realm: string;
  service?: string;
  scopes: string[];
  auth?: AuthConfig;
  /** Ask for a refresh token (login). */
  offline?: boolean;
  send(method: string, url: URL, headers: Record<string, string>, body?: string): Promise<HttpResponse>;
}

/** Obtain a bearer token from the challenge's realm. Failures are Unauthorized EngineErrors. */
export async function fetchToken(req: TokenRequest): Promise<TokenResponse> {
  const creds = credentialsOf(req.auth);
  const realm = new URL(req.realm);
  if (req.auth?.identitytoken) {
    const form = new URLSearchParams({ grant_type: 'refresh_token', refresh_token: req.auth.identitytoken, client_id: 'engine' });
    if (req.service) form.set('service', req.service);
    if (req.scopes.length) form.set('scope', req.scopes.join(' '));
    if (req.offline) form.set('access_type', 'offline');
    const res = await req.send('POST', realm, { 'Content-Type': 'application/x-www-form-urlencoded' }, form.toString());
    if (res.status !== 404 && res.status !== 405) return tokenFrom(res, realm);
    res.discard();
  }
  const url = new URL(realm);
  if (req.service) url.searchParams.set('service', req.service);
  for (const s of req.scopes) url.searchParams.append('scope', s);
  const headers: Record<string, string> = {};
  if (creds) {
    url.searchParams.set('account', creds.username);
    headers.Authorization = basicHeader(creds);
  }
  if (req.offline) {
    url.searchParams.set('offline_token', 'true');
    url.searchParams.set('client_id', 'engine');
  }
  return tokenFrom(await req.send('GET', url, headers), realm);
}

async function tokenFrom(res: HttpResponse, realm: URL): Promise<TokenResponse> {
  const text = await res.text();
  if (res.status < 200 || res.status >= 300) {
    let detail = `${res.status} ${res.statusText}`.trim();
    try {
      const body = JSON.parse(text) as { errors?: Array<{ code?: string; message?: string }>; details?: string };
      const e = body.errors?.[0];
      if (e) detail = `${(e.code ?? 'unauthorized').toLowerCase().replace(/_/g, ' ')}: ${e.message ?? ''}`;
      else if (body.details) detail = `unauthorized: ${body.details}`;
    } catch {
      /* not JSON */
    }
    const code = res.status === 401 || res.status === 403 ? 'Unauthorized' : 'Internal';
    throw Object.assign(new EngineError(code, `Get "${realm.href}": ${detail}`), { tokenError: true });
  }
  const body = JSON.parse(text) as { token?: string; access_token?: string; refresh_token?: string };
  const token = body.token || body.access_token;
  if (!token) throw new EngineError('Unauthorized', `Get "${realm.href}": authorization server did not include a token in the response`);
  return { token, refreshToken: body.refresh_token };
}

// The authorization chain: every configured plugin, in order, is asked about each request
// (AuthZPlugin.AuthZReq) and each response (AuthZPlugin.AuthZRes); all must allow. A plugin is
// found and activated (Plugin.Activate, which must list "authz") on first use. The plugin list is
// live: a reload replaces it, and a response is checked by the list current when it is sent.
import { invalidArgument, permissionDenied } from '../../lib/errors.ts';
import { pluginClient, type PluginClient } from './client.ts';
import { discover, pluginDirs, type PluginAddress, type PluginDirs } from './discovery.ts';

export const AUTHZ_REQUEST = 'AuthZPlugin.AuthZReq';
export const AUTHZ_RESPONSE = 'AuthZPlugin.AuthZRes';
export const AUTHZ_IMPLEMENTS = 'authz';

/** What a plugin is told (the reference's field names; byte fields travel as base64). */
export interface AuthzMessage {
  User?: string;
  UserAuthNMethod?: string;
  RequestMethod: string;
  RequestUri: string;
  RequestBody?: Buffer;
  RequestHeaders: Record<string, string>;
  /** PEM, one per certificate of the client's chain. */
  RequestPeerCertificates?: Buffer[];
  ResponseStatusCode?: number;
  ResponseBody?: Buffer;
  ResponseHeaders?: Record<string, string>;
}

interface AuthzAnswer {
  Allow?: boolean;
  Msg?: string;
  Err?: string;
}

/** The request as a plugin receives it: Go's omitempty (no empty string, map, byte slice or zero status). */
export function encodeMessage(m: AuthzMessage): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const put = (k: string, v: unknown) => {
    if (v === undefined || v === '' || v === 0) return;
    if (Buffer.isBuffer(v)) {
      if (v.length) out[k] = v.toString('base64');
      return;
    }
    if (Array.isArray(v)) {
      if (v.length) out[k] = v.map((b: Buffer) => b.toString('base64'));
      return;
    }
    if (typeof v === 'object' && v !== null && Object.keys(v).length === 0) return;
    out[k] = v;
  };
  put('User', m.User);
  put('UserAuthNMethod', m.UserAuthNMethod);
  put('RequestMethod', m.RequestMethod);
  put('RequestUri', m.RequestUri);
  put('RequestBody', m.RequestBody);
  put('RequestHeaders', m.RequestHeaders);
  put('RequestPeerCertificates', m.RequestPeerCertificates);
  put('ResponseStatusCode', m.ResponseStatusCode);
  put('ResponseBody', m.ResponseBody);
  put('ResponseHeaders', m.ResponseHeaders);
  return out;
}

/** One plugin: looked up and activated on first use (again after a failed activation). */
export class AuthzPlugin {
  readonly name: string;
  private readonly dirs: PluginDirs;
  private readonly connect: (a: PluginAddress) => PluginClient;
  private client: Promise<PluginClient> | undefined;

  constructor(name: string, dirs: PluginDirs, connect: (a: PluginAddress) => PluginClient = (a) => pluginClient(a)) {
    this.name = name;
    this.dirs = dirs;
    this.connect = connect;
  }

  async call(method: string, message: AuthzMessage): Promise<AuthzAnswer> {
    const client = await this.activated();
    return ((await client.call(method, encodeMessage(message))) ?? {}) as AuthzAnswer;
  }

  private activated(): Promise<PluginClient> {
    if (!this.client) {
      this.client = this.activate();
      this.client.catch(() => {
        this.client = undefined;
      });
    }
    return this.client;
  }

  private async activate(): Promise<PluginClient> {
    const client = this.connect(discover(this.name, this.dirs));
    const manifest = (await client.call('Plugin.Activate')) as { Implements?: unknown } | null;
    const implementsList = Array.isArray(manifest?.Implements) ? manifest.Implements : [];
    if (!implementsList.includes(AUTHZ_IMPLEMENTS)) throw new Error('Plugin does not implement the requested driver');
    return client;
  }
}

/** A denial: 403 with the reference's wording. */
export function authorizationDenied(plugin: string, msg: string) {
  return permissionDenied(`authorization denied by plugin ${plugin}: ${msg}`);
}

export interface AuthzChainOptions {
  dirs?: PluginDirs;
  /** How a found plugin is reached (tests). */
  connect?: (a: PluginAddress) => PluginClient;
}

export class AuthzChain {
  private plugins: AuthzPlugin[] = [];
  private readonly dirs: PluginDirs;
  private readonly connect?: (a: PluginAddress) => PluginClient;

  constructor(names: readonly string[] = [], opts: AuthzChainOptions = {}) {
    this.dirs = opts.dirs ?? pluginDirs();
    this.connect = opts.connect;
    this.set(names);
  }

  /** Whether any plugin is configured (no plugin: requests are not looked at). */
  get active(): boolean {
    return this.plugins.length > 0;
  }

  get names(): string[] {
    return this.plugins.map((p) => p.name);
  }

  /** Throws, naming the first plugin that cannot be found: the check at start and before a reload. */
  validate(names: readonly string[]): void {
    for (const name of names) {
      try {
        discover(name, this.dirs);
      } catch (err) {
        throw invalidArgument(`failed to validate authorization plugin: ${err instanceof Error ? err.message : String(err)}`, err);
      }
    }
  }

  /** Replaces the plugin list (duplicates once); plugins already in use keep their activation. */
  set(names: readonly string[]): void {
    const old = new Map(this.plugins.map((p) => [p.name, p]));
    const seen = new Set<string>();
    const next: AuthzPlugin[] = [];
    for (const name of names) {
      if (seen.has(name)) continue;
      seen.add(name);
      next.push(old.get(name) ?? new AuthzPlugin(name, this.dirs, this.connect));
    }
    this.plugins = next;
  }

  /** AuthZReq through every plugin; throws a 403 on a denial, a plain (500) error when a plugin fails. */
  authorizeRequest(message: AuthzMessage): Promise<void> {
    return this.ask(this.plugins, AUTHZ_REQUEST, message);
  }

  /** AuthZRes through every plugin (the list current now). */
  authorizeResponse(message: AuthzMessage): Promise<void> {
    return this.ask(this.plugins, AUTHZ_RESPONSE, message);
  }

  private async ask(plugins: readonly AuthzPlugin[], method: string, message: AuthzMessage): Promise<void> {
    for (const plugin of plugins) {
      let answer: AuthzAnswer;
      try {
        answer = await plugin.call(method, message);
      } catch (err) {
        throw new Error(`plugin ${plugin.name} failed with error: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
      }
      if (!answer.Allow) throw authorizationDenied(plugin.name, typeof answer.Msg === 'string' ? answer.Msg : '');
    }
  }
}

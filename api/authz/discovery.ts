// Finding a (v1) authorization plugin by name, as the reference's plugin registry does: a socket
// NAME.sock or NAME/NAME.sock in the socket directory, else a spec file NAME.spec (one URL) or
// NAME.json (address and TLS settings), or NAME/NAME.{spec,json}, in the spec directories, in that
// order. A name that is itself a spec file's absolute path names that file.
import { readFileSync, statSync } from 'node:fs';
import { basename, extname, isAbsolute, join } from 'node:path';

export interface PluginDirs {
  /** Where plugins listen: NAME.sock, NAME/NAME.sock. */
  socketDir: string;
  /** Where spec files are: NAME.spec, NAME.json (and NAME/NAME.*). */
  specDirs: string[];
}

export interface PluginTls {
  caFile?: string;
  certFile?: string;
  keyFile?: string;
  insecureSkipVerify: boolean;
}

/** Where a plugin is reached. */
export interface PluginAddress {
  name: string;
  /** unix:///path, tcp://host:port, http(s)://host:port */
  addr: string;
  tls?: PluginTls;
}

export const DEFAULT_PLUGIN_DIRS: PluginDirs = { socketDir: '/run/engine/plugins', specDirs: ['/etc/engine/plugins', '/usr/lib/engine/plugins'] };

/** The search directories; ENGINE_PLUGINS_SOCKET_DIR and ENGINE_PLUGINS_SPEC_DIRS (colon-separated) replace them when set (tests). */
export function pluginDirs(env: NodeJS.ProcessEnv = process.env): PluginDirs {
  return {
    socketDir: env.ENGINE_PLUGINS_SOCKET_DIR || DEFAULT_PLUGIN_DIRS.socketDir,
    specDirs: env.ENGINE_PLUGINS_SPEC_DIRS ? env.ENGINE_PLUGINS_SPEC_DIRS.split(':').filter(Boolean) : DEFAULT_PLUGIN_DIRS.specDirs,
  };
}

/** The reference's error for a plugin not found. */
export class PluginNotFoundError extends Error {
  constructor(name: string) {
    super(`could not find plugin ${name} in v1 plugin registry: plugin not found`);
    this.name = 'PluginNotFoundError';
  }
}

const candidates = (base: string, name: string, ext: string) => [join(base, name + ext), join(base, name, name + ext)];

function isSocket(p: string): boolean {
  try {
    return statSync(p).isSocket();
  } catch {
    return false;
  }
}

function exists(p: string): boolean {
  try {
    statSync(p);
    return true;
  } catch {
    return false;
  }
}

/** The plugin's address (synchronous: a reload's check runs in one step); throws PluginNotFoundError or the spec file's fault. */
export function discover(name: string, dirs: PluginDirs = pluginDirs()): PluginAddress {
  if (!name) throw new Error('Unable to find plugin without name');
  if (isAbsolute(name) && ['.spec', '.json'].includes(extname(name))) {
    if (!exists(name)) throw new PluginNotFoundError(name);
    return readSpec(name, name);
  }
  for (const p of candidates(dirs.socketDir, name, '.sock')) {
    if (isSocket(p)) return { name, addr: `unix://${p}`, tls: { insecureSkipVerify: true } };
  }
  const specs = dirs.specDirs.flatMap((d) => [...candidates(d, name, '.spec'), ...candidates(d, name, '.json')]);
  for (const p of specs) {
    if (exists(p)) return readSpec(name, p);
  }
  throw new PluginNotFoundError(name);
}

function readSpec(name: string, path: string): PluginAddress {
  const text = readFileSync(path, 'utf8');
  if (path.endsWith('.json')) return readJsonSpec(name, text, path);
  const addr = text.trim();
  const m = /^([A-Za-z][A-Za-z0-9+.-]*):/.exec(addr);
  if (!m) throw new Error('Unknown protocol');
  return { name, addr, tls: { insecureSkipVerify: true } };
}

function readJsonSpec(name: string, text: string, path: string): PluginAddress {
  let spec: { Addr?: unknown; TLSConfig?: { CAFile?: string; CertFile?: string; KeyFile?: string; InsecureSkipVerify?: boolean } | null };
  try {
    spec = JSON.parse(text);
  } catch (err) {
    throw new Error(`${basename(path)}: ${err instanceof Error ? err.message : String(err)}`);
  }
  const addr = typeof spec.Addr === 'string' ? spec.Addr : '';
  const t = spec.TLSConfig;
  // As the reference: TLS settings without a CA file do not verify the plugin's certificate.
  const tls: PluginTls | undefined = t
    ? { caFile: t.CAFile || undefined, certFile: t.CertFile || undefined, keyFile: t.KeyFile || undefined, insecureSkipVerify: !t.CAFile || !!t.InsecureSkipVerify }
    : undefined;
  return { name, addr, tls };
}

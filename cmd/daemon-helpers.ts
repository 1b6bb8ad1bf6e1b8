// Small helpers of the daemon's wiring: what it reads from the host and the configuration.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ListenTls } from '../api/listen.ts';
import type { ReloadableRegistryOptions } from '../drivers/distribution/distribution.ts';
import type { DaemonConfig } from '../config/load.ts';

/** The logger level the configuration asks for (--debug wins). */
export function levelOf(config: DaemonConfig): string {
  return config.debug ? 'debug' : config.logLevel === 'fatal' ? 'fatal' : config.logLevel;
}

/** The registry options a reload may change, with the spec's defaults. */
export function registryOptions(c: DaemonConfig): ReloadableRegistryOptions {
  return {
    insecureRegistries: c.insecureRegistries ?? [],
    registryMirrors: c.registryMirrors ?? [],
    maxConcurrentDownloads: c.maxConcurrentDownloads || 3,
    maxDownloadAttempts: c.maxDownloadAttempts || 5,
    maxConcurrentUploads: c.maxConcurrentUploads || 5,
    allowNondistributable: c.allowNondistributableArtifacts ?? [],
  };
}


/** The CPUs and memory nodes cpusets may name, as sysfs lists them online (unknown when it cannot be read). */
export function hostCpus(): { cpus?: string; mems?: string } {
  const read = (p: string) => (existsSync(p) ? readFileSync(p, 'utf8').trim() || undefined : undefined);
  return { cpus: read('/sys/devices/system/cpu/online'), mems: read('/sys/devices/system/node/online') };
}

/** Whether the kernel offers blkio weights (cgroup v1 with CFQ/BFQ weights, or v2's io.weight). */
export function blkioWeightSupported(): boolean {
  if (['/sys/fs/cgroup/blkio/blkio.weight', '/sys/fs/cgroup/blkio/blkio.bfq.weight'].some((p) => existsSync(p))) return true;
  return existsSync('/sys/fs/cgroup/cgroup.controllers') && /\bio\b/.test(readFileSync('/sys/fs/cgroup/cgroup.controllers', 'utf8'));
}

/** --seccomp-profile: "", "builtin" and "unconfined" as they are, else the profile file's JSON (read once, at start). */
export function seccompProfile(value: string | undefined): string | undefined {
  if (!value || value === 'builtin' || value === 'default' || value === 'unconfined') return value || undefined;
  try {
    const text = readFileSync(value, 'utf8');
    JSON.parse(text);
    return text;
  } catch (err) {
    throw new Error(`opening seccomp profile (${value}) failed: ${err instanceof Error ? err.message : String(err)}`);
  }
}

/** The init for --init when --init-path names none: docker-init, else tini's static build (containers may have no libc). */
export function findInit(): string {
  return ['/usr/local/bin/docker-init', '/usr/bin/docker-init', '/usr/bin/tini-static'].find((p) => existsSync(p)) ?? '';
}

/** --tls / --tlsverify: the server's key pair (and the CA that client certificates must chain to). */
export function listenTls(cfg: DaemonConfig): ListenTls | undefined {
  if (!cfg.tls && !cfg.tlsverify) return undefined;
  const home = process.env.HOME || '/root';
  const path = (p: string) => (p.startsWith('~/') ? join(home, p.slice(2)) : p);
  const read = (what: string, p: string) => {
    try {
      return readFileSync(path(p));
    } catch (err) {
      throw new Error(`could not load ${what} ${path(p)}: ${(err as Error).message}`);
    }
  };
  return {
    cert: read('TLS certificate', cfg.tlscert),
    key: read('TLS key', cfg.tlskey),
    ca: cfg.tlsverify ? read('TLS CA certificate', cfg.tlscacert) : undefined,
    verify: !!cfg.tlsverify,
  };
}

/**
 * ENGINE_NETWORK_RECHECK_MS: how often the network reconciler looks for drift (default 30 s). A
 * test knob like ENGINE_IPTABLES_CHAIN_PREFIX (the drift e2e cannot wait 30 s), not a spec option.
 */
export function recheckMsFromEnv(): number | undefined {
  const v = Number(process.env.ENGINE_NETWORK_RECHECK_MS);
  return Number.isFinite(v) && v >= 100 ? v : undefined;
}

// OCI platforms: the host's, parsing "os/arch[/variant]", and matching index entries (drivers and the API share them).
import { invalidArgument } from './errors.ts';

export interface Platform {
  os: string;
  architecture: string;
  variant?: string;
}

// Node's process.arch names -> GOARCH names used in image configs and indexes.
const GOARCH: Record<string, string> = {
  x64: 'amd64', arm64: 'arm64', arm: 'arm', ia32: '386', ppc64: 'ppc64le', s390x: 's390x',
  riscv64: 'riscv64', loong64: 'loong64', mips: 'mips', mipsel: 'mipsle',
};

export function hostPlatform(): Platform {
  return { os: process.platform === 'win32' ? 'windows' : process.platform, architecture: GOARCH[process.arch] ?? process.arch };
}

/** "linux/amd64", "linux/arm64/v8", "linux" (architecture from `fallback`). */
export function parsePlatform(s: string, fallback: Platform = hostPlatform()): Platform {
  const parts = s.trim().toLowerCase().split('/');
  if (parts.length > 3 || parts.some((p) => !/^[a-z0-9_.-]+$/.test(p))) {
    throw invalidArgument(`"${s}": unknown operating system or architecture: invalid argument`);
  }
  const [os, arch, variant] = parts as [string, string | undefined, string | undefined];
  const p: Platform = { os, architecture: normalizeArch(arch ?? fallback.architecture) };
  if (variant) p.variant = variant;
  return p;
}

function normalizeArch(a: string): string {
  if (a === 'x86_64' || a === 'x86-64') return 'amd64';
  if (a === 'aarch64') return 'arm64';
  return a;
}

/** Whether an index entry's platform can serve `want` (variant only checked when both name one). */
export function platformMatches(p: { os?: string; architecture?: string; variant?: string } | undefined, want: Platform): boolean {
  if (!p || p.os !== want.os || normalizeArch(p.architecture ?? '') !== want.architecture) return false;
  return !p.variant || !want.variant || p.variant === want.variant;
}

export function formatPlatform(p: Platform): string {
  return [p.os, p.architecture, p.variant].filter(Boolean).join('/');
}

/**
 * A JSON-encoded OCI platform of a query (API 1.48's `platform` on save, load and history), as the
 * reference's DecodePlatform: optional fields without os and architecture are refused, a missing
 * os or architecture is the host's.
 */
export function decodePlatform(json: string): Platform {
  let v: unknown;
  try {
    v = JSON.parse(json);
  } catch (err) {
    throw invalidArgument(`failed to parse platform: ${(err as Error).message}`);
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw invalidArgument('failed to parse platform: not a JSON object');
  const o = v as Record<string, unknown>;
  const str = (k: string) => (typeof o[k] === 'string' ? (o[k] as string) : '');
  const os = str('os');
  const arch = str('architecture');
  const variant = str('variant');
  if (!os && !arch && (variant || str('os.version') || Array.isArray(o['os.features']))) {
    throw invalidArgument('optional platform fields provided, but OS and Architecture are missing');
  }
  const host = hostPlatform();
  return parsePlatform([os || host.os, arch || host.architecture, variant].filter(Boolean).join('/'));
}

/** The platform an image config (its JSON text) names; empty fields where it names none. */
export function configPlatform(rawConfig: string): Platform {
  let c: { os?: unknown; architecture?: unknown; variant?: unknown } = {};
  try {
    c = JSON.parse(rawConfig) ?? {};
  } catch {
    // a config that is not JSON names no platform
  }
  const str = (v: unknown) => (typeof v === 'string' ? v : '');
  return { os: str(c.os), architecture: str(c.architecture), ...(str(c.variant) ? { variant: str(c.variant) } : {}) };
}

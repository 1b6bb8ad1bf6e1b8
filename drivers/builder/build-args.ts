// Build arguments as the classic builder keeps them: the values the client sent (`buildargs`),
// the ARGs declared before the first FROM (meta args, usable in FROM lines), the ARGs a stage
// declares (allowed from there on) and the predefined proxy args usable without a declaration.

export const PREDEFINED_ARGS = new Set([
  'HTTP_PROXY', 'http_proxy', 'HTTPS_PROXY', 'https_proxy', 'FTP_PROXY', 'ftp_proxy',
  'NO_PROXY', 'no_proxy', 'ALL_PROXY', 'all_proxy',
]);

export class BuildArgs {
  private readonly given: Map<string, string | null>;
  private readonly meta = new Map<string, string | undefined>();
  private allowed = new Map<string, string | undefined>();
  private readonly referenced = new Set<string>();

  constructor(given: Record<string, string | null>) {
    this.given = new Map(Object.entries(given));
  }

  /** An ARG before the first FROM. */
  addMeta(name: string, dflt: string | undefined): void {
    this.meta.set(name, this.given.get(name) ?? dflt);
    this.referenced.add(name);
  }

  /** Values of the meta args, for FROM lines. */
  metaValues(): Map<string, string> {
    const out = new Map<string, string>();
    for (const [k, v] of this.meta) if (v !== undefined) out.set(k, v);
    return out;
  }

  /** A new stage forgets the ARGs the previous one declared. */
  resetAllowed(): void {
    this.allowed = new Map();
  }

  /** An ARG inside a stage: a value sent by the client wins over the default, then a meta arg's value. */
  declare(name: string, dflt: string | undefined): void {
    this.referenced.add(name);
    const sent = this.given.get(name);
    if (sent !== undefined && sent !== null) this.allowed.set(name, sent);
    else if (dflt !== undefined) this.allowed.set(name, dflt);
    else this.allowed.set(name, this.meta.get(name));
  }

  /** The args usable now with their values: the declared ones and the predefined ones sent. */
  values(): Map<string, string> {
    const out = new Map<string, string>();
    for (const [k, v] of this.given) if (v !== null && PREDEFINED_ARGS.has(k) && !this.allowed.has(k)) out.set(k, v);
    for (const [k, v] of this.allowed) if (v !== undefined) out.set(k, v);
    return out;
  }

  /** Whether `name` is a predefined arg the Dockerfile never declared (kept out of the cache key). */
  isUnreferencedBuiltin(name: string): boolean {
    return PREDEFINED_ARGS.has(name) && !this.referenced.has(name);
  }

  /** Names sent by the client that no ARG consumed (predefined ones do not count). */
  unused(): string[] {
    return [...this.given.keys()].filter((k) => !this.referenced.has(k) && !PREDEFINED_ARGS.has(k)).sort();
  }
}

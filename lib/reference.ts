// The image reference grammar of docker/distribution, with its normalisation rules
// (`busybox` == `docker.io/library/busybox`). Error messages are the ones the reference daemon
// returns, because users and scripts see them verbatim.
import { invalidArgument } from './errors.ts';

export interface Reference {
  /** Registry host[:port], `docker.io` for Docker Hub. */
  domain: string;
  /** Repository path inside the registry, `library/<x>` for official Hub images. */
  path: string;
  tag?: string;
  /** `<algorithm>:<hex>` */
  digest?: string;
}

export const DEFAULT_DOMAIN = 'docker.io';
export const DEFAULT_TAG = 'latest';
const LEGACY_DEFAULT_DOMAIN = 'index.docker.io';
const OFFICIAL_REPO_PREFIX = 'library/';
const NAME_TOTAL_LENGTH_MAX = 255;

// Grammar pieces, assembled the way distribution/reference assembles its regexps.
const ALNUM = '[a-z0-9]+';
const SEPARATOR = '(?:[._]|__|[-]+)';
const PATH_COMPONENT = `${ALNUM}(?:${SEPARATOR}${ALNUM})*`;
const DOMAIN_COMPONENT = '(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])';
const DOMAIN_NAME = `${DOMAIN_COMPONENT}(?:\\.${DOMAIN_COMPONENT})*`;
const IPV6 = '\\[(?:[a-fA-F0-9:]+)\\]';
const DOMAIN_AND_PORT = `(?:${DOMAIN_NAME}|${IPV6})(?::[0-9]+)?`;
const TAG = '[\\w][\\w.-]{0,127}';
const DIGEST = '[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}';
const NAME = `(?:${DOMAIN_AND_PORT}/)?${PATH_COMPONENT}(?:/${PATH_COMPONENT})*`;

const REFERENCE_RE = new RegExp(`^(${NAME})(?::(${TAG}))?(?:@(${DIGEST}))?$`);
const TAG_RE = new RegExp(`^${TAG}$`);
const DIGEST_RE = new RegExp(`^${DIGEST}$`);
const HEX64_RE = /^[a-f0-9]{64}$/;

/** Hex length of each digest algorithm go-digest accepts. */
const DIGEST_HEX_LENGTH: Record<string, number> = { sha256: 64, sha384: 96, sha512: 128 };

/** Parse and normalise a reference as `ParseNormalizedNamed` does. Throws InvalidArgument. */
export function parseReference(s: string): Reference {
  if (HEX64_RE.test(s)) {
    throw invalidArgument(`invalid repository name (${s}), cannot specify 64-byte hexadecimal strings`);
  }
  const { domain, remainder } = splitDomain(s);
  const tagSep = remainder.indexOf(':');
  const remote = tagSep >= 0 ? remainder.slice(0, tagSep) : remainder;
  if (remote.toLowerCase() !== remote) {
    throw invalidArgument('invalid reference format: repository name must be lowercase');
  }
  return parseCanonical(`${domain}/${remainder}`);
}

/**
 * Split off the registry: a first component counts as one only when it has a dot or a port, or is
 * `localhost`, as in the reference daemon (dockerd 20.10): `UPPER/case` is a Hub repository with
 * an upper-case name, refused, not a registry host named UPPER to be looked up.
 */
function splitDomain(s: string): { domain: string; remainder: string } {
  const i = s.indexOf('/');
  let domain: string;
  let remainder: string;
  const first = i >= 0 ? s.slice(0, i) : '';
  if (i < 0 || (!/[.:]/.test(first) && first !== 'localhost')) {
    domain = DEFAULT_DOMAIN;
    remainder = s;
  } else {
    domain = first;
    remainder = s.slice(i + 1);
  }
  if (domain === LEGACY_DEFAULT_DOMAIN) domain = DEFAULT_DOMAIN;
  if (domain === DEFAULT_DOMAIN && !remainder.includes('/')) remainder = OFFICIAL_REPO_PREFIX + remainder;
  return { domain, remainder };
}

/** Parse a reference that already carries its domain (no defaults applied). */
function parseCanonical(s: string): Reference {
  const m = REFERENCE_RE.exec(s);
  if (!m) {
    if (REFERENCE_RE.test(s.toLowerCase())) {
      throw invalidArgument('invalid reference format: repository name must be lowercase');
    }
    throw invalidArgument('invalid reference format');
  }
  const name = m[1]!;
  if (name.length > NAME_TOTAL_LENGTH_MAX) {
    throw invalidArgument(`invalid reference format: repository name must not be more than ${NAME_TOTAL_LENGTH_MAX} characters`);
  }
  const slash = name.indexOf('/');
  const ref: Reference = { domain: name.slice(0, slash), path: name.slice(slash + 1) };
  if (m[2] !== undefined) ref.tag = m[2];
  if (m[3] !== undefined) {
    validateDigest(m[3]);
    ref.digest = m[3];
  }
  return ref;
}

function validateDigest(d: string): void {
  const colon = d.indexOf(':');
  const alg = d.slice(0, colon);
  const hex = d.slice(colon + 1);
  const len = DIGEST_HEX_LENGTH[alg];
  if (len === undefined) throw invalidArgument('unsupported digest algorithm');
  if (hex.length !== len) throw invalidArgument('invalid checksum digest length');
  if (!/^[a-f0-9]+$/.test(hex)) throw invalidArgument('invalid checksum digest format');
}

/** `domain/path[:tag][@digest]` */
export function formatReference(ref: Reference): string {
  let s = repositoryName(ref);
  if (ref.tag !== undefined) s += `:${ref.tag}`;
  if (ref.digest !== undefined) s += `@${ref.digest}`;
  return s;
}

/** `docker.io/library/busybox` */
export function repositoryName(ref: Reference): string {
  return `${ref.domain}/${ref.path}`;
}

/** Fully normalised string, `:latest` added when neither tag nor digest is given (and defaultTag). */
export function normalizeName(s: string, defaultTag = true): string {
  const ref = parseReference(s);
  if (defaultTag && ref.tag === undefined && ref.digest === undefined) ref.tag = DEFAULT_TAG;
  return formatReference(ref);
}

/** The reference with `tag` (validated) in place of any tag or digest it had. */
export function withTag(ref: Reference, tag: string): Reference {
  if (!isValidTag(tag)) throw invalidArgument('invalid tag format');
  return { domain: ref.domain, path: ref.path, tag };
}

/** The short form users type: `busybox:latest`, `user/repo:tag`, `localhost:5000/a/b:1`. */
export function familiarName(fullRef: string): string {
  const ref = parseReference(fullRef);
  let s = familiarRepositoryOf(ref);
  if (ref.tag !== undefined) s += `:${ref.tag}`;
  if (ref.digest !== undefined) s += `@${ref.digest}`;
  return s;
}

/** The short repository name without tag or digest: `busybox`, `user/repo`. */
export function familiarRepository(fullRef: string): string {
  return familiarRepositoryOf(parseReference(fullRef));
}

function familiarRepositoryOf(ref: Reference): string {
  if (ref.domain !== DEFAULT_DOMAIN) return repositoryName(ref);
  const rest = ref.path.slice(OFFICIAL_REPO_PREFIX.length);
  if (ref.path.startsWith(OFFICIAL_REPO_PREFIX) && !rest.includes('/')) return rest;
  return ref.path;
}

/** `<algorithm>:<hex>` with a known algorithm and the right hex length. */
export function isDigest(s: string): boolean {
  if (!DIGEST_RE.test(s)) return false;
  try {
    validateDigest(s);
    return true;
  } catch {
    return false;
  }
}

/** `sha256:<64 hex>` or bare 64 hex. */
export function isFullImageId(s: string): boolean {
  return HEX64_RE.test(s.startsWith('sha256:') ? s.slice(7) : s);
}

export function isValidTag(tag: string): boolean {
  return TAG_RE.test(tag);
}

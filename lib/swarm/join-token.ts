// Swarm join tokens in the reference's format (swarmkit's ca/config.go): `SWMTKN-1-<digest>-<secret>`,
// the digest the SHA-256 of the cluster's root CA certificate (its PEM bytes) in base 36 padded to 50
// characters, the secret 16 random bytes in base 36 padded to 25. A joining node checks the CA it is
// offered against the digest; the manager checks the secret against the role's current one.
import { createHash, randomBytes } from 'node:crypto';

const DIGEST_LEN = 50;
const SECRET_LEN = 25;
const TOKEN = /^SWMTKN-1-([0-9a-z]{50})-([0-9a-z]{25})$/;

const base36 = (bytes: Buffer, width: number) => BigInt(`0x${bytes.toString('hex') || '0'}`).toString(36).padStart(width, '0');

/** The CA digest part of a token: sha256 of the root CA's PEM, in base 36. */
export function caDigest(rootCaPem: string): string {
  return base36(createHash('sha256').update(rootCaPem).digest(), DIGEST_LEN);
}

/** A new join token for the CA (a fresh secret each call: a rotation). */
export function makeJoinToken(rootCaPem: string): string {
  return `SWMTKN-1-${caDigest(rootCaPem)}-${base36(randomBytes(16), SECRET_LEN)}`;
}

/** A token's digest as the reference prints it (a CA that does not match): the SHA-256 in 64 hex digits. */
export function digestHex(digest: string): string {
  let n = 0n;
  for (const ch of digest) n = n * 36n + BigInt(parseInt(ch, 36));
  return n.toString(16).padStart(64, '0');
}

export interface ParsedJoinToken {
  digest: string;
  secret: string;
}

/** The parts of a token, or undefined for anything not in the format (the reference's "invalid join token"). */
export function parseJoinToken(token: string): ParsedJoinToken | undefined {
  const m = TOKEN.exec(token.trim());
  return m ? { digest: m[1]!, secret: m[2]! } : undefined;
}

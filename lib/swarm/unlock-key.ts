// A swarm's unlock key (autolock) in the reference's form — `SWMKEY-1-` and 32 random bytes in
// unpadded base64 (swarmkit's encryption.HumanReadableKey) — and what it seals: a manager's private
// keys on disk, in AES-256-GCM under a key derived from the unlock key (HKDF-SHA256), in a PEM block
// of our own ("ENGINE SEALED KEY": the reference's format is not read by anything else).
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

const PREFIX = 'SWMKEY-1-';
const BEGIN = '-----BEGIN ENGINE SEALED KEY-----';
const END = '-----END ENGINE SEALED KEY-----';
const INFO = Buffer.from('engine swarm key sealing');

/** A swarm's data key: 32 random bytes, in a form of our own (it never leaves the managers). */
export function makeDataKey(): string {
  return `SWMDEK-1-${randomBytes(32).toString('base64').replace(/=+$/, '')}`;
}

export function makeUnlockKey(): string {
  return `${PREFIX}${randomBytes(32).toString('base64').replace(/=+$/, '')}`;
}

/** The key's bytes, or undefined for a string not in the format (the reference's "invalid key string"). */
export function parseUnlockKey(s: string): Buffer | undefined {
  const t = s.trim();
  if (!t.startsWith(PREFIX)) return undefined;
  const body = t.slice(PREFIX.length);
  if (!/^[A-Za-z0-9+/]+$/.test(body)) return undefined;
  const bytes = Buffer.from(body, 'base64');
  return bytes.length ? bytes : undefined;
}

function kek(unlockKey: Buffer): Buffer {
  return Buffer.from(hkdfSync('sha256', unlockKey, Buffer.alloc(0), INFO, 32));
}

export function isSealed(text: string): boolean {
  return text.trimStart().startsWith(BEGIN);
}

/** `plain` sealed under the unlock key. */
export function seal(plain: string, unlockKey: Buffer): string {
  const iv = randomBytes(12);
  const c = createCipheriv('aes-256-gcm', kek(unlockKey), iv);
  const body = Buffer.concat([iv, c.update(plain, 'utf8'), c.final(), c.getAuthTag()]).toString('base64');
  return `${BEGIN}\n${body.replace(/(.{64})/g, '$1\n').trimEnd()}\n${END}\n`;
}

/** What `sealed` holds, or undefined when the unlock key is not the one it was sealed under. */
export function unseal(sealed: string, unlockKey: Buffer): string | undefined {
  const b64 = sealed.replace(BEGIN, '').replace(END, '').replace(/\s+/g, '');
  const raw = Buffer.from(b64, 'base64');
  if (raw.length < 12 + 16) return undefined;
  try {
    const d = createDecipheriv('aes-256-gcm', kek(unlockKey), raw.subarray(0, 12));
    d.setAuthTag(raw.subarray(raw.length - 16));
    return Buffer.concat([d.update(raw.subarray(12, raw.length - 16)), d.final()]).toString('utf8');
  } catch {
    return undefined;
  }
}

// Secret data sealed at rest in the swarm's etcd: AES-256-GCM (node:crypto) under the swarm's data
// key (a manager's, cmd/swarm/state.ts; with autolock itself sealed by the unlock key), a random
// 96-bit nonce each time, the object it belongs to as the additional data (a sealed value moved to
// another key does not open). "v1:" + base64(nonce | tag | ciphertext).
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { unavailable } from '../errors.ts';

const VERSION = 'v1:';

/** The AES key of a data key ("SWMDEK-1-..."): its SHA-256. */
const aesKey = (dataKey: string) => createHash('sha256').update(dataKey).digest();

export function seal(dataKey: string, plain: Buffer, aad: string): string {
  const nonce = randomBytes(12);
  const c = createCipheriv('aes-256-gcm', aesKey(dataKey), nonce);
  c.setAAD(Buffer.from(aad));
  const body = Buffer.concat([c.update(plain), c.final()]);
  return VERSION + Buffer.concat([nonce, c.getAuthTag(), body]).toString('base64');
}

export function open(dataKey: string, sealed: string, aad: string): Buffer {
  if (!sealed.startsWith(VERSION)) throw unavailable('sealed data of an unknown version');
  const raw = Buffer.from(sealed.slice(VERSION.length), 'base64');
  if (raw.length < 28) throw unavailable('sealed data is damaged');
  const d = createDecipheriv('aes-256-gcm', aesKey(dataKey), raw.subarray(0, 12));
  d.setAAD(Buffer.from(aad));
  d.setAuthTag(raw.subarray(12, 28));
  try {
    return Buffer.concat([d.update(raw.subarray(28)), d.final()]);
  } catch {
    throw unavailable('sealed data does not open with this swarm\'s data key');
  }
}

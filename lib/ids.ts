import { randomBytes } from 'node:crypto';

/** 64 lowercase hex characters; re-drawn while the 12-char prefix is all digits (it becomes the hostname). */
export function newId(): string {
  for (;;) {
    const id = randomBytes(32).toString('hex');
    if (!/^\d{12}$/.test(id.slice(0, 12))) return id;
  }
}

/** First 12 hex characters, after any `sha256:` prefix. */
export function shortId(id: string): string {
  return id.replace(/^sha256:/, '').slice(0, 12);
}

/** RFC 3339 with nanoseconds, as the reference daemon writes times ("2024-05-01T10:20:30.123456789Z"). */
export function rfc3339Nano(d: Date = new Date(), nanosExtra = 0): string {
  const iso = d.toISOString(); // 2024-05-01T10:20:30.123Z
  const ms = iso.slice(20, 23);
  const extra = String(Math.max(0, Math.min(999999, nanosExtra))).padStart(6, '0');
  return `${iso.slice(0, 19)}.${ms}${extra}Z`;
}

/** The Go zero time, which the reference daemon reports for never-set timestamps. */
export const ZERO_TIME = '0001-01-01T00:00:00Z';

// The JSON progress lines the docker CLI renders: the same status words, ids and progress bar
// text as the reference daemon writes.
import type { JsonMessage } from './types.ts';
import { humanSize } from '../../lib/units.ts';

export { humanSize };


/** The `progress` text of a JSONProgress as the daemon renders it (width 200: bar included). */
export function progressBar(current: number, total: number): string {
  if (current <= 0 && total <= 0) return '';
  if (total <= 0) return humanSize(current).padStart(8);
  const pct = Math.min(50, Math.floor(Math.floor((current / total) * 100) / 2));
  const bar = `[${'='.repeat(pct)}>${' '.repeat(Math.max(0, 50 - pct))}] `;
  const numbers = current > total ? humanSize(current).padStart(8) : `${humanSize(current).padStart(8)}/${humanSize(total)}`;
  return bar + numbers;
}

/** First 12 hex digits of a digest, the id the CLI shows per layer. */
export function shortDigest(digest: string): string {
  const i = digest.indexOf(':');
  return digest.slice(i + 1, i + 13);
}

export function statusLine(id: string, status: string): JsonMessage {
  return { status, progressDetail: {}, id };
}

export function progressLine(id: string, status: string, current: number, total: number): JsonMessage {
  return { status, progressDetail: { current, total }, progress: progressBar(current, total), id };
}

/** Rate-limited progress updates (the reference daemon sends at most one per 100 ms per layer). */
export function throttled(emit: (current: number) => void, intervalMs = 100): { update(current: number): void; flush(current: number): void } {
  let last = 0;
  let sent = -1;
  return {
    update(current) {
      const now = Date.now();
      if (now - last >= intervalMs) {
        last = now;
        sent = current;
        emit(current);
      }
    },
    flush(current) {
      if (current === sent) return;
      last = Date.now();
      sent = current;
      emit(current);
    },
  };
}

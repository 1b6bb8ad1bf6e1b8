// The `filters` of the prune endpoints: `until` (timestamp or duration) and `label` / `label!`.
import { invalidArgument } from '../../lib/errors.ts';
import { parseTimestampMs } from '../../lib/timestamp.ts';

export interface PruneFilters {
  until?: number;
  labels: Array<{ key: string; value?: string; negate: boolean }>;
}

export function parsePruneFilters(raw: string | undefined): PruneFilters {
  const out: PruneFilters = { labels: [] };
  if (!raw) return out;
  let parsed: Record<string, unknown>;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw invalidArgument(`invalid filter: ${raw}`);
  }
  for (const [k, v] of Object.entries(parsed)) {
    const values = Array.isArray(v) ? v.map(String) : v && typeof v === 'object' ? Object.keys(v) : [];
    if (k === 'until') {
      if (values.length > 1) throw invalidArgument('more than one until filter specified');
      if (values[0]) out.until = parseTimestampMs(values[0], Date.now());
    } else if (k === 'label' || k === 'label!') {
      for (const l of values) {
        const i = l.indexOf('=');
        out.labels.push({ key: i < 0 ? l : l.slice(0, i), value: i < 0 ? undefined : l.slice(i + 1), negate: k === 'label!' });
      }
    } else {
      throw invalidArgument(`invalid filter '${k}'`);
    }
  }
  return out;
}

export function pruneMatches(f: PruneFilters, labels: Record<string, string>, createdMs: number): boolean {
  if (f.until !== undefined && !(createdMs < f.until)) return false;
  for (const l of f.labels) {
    const has = l.key in labels && (l.value === undefined || labels[l.key] === l.value);
    if (l.negate ? has : !has) return false;
  }
  return true;
}

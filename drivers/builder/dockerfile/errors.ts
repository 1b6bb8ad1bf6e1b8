// A Dockerfile the reference would refuse: always an invalid argument (HTTP 400 at the edge),
// with the lines it points at so the builder can show them.
import { EngineError } from '../../../lib/errors.ts';

export class DockerfileError extends EngineError {
  readonly startLine: number;
  readonly endLine: number;
  constructor(message: string, startLine: number, endLine = startLine) {
    super('InvalidArgument', message);
    this.startLine = startLine;
    this.endLine = Math.max(startLine, endLine);
  }
}

// Levenshtein distance, for the reference's "(did you mean X?)" suggestions.
function distance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) {
      cur[j] = Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    prev = cur;
  }
  return prev[b.length];
}

// Appends " (did you mean X?)" when an option is within distance 2, as moby's suggest.WrapError.
export function withSuggestion(message: string, value: string, options: string[], caseSensitive: boolean): string {
  const val = caseSensitive ? value : value.toLowerCase();
  let match = '';
  let min = 3;
  for (const raw of options) {
    const opt = caseSensitive ? raw : raw.toLowerCase();
    if (opt === val) return message;
    const d = distance(val, opt);
    if (d < min) {
      min = d;
      match = caseSensitive ? opt : matchCase(opt, value);
    }
  }
  return match ? `${message} (did you mean ${match}?)` : message;
}

function matchCase(val: string, orig: string): string {
  if (orig === orig.toLowerCase()) return val.toLowerCase();
  if (orig === orig.toUpperCase()) return val.toUpperCase();
  return val;
}

// Tokenisers the line parser uses before any variable expansion: the leading `--flag`s of an
// instruction, the quote-aware words of ENV/LABEL/ARG, and the exec (JSON) form.

const isSpace = (ch: string) => /^\s$/u.test(ch);

// Quote-aware split that keeps quotes and escapes in the words: they are removed later, when
// the builder expands each word with the environment.
export function parseWords(rest: string, escape: string): string[] {
  const chars = Array.from(rest);
  const words: string[] = [];
  let word = '';
  let blankOK = false;
  let phase: 'spaces' | 'word' | 'quote' = 'spaces';
  let quote = '';
  for (let i = 0; i <= chars.length; i++) {
    let ch = chars[i] ?? '';
    if (phase === 'spaces') {
      if (i === chars.length) break;
      if (isSpace(ch)) continue;
      phase = 'word';
    }
    if (i === chars.length) {
      if (blankOK || word !== '') words.push(word);
      break;
    }
    if (phase === 'word') {
      if (isSpace(ch)) {
        phase = 'spaces';
        if (blankOK || word !== '') words.push(word);
        word = '';
        blankOK = false;
        continue;
      }
      if (ch === "'" || ch === '"') {
        quote = ch;
        blankOK = true;
        phase = 'quote';
      }
      if (ch === escape) {
        if (i + 1 === chars.length) continue;
        word += ch;
        ch = chars[++i];
      }
      word += ch;
      continue;
    }
    if (ch === quote) phase = 'word';
    if (ch === escape && quote !== "'") {
      if (i + 1 === chars.length) {
        phase = 'word';
        continue;
      }
      word += ch;
      ch = chars[++i];
    }
    word += ch;
  }
  return words;
}

// Splits the leading `--name[=value]` words off an instruction's arguments. Unlike parseWords
// this one removes quotes and escapes; a bare `--` ends the flags.
export function extractFlags(line: string, escape: string): { rest: string; flags: string[] } {
  const flags: string[] = [];
  let word = '';
  let blankOK = false;
  let phase: 'spaces' | 'word' | 'quote' = 'spaces';
  let quote = '';
  for (let i = 0; i <= line.length; i++) {
    let ch = line[i] ?? '';
    if (phase === 'spaces') {
      if (i === line.length) break;
      if (isSpace(ch)) continue;
      if (ch !== '-' || line[i + 1] !== '-') return { rest: line.slice(i), flags };
      phase = 'word';
    }
    if (i === line.length) {
      if (word !== '--' && (blankOK || word !== '')) flags.push(word);
      break;
    }
    if (phase === 'word') {
      if (isSpace(ch)) {
        phase = 'spaces';
        if (word === '--') return { rest: line.slice(i), flags };
        if (blankOK || word !== '') flags.push(word);
        word = '';
        blankOK = false;
        continue;
      }
      if (ch === "'" || ch === '"') {
        quote = ch;
        blankOK = true;
        phase = 'quote';
        continue;
      }
      if (ch === escape) {
        if (i + 1 === line.length) continue;
        ch = line[++i];
      }
      word += ch;
      continue;
    }
    if (ch === quote) {
      phase = 'word';
      continue;
    }
    if (ch === escape) {
      if (i + 1 === line.length) {
        phase = 'word';
        continue;
      }
      ch = line[++i];
    }
    word += ch;
  }
  return { rest: '', flags };
}

export const NOT_STRING_ARRAY = 'when using JSON array syntax, arrays must be comprised of strings only';

// The exec form: undefined when the text is not a JSON array (the caller falls back to the
// shell form); a JSON array holding anything but strings is an error, as in the reference.
export function parseJSONArray(rest: string): string[] | undefined {
  const trimmed = rest.trimStart();
  if (!trimmed.startsWith('[')) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(trimmed);
  } catch {
    return undefined;
  }
  if (!Array.isArray(parsed)) return undefined;
  if (!parsed.every((v) => typeof v === 'string')) throw new Error(NOT_STRING_ARRAY);
  return parsed;
}

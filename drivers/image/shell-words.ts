// The small piece of Dockerfile word processing that `--change` instructions need: splitting on
// unquoted whitespace, removing quotes and backslash escapes, and `$VAR` / `${VAR}` /
// `${VAR:-default}` / `${VAR:+alt}` expansion against the image's environment so far.

export type EnvLookup = (name: string) => string | undefined;

/** Split at unquoted whitespace, keeping quotes and escapes in the words (expanded later). */
export function splitRawWords(s: string): string[] {
  const words: string[] = [];
  let cur = '';
  let inWord = false;
  let quote: '"' | "'" | null = null;
  for (let i = 0; i < s.length; i++) {
    const c = s[i]!;
    if (quote) {
      cur += c;
      if (c === '\\' && quote === '"' && i + 1 < s.length) cur += s[++i];
      else if (c === quote) quote = null;
      continue;
    }
    if (/\s/.test(c)) {
      if (inWord) words.push(cur);
      cur = '';
      inWord = false;
      continue;
    }
    inWord = true;
    cur += c;
    if (c === '\\' && i + 1 < s.length) cur += s[++i];
    else if (c === '"' || c === "'") quote = c;
  }
  if (inWord) words.push(cur);
  return words;
}

/** Remove quotes and escapes and expand variables in one word (whitespace is kept). */
export function processWord(word: string, env: EnvLookup): string {
  let out = '';
  let i = 0;
  while (i < word.length) {
    const c = word[i]!;
    if (c === "'") {
      const end = word.indexOf("'", i + 1);
      const stop = end < 0 ? word.length : end;
      out += word.slice(i + 1, stop);
      i = stop + 1;
    } else if (c === '"') {
      i++;
      while (i < word.length && word[i] !== '"') {
        if (word[i] === '\\' && i + 1 < word.length && '"\\$`'.includes(word[i + 1]!)) {
          out += word[i + 1];
          i += 2;
        } else if (word[i] === '$') {
          const r = expandVar(word, i, env);
          out += r.value;
          i = r.next;
        } else {
          out += word[i++];
        }
      }
      i++;
    } else if (c === '\\' && i + 1 < word.length) {
      out += word[i + 1];
      i += 2;
    } else if (c === '$') {
      const r = expandVar(word, i, env);
      out += r.value;
      i = r.next;
    } else {
      out += c;
      i++;
    }
  }
  return out;
}

function expandVar(s: string, at: number, env: EnvLookup): { value: string; next: number } {
  const rest = s.slice(at + 1);
  const simple = /^[A-Za-z_][A-Za-z0-9_]*/.exec(rest);
  if (simple) return { value: env(simple[0]) ?? '', next: at + 1 + simple[0].length };
  if (rest.startsWith('{')) {
    const close = rest.indexOf('}');
    if (close > 0) {
      const body = rest.slice(1, close);
      const m = /^([A-Za-z_][A-Za-z0-9_]*)(?::([-+])(.*))?$/s.exec(body);
      if (m) {
        const v = env(m[1]!);
        let value = v ?? '';
        if (m[2] === '-' && !v) value = processWord(m[3]!, env);
        if (m[2] === '+') value = v ? processWord(m[3]!, env) : '';
        return { value, next: at + 2 + close };
      }
    }
  }
  return { value: '$', next: at + 1 };
}

// What Compose does on the client side before a document goes to PUT /stacks/{name}
// (docs/api-extensions.md), for bin/engine: the project name, `${VAR}` interpolation from the
// process environment over the `.env` file, `env_file` merged into `environment`, `configs` and
// `secrets` files read into `{content}`, relative bind sources made absolute against the compose
// file's directory. Pure but for the file reads, which go through `readFile` (tests may pass their own).
import { readFileSync } from 'node:fs';
import { basename, dirname, isAbsolute, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';

export type Env = Readonly<Record<string, string | undefined>>;
type Json = Record<string, unknown>;

/** A problem in the project (a bad template, a missing file, a required variable): exit 1 with its message. */
export class ComposeClientError extends Error {
  override name = 'ComposeClientError';
}

// ---- .env files ---------------------------------------------------------------------------------

/**
 * A `.env` / `env_file`: `KEY=VALUE` lines, `#` comments and blank lines skipped, an optional
 * `export ` prefix; a value in single quotes is literal, in double quotes takes `\n`, `\t`, `\"` and
 * `\\`; an unquoted one is trimmed and loses a ` #` comment. A line `KEY` alone is KEY with no value
 * (undefined), as Compose reads it.
 */
export function parseDotEnv(text: string, where = '.env'): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {};
  const lines = text.replace(/^\uFEFF/, '').split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    let line = lines[i]!.trim();
    if (!line || line.startsWith('#')) continue;
    if (line.startsWith('export ')) line = line.slice(7).trimStart();
    const eq = line.indexOf('=');
    const key = (eq < 0 ? line : line.slice(0, eq)).trim();
    if (!/^[^\s=]+$/.test(key)) throw new ComposeClientError(`${where}:${i + 1}: invalid line: ${lines[i]}`);
    if (eq < 0) {
      out[key] = undefined;
      continue;
    }
    let value = line.slice(eq + 1).trimStart();
    const q = value[0];
    if (q === '"' || q === "'") {
      // A quoted value may run over several lines.
      let body = value.slice(1);
      let end = closingQuote(body, q);
      while (end < 0 && i + 1 < lines.length) {
        body += '\n' + lines[++i];
        end = closingQuote(body, q);
      }
      if (end < 0) throw new ComposeClientError(`${where}: unterminated quoted value for ${key}`);
      body = body.slice(0, end);
      value = q === "'" ? body : body.replace(/\\([nrt"\\$])/g, (_m, c: string) => ({ n: '\n', r: '\r', t: '\t' })[c] ?? c);
    } else {
      const hash = value.search(/\s#/);
      value = (hash < 0 ? value : value.slice(0, hash)).trim();
    }
    out[key] = value;
  }
  return out;
}

function closingQuote(s: string, q: string): number {
  for (let i = 0; i < s.length; i++) {
    if (q === '"' && s[i] === '\\') i++;
    else if (s[i] === q) return i;
  }
  return -1;
}

// ---- interpolation ------------------------------------------------------------------------------

export type Lookup = (name: string) => string | undefined;

const NAME = /^[_a-zA-Z][_a-zA-Z0-9]*/;

/**
 * Compose's interpolation of one string: `$$` is `$`; `$VAR` and `${VAR}` the value (empty, with a
 * warning, when unset); `${VAR:-d}` / `${VAR-d}` d when unset or empty / unset; `${VAR:?e}` /
 * `${VAR?e}` an error when unset or empty / unset; `${VAR:+r}` / `${VAR+r}` r when set and non-empty
 * / set. Defaults and replacements are interpolated themselves. `where` names the value in errors.
 */
export function interpolate(s: string, lookup: Lookup, where: string, warn: (msg: string) => void = () => {}): string {
  if (!s.includes('$')) return s;
  const bad = () => new ComposeClientError(`invalid interpolation format for ${where}: "${s}"; you may need to escape any $ with another $`);
  let out = '';
  let i = 0;
  while (i < s.length) {
    const dollar = s.indexOf('$', i);
    if (dollar < 0) {
      out += s.slice(i);
      break;
    }
    out += s.slice(i, dollar);
    const next = s[dollar + 1];
    if (next === '$') {
      out += '$';
      i = dollar + 2;
      continue;
    }
    if (next === '{') {
      const close = matchingBrace(s, dollar + 2);
      if (close < 0) throw bad();
      out += braced(s.slice(dollar + 2, close), lookup, where, warn, bad);
      i = close + 1;
      continue;
    }
    const name = NAME.exec(s.slice(dollar + 1))?.[0];
    if (!name) throw bad();
    out += valueOf(name, lookup, warn);
    i = dollar + 1 + name.length;
  }
  return out;
}

/** The index of the `}` closing a `${` whose body starts at `from` (nested `${...}` skipped), or -1. */
function matchingBrace(s: string, from: number): number {
  let depth = 1;
  for (let i = from; i < s.length; i++) {
    if (s[i] === '$' && s[i + 1] === '$') i++;
    else if (s[i] === '$' && s[i + 1] === '{') {
      depth++;
      i++;
    } else if (s[i] === '}' && --depth === 0) return i;
  }
  return -1;
}

function valueOf(name: string, lookup: Lookup, warn: (msg: string) => void): string {
  const v = lookup(name);
  if (v === undefined) {
    warn(`The "${name}" variable is not set. Defaulting to a blank string.`);
    return '';
  }
  return v;
}

function braced(body: string, lookup: Lookup, where: string, warn: (msg: string) => void, bad: () => Error): string {
  const name = NAME.exec(body)?.[0];
  if (!name) throw bad();
  const rest = body.slice(name.length);
  if (rest === '') return valueOf(name, lookup, warn);
  const op = /^(:?[-?+])/.exec(rest)?.[1];
  if (!op) throw bad();
  const arg = rest.slice(op.length);
  const v = lookup(name);
  const unset = op.startsWith(':') ? v === undefined || v === '' : v === undefined;
  switch (op.at(-1)) {
    case '-':
      return unset ? interpolate(arg, lookup, where, warn) : v!;
    case '+':
      return unset ? '' : interpolate(arg, lookup, where, warn);
    default: {
      if (!unset) return v!;
      const msg = interpolate(arg, lookup, where, warn);
      throw new ComposeClientError(`required variable ${name} is missing a value${msg ? `: ${msg}` : ''}`);
    }
  }
}

/** Every string value of a parsed document interpolated (keys are not), `where` the dotted path. */
export function interpolateTree(v: unknown, lookup: Lookup, warn: (msg: string) => void = () => {}, path = ''): unknown {
  if (typeof v === 'string') return interpolate(v, lookup, path || '(document)', warn);
  if (Array.isArray(v)) return v.map((x, i) => interpolateTree(x, lookup, warn, `${path}[${i}]`));
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, interpolateTree(x, lookup, warn, path ? `${path}.${k}` : k)]));
  return v;
}

// ---- project name -------------------------------------------------------------------------------

/** Compose's normalisation of a name taken from a directory: lower case, only [a-z0-9_-], no leading `_` or `-`. */
export function normalizeProjectName(s: string): string {
  return s.toLowerCase().replace(/[^a-z0-9_-]/g, '').replace(/^[_-]+/, '');
}

/** `-p`, else COMPOSE_PROJECT_NAME, else the document's `name:`, else the file's directory normalised. */
export function projectName(opts: { explicit?: string; env?: Env; documentName?: unknown; file: string }): string {
  const given = opts.explicit || opts.env?.COMPOSE_PROJECT_NAME || (typeof opts.documentName === 'string' ? opts.documentName : '');
  const name = given || normalizeProjectName(basename(dirname(resolve(opts.file))));
  if (!name) throw new ComposeClientError(`project name must not be empty: use -p NAME or name: in ${opts.file}`);
  return name;
}

// ---- the project --------------------------------------------------------------------------------

export interface LoadOptions {
  /** The compose file's path (its directory is the project directory). */
  file: string;
  /** Its text; read from `file` when absent. */
  text?: string;
  /** The process environment (wins over the .env file). */
  env: Env;
  /** `-p`. */
  projectName?: string;
  /** The .env file to read instead of `<project dir>/.env` (Compose's --env-file); it must exist. */
  envFile?: string;
  /** Reads a file as UTF-8; the default is readFileSync. Throws ENOENT for a missing one. */
  readFile?: (path: string) => string;
  /** The home directory `~/` expands to in paths. */
  home?: string;
  /** Warnings (unset variables). */
  warn?: (msg: string) => void;
}

export interface Project {
  name: string;
  /** The document to send: name set to the project's, client-side work done. */
  document: Json;
  /** The project directory. */
  dir: string;
}

const isObj = (v: unknown): v is Json => !!v && typeof v === 'object' && !Array.isArray(v);

/** Loads a compose file as `engine apply` sends it. */
export function loadProject(opts: LoadOptions): Project {
  const readFile = opts.readFile ?? ((p: string) => readFileSync(p, 'utf8'));
  const file = resolve(opts.file);
  const dir = dirname(file);
  const warn = opts.warn ?? (() => {});
  const read = (path: string, what: string): string => {
    try {
      return readFile(path);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      throw new ComposeClientError(code === 'ENOENT' ? `${what} ${path} not found` : `${what} ${path}: ${(err as Error).message}`);
    }
  };
  const text = opts.text ?? read(file, 'compose file');

  let dotEnv: Record<string, string | undefined> = {};
  const dotEnvPath = opts.envFile ? resolve(opts.envFile) : resolve(dir, '.env');
  let dotEnvText: string | undefined;
  try {
    dotEnvText = readFile(dotEnvPath);
  } catch (err) {
    if (opts.envFile || (err as NodeJS.ErrnoException).code !== 'ENOENT') throw new ComposeClientError(`env file ${dotEnvPath}: ${(err as Error).message}`);
  }
  if (dotEnvText !== undefined) dotEnv = parseDotEnv(dotEnvText, dotEnvPath);
  const lookup: Lookup = (k) => opts.env[k] ?? dotEnv[k];

  let parsed: unknown;
  try {
    parsed = parseYaml(text, { merge: true });
  } catch (err) {
    throw new ComposeClientError(`${file}: invalid YAML: ${(err as Error).message}`);
  }
  if (!isObj(parsed)) throw new ComposeClientError(`${file}: a Compose document must be a mapping`);
  // Extension fields (x-*) are for anchors; Compose ignores them and the daemon refuses unknown keys.
  const stripX = (o: Json): Json => Object.fromEntries(Object.entries(o).filter(([k]) => !k.startsWith('x-')));
  const doc = interpolateTree(stripX(parsed), lookup, warn) as Json;

  const name = projectName({ explicit: opts.projectName, env: opts.env, documentName: doc.name, file });
  const home = opts.home;
  const absolute = (p: string): string => (p === '~' || p.startsWith('~/')) && home ? resolve(home, p.slice(2)) : isAbsolute(p) ? p : resolve(dir, p);

  if (isObj(doc.services)) {
    const services: Json = {};
    for (const [sname, def] of Object.entries(doc.services)) {
      services[sname] = isObj(def) ? service(stripX(def), `services.${sname}`) : def;
    }
    doc.services = services;
  }
  for (const kind of ['configs', 'secrets'] as const) {
    if (!isObj(doc[kind])) continue;
    const out: Json = {};
    for (const [key, def] of Object.entries(doc[kind] as Json)) {
      if (!isObj(def)) {
        out[key] = def;
        continue;
      }
      const { file: f, environment, ...rest } = stripX(def);
      if (typeof f === 'string') out[key] = { ...rest, content: read(absolute(f), `${kind === 'configs' ? 'config' : 'secret'} ${key}: file`) };
      else if (typeof environment === 'string') {
        const v = lookup(environment);
        if (v === undefined) throw new ComposeClientError(`${kind}.${key}: environment variable ${environment} is not set`);
        out[key] = { ...rest, content: v };
      } else out[key] = stripX(def);
    }
    doc[kind] = out;
  }
  for (const kind of ['networks', 'volumes'] as const) {
    if (isObj(doc[kind])) doc[kind] = Object.fromEntries(Object.entries(doc[kind] as Json).map(([k, v]) => [k, isObj(v) ? stripX(v) : v]));
  }
  doc.name = name;
  return { name, document: doc, dir };

  function service(def: Json, where: string): Json {
    const svc: Json = { ...def };
    if (svc.env_file !== undefined) {
      const files = (Array.isArray(svc.env_file) ? svc.env_file : [svc.env_file]) as unknown[];
      const fromFiles: Record<string, string | undefined> = {};
      for (const entry of files) {
        const path = typeof entry === 'string' ? entry : isObj(entry) && typeof entry.path === 'string' ? entry.path : undefined;
        if (path === undefined) throw new ComposeClientError(`${where}.env_file: expected a path or a list of paths`);
        const required = isObj(entry) && entry.required === false ? false : true;
        const abs = absolute(path);
        let content: string;
        try {
          content = readFile(abs);
        } catch (err) {
          if (!required && (err as NodeJS.ErrnoException).code === 'ENOENT') continue;
          throw new ComposeClientError((err as NodeJS.ErrnoException).code === 'ENOENT' ? `env file ${abs} not found` : `env file ${abs}: ${(err as Error).message}`);
        }
        // A KEY with no value takes it from the environment, as in `environment:`.
        for (const [k, v] of Object.entries(parseDotEnv(content, abs))) {
          const value = v ?? lookup(k);
          if (value !== undefined) fromFiles[k] = value;
        }
      }
      const own = svc.environment === undefined ? {} : environmentMap(svc.environment, lookup);
      // A wrong type is left for the daemon to name.
      svc.environment = isObj(own) ? { ...fromFiles, ...own } : own;
      delete svc.env_file;
    } else if (svc.environment !== undefined) {
      svc.environment = environmentMap(svc.environment, lookup);
    }
    if (Array.isArray(svc.volumes)) svc.volumes = svc.volumes.map((v) => volume(v));
    return svc;
  }

  function volume(v: unknown): unknown {
    if (typeof v === 'string') {
      const colon = v.indexOf(':');
      if (colon < 0) return v;
      const src = v.slice(0, colon);
      return isRelativeBind(src) ? `${absolute(src)}${v.slice(colon)}` : v;
    }
    if (isObj(v) && v.type === 'bind' && typeof v.source === 'string' && !isAbsolute(v.source)) return { ...v, source: absolute(v.source) };
    return v;
  }
}

/** `.`, `..`, `./x`, `../x` and `~`, `~/x`: sources Compose reads as host paths relative to something. */
function isRelativeBind(src: string): boolean {
  return src === '.' || src === '..' || src.startsWith('./') || src.startsWith('../') || src === '~' || src.startsWith('~/');
}

/**
 * `environment:` as a map; entries without a value (`- KEY`, `KEY:` with no value) take it from the
 * environment (the process's, then .env), and are left out when it has none, as Compose does.
 */
function environmentMap(env: unknown, lookup: Lookup): unknown {
  const out: Record<string, unknown> = {};
  const put = (k: string, v: unknown) => {
    if (v === null || v === undefined) {
      const found = lookup(k);
      if (found !== undefined) out[k] = found;
    } else out[k] = v;
  };
  if (Array.isArray(env)) {
    for (const e of env) {
      if (typeof e !== 'string') return env; // not ours to judge: the daemon names the wrong type
      const i = e.indexOf('=');
      put(i < 0 ? e : e.slice(0, i), i < 0 ? undefined : e.slice(i + 1));
    }
    return out;
  }
  if (isObj(env)) {
    for (const [k, v] of Object.entries(env)) put(k, v);
    return out;
  }
  return env;
}

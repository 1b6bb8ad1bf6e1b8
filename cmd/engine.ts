// engine: the client of the stack API extension (docs/api-extensions.md).
//   engine [-H HOST] apply [-f FILE] [-p NAME] [--env-file FILE] [--wait] [--timeout S]
//   engine [-H HOST] stack ls | ps NAME | inspect NAME... | diff [-f FILE] [-p NAME] | rm [--volumes] NAME...
// `apply` does Compose's client-side work (lib/compose/client.ts) and PUTs the result as JSON.
// The daemon: -H, else ENGINE_HOST, else DOCKER_HOST, else unix:///var/run/engine.sock.
import { existsSync, readFileSync } from 'node:fs';
import { request } from 'node:http';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_HOST } from '../config/options.ts';
import { ComposeClientError, loadProject } from '../lib/compose/client.ts';
import { ApplyProgress, serviceStates, type ContainerView } from './apply-progress.ts';

class UsageError extends Error {}
/** An error answered by the daemon: printed as `Error response from daemon: MSG`. */
class DaemonError extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

export const USAGE = `Usage: engine [-H HOST] COMMAND

Commands:
  apply [-f FILE] [-p NAME] [--env-file FILE] [--wait] [--timeout SECONDS] [--cluster]
                      Apply a Compose file as a stack (PUT /stacks/NAME); --cluster: as a cluster
                      stack, placed across the nodes of the daemon's cluster store
  stack ls            List stacks
  stack ps NAME       The services of a stack: desired and ready replicas, condition
  stack inspect [--cluster] NAME...
                      The stacks as JSON (--cluster: the cluster stack, its placement and each node's status)
  stack diff [-f FILE] [-p NAME] [--env-file FILE]
                      What an apply of the file would create, recreate or remove (nothing is changed)
  stack rm [--volumes] [--cluster] NAME...
                      Remove stacks (and their named volumes with --volumes; --cluster: from every node)
  completion bash|zsh Print the shell's completion script (contrib/completion/): for bash,
                      \`source <(engine completion bash)\`

Options:
  -H, --host HOST     The daemon: unix:///PATH or tcp://HOST:PORT (default: $ENGINE_HOST, $DOCKER_HOST, ${DEFAULT_HOST})
  -h, --help          This text

apply:
  -f, --file FILE     The Compose file (default: compose.yaml, compose.yml, docker-compose.yaml or
                      docker-compose.yml in the current directory)
  -p, --project-name NAME
                      The stack's name (default: $COMPOSE_PROJECT_NAME, the file's name:, its directory's name)
  --env-file FILE     Variables for interpolation instead of the .env next to the Compose file
  --wait              Wait until every service is Ready; exit 1 if one is Degraded or on timeout
  --timeout SECONDS   How long --wait waits (default 300)
`;

// ---- argv ---------------------------------------------------------------------------------------

interface Flags {
  values: Record<string, string>;
  bools: Set<string>;
  positional: string[];
}

/** Parses `args`: `valued` flags take a value (`-f X` or `--file=X`), `bools` none; both map each spelling to one key. */
function parseFlags(args: string[], valued: Record<string, string>, bools: Record<string, string>, stopAtPositional = false): Flags {
  const out: Flags = { values: {}, bools: new Set(), positional: [] };
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === '--') {
      out.positional.push(...args.slice(i + 1));
      break;
    }
    if (!a.startsWith('-') || a === '-') {
      if (stopAtPositional) {
        out.positional.push(...args.slice(i));
        break;
      }
      out.positional.push(a);
      continue;
    }
    const eq = a.indexOf('=');
    const flag = eq < 0 ? a : a.slice(0, eq);
    if (flag in valued) {
      const v = eq < 0 ? args[++i] : a.slice(eq + 1);
      if (v === undefined) throw new UsageError(`flag needs an argument: ${flag}`);
      out.values[valued[flag]!] = v;
    } else if (flag in bools && eq < 0) {
      out.bools.add(bools[flag]!);
    } else throw new UsageError(`unknown flag: ${a}`);
  }
  return out;
}

// ---- HTTP ---------------------------------------------------------------------------------------

interface Target {
  socketPath?: string;
  host?: string;
  port?: number;
  display: string;
}

function target(host: string): Target {
  if (host.startsWith('unix://')) return { socketPath: host.slice('unix://'.length), display: host };
  const m = /^(?:tcp|http):\/\/(\[[^\]]+\]|[^:/]+)(?::(\d+))?\/?$/.exec(host);
  if (m) return { host: m[1]!.replace(/^\[|\]$/g, ''), port: m[2] ? Number(m[2]) : 2375, display: host };
  if (host.startsWith('/')) return { socketPath: host, display: `unix://${host}` };
  throw new UsageError(`invalid host ${JSON.stringify(host)}: expected unix:///PATH or tcp://HOST:PORT`);
}

async function call(t: Target, method: string, path: string, body?: unknown): Promise<{ status: number; body: unknown }> {
  const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
  const headers: Record<string, string> = { Host: t.socketPath ? 'localhost' : `${t.host}:${t.port}`, 'User-Agent': 'engine-client' };
  if (payload) Object.assign(headers, { 'Content-Type': 'application/json', 'Content-Length': String(payload.length) });
  const res = await new Promise<{ status: number; text: string }>((resolve, reject) => {
    const req = request({ socketPath: t.socketPath, host: t.host, port: t.port, method, path, headers }, (r) => {
      const chunks: Buffer[] = [];
      r.on('data', (c: Buffer) => chunks.push(c));
      r.on('end', () => resolve({ status: r.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
      r.on('error', reject);
    });
    req.on('error', (err) => reject(new Error(`Cannot connect to the daemon at ${t.display}: ${(err as NodeJS.ErrnoException).code ?? err.message}. Is the daemon running?`)));
    req.end(payload);
  });
  let parsed: unknown;
  try {
    parsed = res.text ? JSON.parse(res.text) : undefined;
  } catch {
    parsed = res.text;
  }
  if (res.status >= 400) {
    const msg = parsed && typeof parsed === 'object' && typeof (parsed as { message?: unknown }).message === 'string' ? (parsed as { message: string }).message : res.text.trim() || `HTTP ${res.status}`;
    throw new DaemonError(res.status, msg);
  }
  return { status: res.status, body: parsed };
}

// ---- stacks as the daemon answers them ----------------------------------------------------------

interface Condition {
  type: string;
  status: string;
  reason: string;
  message: string;
  observedGeneration: number;
}
interface ServiceStatus {
  desired: number;
  ready: number;
  conditions: Condition[];
  lastRollout?: { state: string };
}
interface Stack {
  Name: string;
  Generation: number;
  Removing: boolean;
  Document: { services?: Record<string, unknown> };
  Status: { ObservedGeneration: number; Conditions: Condition[]; Services: Record<string, ServiceStatus> };
}

/** The condition that is True (Ready, Degraded or Progressing), or undefined before the first verdict. */
function current(conds: readonly Condition[] | undefined): Condition | undefined {
  for (const type of ['Degraded', 'Ready', 'Progressing']) {
    const c = conds?.find((x) => x.type === type && x.status === 'True');
    if (c) return c;
  }
  return undefined;
}

function stackState(s: Stack): string {
  if (s.Removing) return 'Removing';
  if (s.Status.ObservedGeneration < s.Generation) return 'Pending';
  return current(s.Status.Conditions)?.type ?? 'Pending';
}

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  return rows.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]! + 3))).join('').trimEnd()).join('\n') + '\n';
}

/** The stack's conditions and each service's, as --wait prints them when it gives up. */
function describeConditions(s: Stack): string {
  const lines: string[] = [];
  for (const c of s.Status.Conditions ?? []) lines.push(`  ${c.type}=${c.status}${c.reason ? ` (${c.reason})` : ''}${c.message ? `: ${c.message}` : ''}`);
  for (const [name, svc] of Object.entries(s.Status.Services ?? {})) {
    const c = current(svc.conditions);
    lines.push(`  service ${name}: ${svc.ready}/${svc.desired} ready, ${c ? `${c.type}${c.reason ? ` (${c.reason})` : ''}${c.message ? `: ${c.message}` : ''}` : 'no verdict yet'}`);
  }
  return lines.join('\n');
}

const enc = (name: string) => encodeURIComponent(name);

// ---- commands -----------------------------------------------------------------------------------

const FILE_FLAGS = { '-f': 'file', '--file': 'file', '-p': 'project', '--project-name': 'project', '--env-file': 'env-file' };

/** The Compose file of -f (or the current directory's), loaded as the daemon takes it. */
function readProject(f: Flags, cmd: string) {
  const file = f.values.file ?? ['compose.yaml', 'compose.yml', 'docker-compose.yaml', 'docker-compose.yml'].find((n) => existsSync(n));
  if (!file) throw new UsageError(`${cmd}: no Compose file: use -f FILE (no compose.yaml in the current directory)`);
  return loadProject({
    file,
    env: process.env,
    projectName: f.values.project,
    envFile: f.values['env-file'],
    home: homedir(),
    warn: (m) => process.stderr.write(`WARN: ${m}\n`),
  });
}

/** `stack diff`: what an apply would change (PUT ?dryRun=1), one line per object. */
async function diff(t: Target, args: string[]): Promise<number> {
  const f = parseFlags(args, FILE_FLAGS, {});
  if (f.positional.length) throw new UsageError(`stack diff: unexpected argument ${f.positional[0]}`);
  const project = readProject(f, 'stack diff');
  const res = (await call(t, 'PUT', `/stacks/${enc(project.name)}?dryRun=1`, project.document)).body as { Changes: Array<{ Action: string; Kind: string; Name: string; Service?: string }> };
  if (!res.Changes.length) {
    process.stdout.write(`stack ${project.name}: no changes\n`);
    return 0;
  }
  process.stdout.write(table([['ACTION', 'KIND', 'NAME', 'SERVICE'], ...res.Changes.map((c) => [c.Action, c.Kind, c.Name, c.Service ?? ''])]));
  return 0;
}

async function apply(t: Target, args: string[]): Promise<number> {
  const f = parseFlags(args, { ...FILE_FLAGS, '--timeout': 'timeout' }, { '--wait': 'wait', '-d': 'detach', '--detach': 'detach', '--cluster': 'cluster' });
  const scope = f.bools.has('cluster') ? '?scope=cluster' : '';
  if (f.positional.length) throw new UsageError(`apply: unexpected argument ${f.positional[0]}`);
  let timeoutS = 300;
  if (f.values.timeout !== undefined) {
    timeoutS = Number(f.values.timeout.replace(/s$/, ''));
    if (!Number.isFinite(timeoutS) || timeoutS < 0) throw new UsageError(`apply: invalid --timeout ${f.values.timeout}: expected seconds`);
  }
  const project = readProject(f, 'apply');
  const put = await call(t, 'PUT', `/stacks/${enc(project.name)}${scope}`, project.document);
  const applied = put.body as Stack;
  process.stdout.write(`stack ${project.name} ${put.status === 201 ? 'created' : 'configured'}\n`);
  if (!f.bools.has('wait')) return 0;

  const deadline = Date.now() + timeoutS * 1000;
  const progress = new ApplyProgress(process.stdout);
  // The project's containers (on this daemon; a cluster stack's are on its nodes).
  const containersPath = `/containers/json?all=1&filters=${enc(JSON.stringify({ label: [`com.docker.compose.project=${project.name}`] }))}`;
  let last: Stack | undefined;
  for (;;) {
    last = (await call(t, 'GET', `/stacks/${enc(project.name)}${scope}`)).body as Stack;
    const observed = last.Status.ObservedGeneration >= applied.Generation;
    const state = observed ? current(last.Status.Conditions)?.type : undefined;
    if (observed) {
      const containers = scope ? null : ((await call(t, 'GET', containersPath)).body as ContainerView[]);
      progress.update(serviceStates(last.Status.Services ?? {}, containers));
    }
    if (state === 'Ready') {
      process.stdout.write(`stack ${project.name} ready\n`);
      return 0;
    }
    if (state === 'Degraded') {
      process.stderr.write(`stack ${project.name} is Degraded:\n${describeConditions(last)}\n`);
      return 1;
    }
    if (Date.now() >= deadline) {
      process.stderr.write(`stack ${project.name} not Ready after ${timeoutS}s:\n${describeConditions(last)}\n`);
      return 1;
    }
    await new Promise((r) => setTimeout(r, Math.max(0, Math.min(500, deadline - Date.now()))));
  }
}

async function stack(t: Target, args: string[]): Promise<number> {
  const [sub, ...rest] = args;
  switch (sub) {
    case 'ls':
    case 'list': {
      const f = parseFlags(rest, {}, { '-q': 'quiet', '--quiet': 'quiet' });
      if (f.positional.length) throw new UsageError(`stack ls: unexpected argument ${f.positional[0]}`);
      const stacks = (await call(t, 'GET', '/stacks')).body as Stack[];
      stacks.sort((a, b) => a.Name.localeCompare(b.Name));
      if (f.bools.has('quiet')) process.stdout.write(stacks.map((s) => `${s.Name}\n`).join(''));
      else process.stdout.write(table([['NAME', 'STATUS', 'SERVICES'], ...stacks.map((s) => [s.Name, stackState(s), String(Object.keys(s.Document?.services ?? {}).length)])]));
      return 0;
    }
    case 'ps': {
      const f = parseFlags(rest, {}, {});
      if (f.positional.length !== 1) throw new UsageError('stack ps: expected one stack name');
      const s = (await call(t, 'GET', `/stacks/${enc(f.positional[0]!)}`)).body as Stack;
      const names = [...new Set([...Object.keys(s.Document?.services ?? {}), ...Object.keys(s.Status.Services ?? {})])];
      const rows = names.map((n) => {
        const svc = s.Status.Services?.[n];
        const c = current(svc?.conditions);
        return [n, svc ? String(svc.desired) : '-', svc ? String(svc.ready) : '-', c?.type ?? 'Pending', svc?.lastRollout?.state ?? '-', c?.message ?? ''];
      });
      process.stdout.write(table([['SERVICE', 'DESIRED', 'READY', 'CONDITION', 'ROLLOUT', 'MESSAGE'], ...rows]));
      return 0;
    }
    case 'inspect': {
      const f = parseFlags(rest, {}, { '--cluster': 'cluster' });
      const scope = f.bools.has('cluster') ? '?scope=cluster' : '';
      if (!f.positional.length) throw new UsageError('stack inspect: expected at least one stack name');
      const out: unknown[] = [];
      let failed = false;
      for (const n of f.positional) {
        try {
          out.push((await call(t, 'GET', `/stacks/${enc(n)}${scope}`)).body);
        } catch (err) {
          if (!(err instanceof DaemonError)) throw err;
          process.stderr.write(`Error response from daemon: ${err.message}\n`);
          failed = true;
        }
      }
      process.stdout.write(`${JSON.stringify(out, null, 4)}\n`);
      return failed ? 1 : 0;
    }
    case 'rm':
    case 'remove': {
      const f = parseFlags(rest, {}, { '-v': 'volumes', '--volumes': 'volumes', '--cluster': 'cluster' });
      if (!f.positional.length) throw new UsageError('stack rm: expected at least one stack name');
      let failed = false;
      for (const n of f.positional) {
        try {
          await call(t, 'DELETE', `/stacks/${enc(n)}${f.bools.has('cluster') ? '?scope=cluster' : f.bools.has('volumes') ? '?volumes=1' : ''}`);
          process.stdout.write(`${n}\n`);
        } catch (err) {
          if (!(err instanceof DaemonError)) throw err;
          process.stderr.write(`Error response from daemon: ${err.message}\n`);
          failed = true;
        }
      }
      return failed ? 1 : 0;
    }
    case 'diff':
      return diff(t, rest);
    case undefined:
      throw new UsageError('stack: expected ls, ps, inspect, diff or rm');
    default:
      throw new UsageError(`stack: unknown command ${sub}`);
  }
}

/** `completion bash|zsh`: the script of contrib/completion/ for the shell. */
function completion(args: string[]): number {
  const files: Record<string, string> = { bash: 'bash/engine', zsh: 'zsh/_engine' };
  const file = args.length === 1 ? files[args[0]!] : undefined;
  if (!file) throw new UsageError('completion: expected bash or zsh');
  process.stdout.write(readFileSync(new URL(`../contrib/completion/${file}`, import.meta.url), 'utf8'));
  return 0;
}

export async function main(argv: string[]): Promise<number> {
  try {
    const g = parseFlags(argv, { '-H': 'host', '--host': 'host' }, { '-h': 'help', '--help': 'help' }, true);
    const [cmd, ...args] = g.positional;
    if (g.bools.has('help') || cmd === 'help' || args.includes('--help') || args.includes('-h')) {
      process.stdout.write(USAGE);
      return 0;
    }
    if (cmd === 'completion') return completion(args);
    const t = target(g.values.host || process.env.ENGINE_HOST || process.env.DOCKER_HOST || DEFAULT_HOST);
    switch (cmd) {
      case 'apply':
        return await apply(t, args);
      case 'stack':
      case 'stacks':
        return await stack(t, args);
      case undefined:
        process.stderr.write(USAGE);
        return 2;
      default:
        throw new UsageError(`unknown command ${cmd}`);
    }
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(`engine: ${err.message}\nSee 'engine --help'.\n`);
      return 2;
    }
    if (err instanceof DaemonError) process.stderr.write(`Error response from daemon: ${err.message}\n`);
    else if (err instanceof ComposeClientError) process.stderr.write(`${err.message}\n`);
    else process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    return 1;
  }
}

if (import.meta.url === `file://${process.argv[1]}` || process.argv[1]?.endsWith(join('cmd', 'engine.ts')) || process.argv[1]?.endsWith(join('cmd', 'engine.js'))) {
  process.exitCode = await main(process.argv.slice(2));
}

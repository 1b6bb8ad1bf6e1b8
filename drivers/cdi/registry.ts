// The CDI devices the host offers: every spec file of the spec directories, re-read when they
// change. Modeled on the reference library's Cache: a directory's index is its priority, so a
// later directory overrides an earlier one for the same device; a file that does not load is
// recorded and skipped, never fatal, so one vendor's broken file can't take the others' devices
// away (or stop the daemon).
import { readdir, readFile } from 'node:fs/promises';
import { dirname, extname, join, resolve as resolvePath } from 'node:path';
import { watch, type FSWatcher } from 'chokidar';
import type { Logger } from 'pino';
import { invalidArgument } from '../../lib/errors.ts';
import { parseSpec, qualifiedName, type CdiDevice, type CdiSpec, type ContainerEdits } from './spec.ts';

export const DEFAULT_CDI_SPEC_DIRS = ['/etc/cdi', '/var/run/cdi'];

export interface CdiError {
  path: string;
  message: string;
}

/** The edits of a set of devices, merged in order: every list present. */
export type ResolvedEdits = Required<ContainerEdits>;

interface LoadedSpec {
  path: string;
  priority: number;
  spec: CdiSpec;
}

interface Entry {
  owner: LoadedSpec;
  device: CdiDevice;
}

const SPEC_EXTS = new Set(['.json', '.yaml', '.yml']);
const DEBOUNCE_MS = 100;

const errno = (err: unknown) => (err as NodeJS.ErrnoException)?.code;

export class CdiRegistry {
  readonly #dirs: string[];
  readonly #log: Logger;
  #devices = new Map<string, Entry>();
  #errors: CdiError[] = [];
  // Refreshes run one after another, so an older scan can never overwrite a newer one.
  #chain: Promise<void> = Promise.resolve();
  #watcher: FSWatcher | undefined;
  #timer: NodeJS.Timeout | undefined;

  constructor(dirs: string[], log: Logger) {
    this.#dirs = [...dirs];
    this.#log = log;
  }

  dirs(): string[] {
    return [...this.#dirs];
  }

  errors(): CdiError[] {
    return this.#errors.map((e) => ({ ...e }));
  }

  /** Every known device, qualified, sorted (byte order, as the library's ListDevices). */
  listDevices(): string[] {
    return [...this.#devices.keys()].sort(byteOrder);
  }

  has(name: string): boolean {
    return this.#devices.has(name);
  }

  /** The devices of one kind ("nvidia.com/gpu"), qualified, sorted. */
  namesOfKind(kind: string): string[] {
    return [...this.#devices.values()].filter((e) => e.owner.spec.kind === kind).map((e) => qualifiedName(kind, e.device.name)).sort(byteOrder);
  }

  /** Re-read every spec directory. Never throws: failures land in errors(). */
  refresh(): Promise<void> {
    this.#chain = this.#chain.then(() => this.#load()).catch((err) => this.#log.error({ err }, 'CDI refresh failed'));
    return this.#chain;
  }

  /**
   * The merged edits for the qualified device names: per device, its spec's spec-level edits
   * (once per spec) and then its own. Throws the library's error when any name is unknown.
   */
  resolve(names: string[]): ResolvedEdits {
    const wanted = [...new Set(names)];
    const unknown = wanted.filter((n) => !this.#devices.has(n));
    if (unknown.length) throw invalidArgument(`unresolvable CDI devices ${unknown.join(', ')}`);
    const out: ResolvedEdits = { env: [], deviceNodes: [], mounts: [], hooks: [], additionalGids: [] };
    const specsSeen = new Set<LoadedSpec>();
    for (const name of wanted) {
      const { owner, device } = this.#devices.get(name)!;
      if (!specsSeen.has(owner)) {
        specsSeen.add(owner);
        if (owner.spec.containerEdits) appendEdits(out, owner.spec.containerEdits);
      }
      appendEdits(out, device.containerEdits);
    }
    return out;
  }

  /**
   * Follow the spec directories. A directory that does not exist yet is fine: chokidar waits on
   * its nearest existing ancestor and reports it when it appears. Resolves once watching.
   */
  async watch(): Promise<void> {
    if (this.#watcher) return;
    // Spec files sit directly in a spec dir: nothing below it is watched.
    const watcher = watch(this.#dirs, { ignoreInitial: true, depth: 0 });
    this.#watcher = watcher;
    watcher.on('all', (_event, path) => {
      if (this.#relevant(path)) this.#schedule();
    });
    watcher.on('error', (err) => this.#log.warn({ err }, 'CDI spec directory watch error'));
    await new Promise<void>((done) => watcher.once('ready', () => done()));
  }

  async close(): Promise<void> {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    const watcher = this.#watcher;
    this.#watcher = undefined;
    await watcher?.close();
    await this.#chain;
  }

  /** A spec directory itself (created, removed) or a spec file directly in one. */
  #relevant(path: string): boolean {
    const abs = resolvePath(path);
    const dirs = this.#dirs.map((d) => resolvePath(d));
    return dirs.includes(abs) || (dirs.includes(dirname(abs)) && SPEC_EXTS.has(extname(abs)));
  }

  /** Writers often touch a file several times (create, write, rename): refresh once they settle. */
  #schedule(): void {
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      if (this.#watcher) void this.refresh();
    }, DEBOUNCE_MS);
  }

  async #load(): Promise<void> {
    const errors: CdiError[] = [];
    const specs: LoadedSpec[] = [];
    for (const [priority, dir] of this.#dirs.entries()) {
      for (const path of await specFiles(dir, errors)) {
        const spec = await loadSpec(path, errors);
        if (spec) specs.push({ path, priority, spec });
      }
    }
    this.#devices = indexDevices(specs, errors);
    this.#errors = errors;
    for (const e of errors) this.#log.warn({ path: e.path }, `CDI spec skipped: ${e.message}`);
  }
}

const byteOrder = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** The spec files of a directory, by name. A missing directory has none; others fail into errors. */
async function specFiles(dir: string, errors: CdiError[]): Promise<string[]> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (err) {
    if (errno(err) !== 'ENOENT') errors.push({ path: dir, message: `failed to read CDI Spec directory: ${(err as Error).message}` });
    return [];
  }
  return names.filter((n) => SPEC_EXTS.has(extname(n))).sort(byteOrder).map((n) => join(dir, n));
}

/** One file's spec, or undefined (its error recorded). A file gone since the listing is skipped quietly. */
async function loadSpec(path: string, errors: CdiError[]): Promise<CdiSpec | undefined> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    const code = errno(err);
    if (code !== 'ENOENT' && code !== 'EISDIR') errors.push({ path, message: `failed to read CDI Spec "${path}": ${(err as Error).message}` });
    return undefined;
  }
  try {
    return parseSpec(text, path);
  } catch (err) {
    errors.push({ path, message: (err as Error).message });
    return undefined;
  }
}

/**
 * Qualified name to device. A higher priority (later directory) replaces a lower one. Two files of
 * the same priority defining a device is a conflict: both files get an error and the device is
 * dropped (the library's rule) unless a higher directory defines it — there the library would
 * still drop it, which would let a broken lower directory veto an override, so this one keeps it.
 */
function indexDevices(specs: LoadedSpec[], errors: CdiError[]): Map<string, Entry> {
  const devices = new Map<string, Entry>();
  const conflicts = new Map<string, number>();
  for (const owner of specs) {
    for (const device of owner.spec.devices) {
      const name = qualifiedName(owner.spec.kind, device.name);
      const old = devices.get(name);
      if (old && old.owner.priority === owner.priority) {
        const message = `conflicting device "${name}" (specs "${owner.path}", "${old.owner.path}")`;
        errors.push({ path: owner.path, message }, { path: old.owner.path, message });
        conflicts.set(name, owner.priority);
        continue;
      }
      devices.set(name, { owner, device });
    }
  }
  for (const [name, priority] of conflicts) if (devices.get(name)?.owner.priority === priority) devices.delete(name);
  return devices;
}

function appendEdits(out: ResolvedEdits, e: ContainerEdits): void {
  out.env.push(...(e.env ?? []));
  out.deviceNodes.push(...(e.deviceNodes ?? []));
  out.mounts.push(...(e.mounts ?? []));
  out.hooks.push(...(e.hooks ?? []));
  out.additionalGids.push(...(e.additionalGids ?? []));
}

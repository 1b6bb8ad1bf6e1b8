// The state one build stage carries from instruction to instruction (the reference's
// dispatchState): the current image, the run config that becomes the image's Config, the ARGs.
import type { BuildImage } from '../../lib/ports/build.ts';
import type { BuildArgs } from './build-args.ts';
import type { EnvLookup } from './dockerfile/lex.ts';

export type Config = Record<string, unknown>;

export const DEFAULT_SHELL = ['/bin/sh', '-c'];
export const DEFAULT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

export interface StageState {
  /** The stage's name (`FROM x AS name`), lower case; '' when unnamed. */
  name: string;
  /** The image the next step builds on; null for `FROM scratch` before any step. */
  image: BuildImage | null;
  runConfig: Config;
  maintainer: string;
  /** A CMD was given in this stage (an ENTRYPOINT after it keeps it). */
  cmdSet: boolean;
  args: BuildArgs;
}

export const envList = (cfg: Config): string[] => (Array.isArray(cfg.Env) ? (cfg.Env as string[]) : []);

export function shellOf(cfg: Config): string[] {
  return Array.isArray(cfg.Shell) && cfg.Shell.length ? (cfg.Shell as string[]) : DEFAULT_SHELL;
}

/** Set (or replace) one variable in a Config's Env. */
export function setEnv(cfg: Config, key: string, value: string): void {
  const list = [...envList(cfg)];
  const entry = `${key}=${value}`;
  const i = list.findIndex((e) => e === key || e.startsWith(`${key}=`));
  if (i >= 0) list[i] = entry;
  else list.push(entry);
  cfg.Env = list;
}

function envValue(list: string[], name: string): string | undefined {
  for (let i = list.length - 1; i >= 0; i--) {
    const e = list[i];
    if (e.startsWith(`${name}=`)) return e.slice(name.length + 1);
  }
  return undefined;
}

/** What `$NAME` means in an instruction: the stage's ENV first, then its build args. */
export function expansionEnv(state: StageState): EnvLookup {
  const env = envList(state.runConfig);
  const args = state.args.values();
  return (name) => envValue(env, name) ?? args.get(name);
}

/** Build args with values that the config's Env does not override, as `k=v` (the RUN environment). */
export function buildArgsEnv(state: StageState): string[] {
  const env = envList(state.runConfig);
  const out: string[] = [];
  for (const [k, v] of state.args.values()) if (envValue(env, k) === undefined) out.push(`${k}=${v}`);
  return out;
}

/** The Config a stage starts from: the base image's, with a PATH and without stdin. */
export function initialRunConfig(base: BuildImage | null): Config {
  let cfg: Config = {};
  if (base) {
    try {
      const parsed = JSON.parse(base.rawConfig) as { config?: Config };
      cfg = structuredClone(parsed.config ?? {});
    } catch {
      cfg = {};
    }
  }
  if (envValue(envList(cfg), 'PATH') === undefined) cfg.Env = [...envList(cfg), `PATH=${DEFAULT_PATH}`];
  cfg.OpenStdin = false;
  cfg.StdinOnce = false;
  return cfg;
}

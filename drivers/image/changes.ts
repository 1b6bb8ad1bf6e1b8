// Dockerfile instructions applied to an image config, as `docker import --change` and
// `docker commit --change` allow: parsed by the Dockerfile parser and applied by the builder's
// own dispatch, as the reference's BuildFromConfig does. The set of instructions allowed is the
// reference's; every one is checked before any is applied.
import { BuildArgs } from '../builder/build-args.ts';
import { dispatchMeta, type MetaInstruction } from '../builder/dispatch.ts';
import { parseInstruction } from '../builder/dockerfile/instructions.ts';
import { ShellLex } from '../builder/dockerfile/lex.ts';
import { parseDockerfile } from '../builder/dockerfile/parse.ts';
import type { StageState } from '../builder/state.ts';
import { EngineError, invalidArgument } from '../../lib/errors.ts';

const VALID = new Set(['cmd', 'entrypoint', 'env', 'expose', 'label', 'onbuild', 'stopsignal', 'user', 'volume', 'workdir']);

type Config = Record<string, unknown>;

/**
 * Apply `changes` (one instruction per entry) to a copy of `config` (the Docker `Config` object).
 * Throws InvalidArgument for an instruction that is not allowed or malformed.
 */
export function applyChanges(config: Config, changes: string[]): Config {
  if (changes.every((c) => c.trim() === '')) return structuredClone(config);
  const parsed = parseDockerfile(changes.join('\n'));
  for (const node of parsed.instructions) {
    if (!VALID.has(node.cmd)) throw invalidArgument(`${node.cmd} is not a valid change command`);
  }
  const instructions = parsed.instructions.map((node) => {
    try {
      return parseInstruction(node) as MetaInstruction;
    } catch (err) {
      throw err instanceof EngineError ? err : invalidArgument((err as Error).message);
    }
  });
  const state: StageState = { name: '', image: null, runConfig: structuredClone(config), maintainer: '', cmdSet: false, args: new BuildArgs({}) };
  const lex = new ShellLex(parsed.directives.escape);
  for (const ins of instructions) dispatchMeta(state, ins, lex, () => {});
  return state.runConfig;
}

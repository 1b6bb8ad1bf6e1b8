import { execaSync } from 'execa';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ENGINE_VERSION = '0.1.0';
export const API_VERSION = '1.48';
export const MIN_API_VERSION = '1.24';

const GIT_TIMEOUT_MS = 5_000;

function gitCommit(): string {
  // An installed package has no repository: its launcher says which commit it was built from.
  if (process.env.ENGINE_GIT_COMMIT) return process.env.ENGINE_GIT_COMMIT;
  try {
    // Synchronous (module initialisation), so no AbortSignal; the deadline bounds a hung git.
    return execaSync('git', ['rev-parse', '--short', 'HEAD'], {
      cwd: dirname(fileURLToPath(import.meta.url)),
      stdin: 'ignore',
      stderr: 'ignore',
      timeout: GIT_TIMEOUT_MS,
    }).stdout.trim();
  } catch {
    return 'unknown';
  }
}

export const GIT_COMMIT = gitCommit();
export const BUILD_TIME = new Date().toISOString();

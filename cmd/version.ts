import { execFileSync } from 'node:child_process';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ENGINE_VERSION = '0.1.0';
export const API_VERSION = '1.47';
export const MIN_API_VERSION = '1.24';

function gitCommit(): string {
  try {
    return execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: dirname(fileURLToPath(import.meta.url)), stdio: ['ignore', 'pipe', 'ignore'] })
      .toString()
      .trim();
  } catch {
    return 'unknown';
  }
}

export const GIT_COMMIT = gitCommit();
export const BUILD_TIME = new Date().toISOString();

// bin/engine (the stack client) run as a user runs it: the daemon from `env` only (DOCKER_HOST,
// ENGINE_HOST and COMPOSE_PROJECT_NAME of the test's own environment are dropped).
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { REPO } from './daemon.ts';

export const ENGINE = join(REPO, 'bin', 'engine');

export function runEngine(args: string[], env: Record<string, string> = {}, timeoutMs = 120_000): Promise<{ code: number; stdout: string; stderr: string }> {
  const base = { ...process.env };
  for (const k of ['DOCKER_HOST', 'ENGINE_HOST', 'COMPOSE_PROJECT_NAME']) delete base[k];
  return new Promise((resolve, reject) => {
    const child = spawn(ENGINE, args, { env: { ...base, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code: code ?? 128, stdout, stderr });
    });
  });
}

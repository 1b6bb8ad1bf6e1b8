// The build phase of hack/bench.ts: a 10-step Dockerfile (config steps, COPY and RUN) built with
// the classic builder through the docker CLI, without the cache (cold) and again from it (cached).
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface BuildClient {
  name: string;
  /** `docker ARGS` with extra environment; rejects on a non-zero exit. */
  cli(args: readonly string[], env: Record<string, string>): Promise<unknown>;
  log(msg: string): void;
}

const CLASSIC = { DOCKER_BUILDKIT: '0' };
const TAG = 'engine-bench/build:latest';

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

function writeContext(dir: string, image: string): void {
  mkdirSync(join(dir, 'dir'), { recursive: true });
  writeFileSync(join(dir, 'a.txt'), 'a\n');
  for (let i = 0; i < 20; i++) writeFileSync(join(dir, 'dir', `f${i}.txt`), `${i}\n`.repeat(100));
  writeFileSync(join(dir, 'Dockerfile'), [
    `FROM ${image}`, 'ENV A=1', 'WORKDIR /app', 'COPY a.txt /app/', 'RUN echo one > /one', 'RUN echo two > /two',
    'LABEL x=y', 'COPY dir/ /app/dir/', 'RUN cat /one /two > /both', 'CMD ["cat", "/both"]', '',
  ].join('\n'));
}

/** Median seconds of `runs` cold builds (--no-cache) and of `runs` cached ones. */
export async function buildTimes(c: BuildClient, tmp: string, image: string, runs: number): Promise<{ cold: number; cached: number }> {
  const dir = join(tmp, `build-context-${c.name}`);
  writeContext(dir, image);
  const timed = async (args: string[]) => {
    const t0 = performance.now();
    await c.cli(['build', '-q', '-t', TAG, ...args, dir], CLASSIC);
    return (performance.now() - t0) / 1000;
  };
  try {
    const cold: number[] = [];
    for (let i = 0; i < runs; i++) cold.push(await timed(['--no-cache']));
    const cached: number[] = [];
    for (let i = 0; i < runs; i++) cached.push(await timed([]));
    return { cold: median(cold), cached: median(cached) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
    await c.cli(['rmi', '-f', TAG], {}).catch(() => {});
    await c.cli(['image', 'prune', '-f'], {}).catch((err: unknown) => c.log(`${c.name}: image prune after the build phase: ${String(err)}`));
  }
}

// What most end-to-end files start and end with: a daemon with the busybox test images loaded,
// and a cleanup that removes every container and user network before the daemon's own cleanup.
import { docker, dockerOk, testImages, type TestImages } from './clients.ts';
import { startDaemon, type DaemonHandle, type StartOptions } from './daemon.ts';

export async function startWithImages(opts: StartOptions = {}): Promise<{ d: DaemonHandle; imgs: TestImages }> {
  const d = await startDaemon(opts);
  const imgs = await testImages();
  await dockerOk(() => d)('load', '-i', imgs.dockerArchive);
  return { d, imgs };
}

/** Containers and user-defined networks removed (bridges and rules with them), then the daemon's cleanup. */
export async function removeAllAndCleanup(d: DaemonHandle | undefined): Promise<void> {
  if (!d) return;
  try {
    const ctrs = (await docker(d, ['ps', '-aq'])).stdout.trim().split('\n').filter(Boolean);
    if (ctrs.length) await docker(d, ['rm', '-f', ...ctrs]);
    const nets = (await docker(d, ['network', 'ls', '--filter', 'type=custom', '-q'])).stdout.trim().split('\n').filter(Boolean);
    if (nets.length) await docker(d, ['network', 'rm', ...nets]);
  } finally {
    await d.cleanup();
  }
}

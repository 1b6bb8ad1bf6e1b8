import { startDaemon } from '../harness/daemon.ts';
import { docker, testImages } from '../harness/clients.ts';
import { startRegistry } from './registry.ts';
const d = await startDaemon();
const reg = await startRegistry();
try {
  const imgs = await testImages();
  const run = async (...a: string[]) => { const r = await docker(d, a); console.log(`$ docker ${a.join(' ')} -> ${r.code}\n${r.stdout}${r.stderr}`); return r; };
  await run('load', '-i', imgs.dockerArchive);
  const name = `${reg.hostPort}/test/busybox:v1`;
  await run('tag', imgs.tag, name);
  await run('push', name);
  await run('push', name);
  await run('rmi', name);
  await run('pull', name);
  await run('images', '--no-trunc');
  await run('run', '--rm', '--network', 'none', name, 'echo', 'hello');
  await run('pull', `${reg.hostPort}/test/busybox:nope`);
} finally {
  await reg.stop();
  await d.cleanup();
}

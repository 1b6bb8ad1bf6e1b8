// The exec side of stdin EOF: a client that ends its stdin the moment the hub exists (a piped
// `docker exec -i`) must not have the EOF passed to the shim before the process started, since
// the shim opens an exec's stdin FIFO only at start. The API holds EOF back too
// (AttachSession.closeStdinAfter); this checks the exec reconciler's own hub does.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import type { HubLike, StdioPort, SupervisorPort } from '../../../reconcilers/container/deps.ts';
import { execWorld } from '../exec/exec-world.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function setup(opts: { startFails?: boolean } = {}) {
  const calls: string[] = [];
  const release = Promise.withResolvers<void>();
  const supervisor = {
    execProcess: async () => void calls.push('execProcess'),
    waitTask: () => new Promise(() => {}),
    startProcess: async () => {
      calls.push('startProcess:begin');
      await release.promise;
      calls.push('startProcess:end');
      if (opts.startFails) throw new Error('start failed');
      return { pid: 7 };
    },
    closeIO: async () => void calls.push('closeIO'),
    deleteProcess: async () => ({ exitStatus: 0, exitedAt: null }),
  } as unknown as SupervisorPort;
  const stdio = {
    open: async () => ({ paths: { stdin: '/in', stdout: '/out', stderr: '/err' }, stdin: null, close() {} }),
    hub: (): HubLike => ({
      subscribe: () => () => {},
      ended: new Promise(() => {}),
      writeStdin: () => void calls.push('write'),
      closeStdin: () => void calls.push('hub.closeStdin'),
    }),
    remove: async () => {},
  } as unknown as StdioPort;
  const w = await execWorld(supervisor, stdio);
  const m = w.execs;
  const id = m.create('c1', { User: '', Privileged: false, Tty: false, AttachStdin: true, AttachStdout: true, AttachStderr: true, DetachKeys: '', Env: [], WorkingDir: '', Cmd: ['cat'] });
  return { m, id, calls, release: () => release.resolve(), close: w.close };
}

test('an exec hub passes stdin EOF to the shim only after the process started', async () => {
  const { m, id, calls, release, close } = await setup();
  after(close);
  const started = m.start(id, { tty: false }, (hub) => {
    hub.writeStdin(Buffer.from('hi\n'));
    hub.closeStdin();
  });
  await sleep(20);
  assert.ok(calls.includes('startProcess:begin'));
  assert.ok(!calls.includes('closeIO') && !calls.includes('hub.closeStdin'), `EOF before start: ${calls.join(' ')}`);
  release();
  await started;
  await sleep(20);
  assert.deepEqual(calls, ['write', 'execProcess', 'startProcess:begin', 'startProcess:end', 'hub.closeStdin', 'closeIO']);
});

test('when the start fails, the held EOF closes our end without asking the shim', async () => {
  const { m, id, calls, release, close } = await setup({ startFails: true });
  after(close);
  const started = m.start(id, { tty: false }, (hub) => hub.closeStdin());
  release();
  await assert.rejects(started, /start failed/);
  await sleep(20);
  assert.ok(calls.includes('hub.closeStdin'));
  assert.ok(!calls.includes('closeIO'));
});

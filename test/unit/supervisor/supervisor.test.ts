// Drives a real, private containerd (temp root/state/socket, namespace `enginetest`) through the
// supervisor driver and the stdio driver: run, exit codes, errors, kill, exec, tty, events.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startSupervisor } from '../../../drivers/supervisor/process.ts';
import type { SupervisorProcess } from '../../../drivers/supervisor/process.ts';
import { createSupervisorClient } from '../../../drivers/supervisor/client.ts';
import type { SupervisorClient } from '../../../drivers/supervisor/client.ts';
import { subscribeEvents } from '../../../drivers/supervisor/events.ts';
import type { EventSubscription, ExitEvent } from '../../../drivers/supervisor/events.ts';
import { createRuntimes } from '../../../drivers/supervisor/runtimes.ts';
import { createStdio } from '../../../drivers/stdio/stdio.ts';
import { collect, haveBinaries, killShims, makeRootfs, NS, ociSpec, processSpec, shimsOf, testLogger, until } from './helpers.ts';

const skip = haveBinaries();

describe('supervisor driver against a real containerd', { skip: skip ?? false, timeout: 60_000 }, () => {
  const log = testLogger();
  let dir = '';
  let execRoot = '';
  let rootfs = '';
  let sup: SupervisorProcess | undefined;
  let client: SupervisorClient;
  let events: EventSubscription | undefined;
  const exits: ExitEvent[] = [];
  const ooms: string[] = [];
  const stdio = createStdio(log);
  let runtimes: ReturnType<typeof createRuntimes>;
  let seq = 0;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'engsup-'));
    execRoot = join(dir, 'run');
    rootfs = await makeRootfs(dir);
    sup = await startSupervisor({
      root: join(dir, 'data', 'containerd'),
      state: join(execRoot, 'containerd', 'state'),
      configDir: join(execRoot, 'containerd'),
      log,
    });
    client = createSupervisorClient({ address: sup.address, namespace: NS, log });
    runtimes = createRuntimes({ defaultRuntime: 'stdrt', runtimes: {}, execRoot });
    events = subscribeEvents({ address: sup.address, namespace: NS, log, onExit: (e) => exits.push(e), onOom: (id) => ooms.push(id) });
    await events.ready;
  });

  after(async () => {
    events?.close();
    if (client && sup) {
      // Anything a failed test left: tasks first, then records.
      for (const t of await client.listTasks().catch(() => [])) {
        await client.killTask(t.containerId, 9, { all: true }).catch(() => {});
        await client.waitTask(t.containerId).catch(() => {});
        await client.deleteTask(t.containerId).catch(() => {});
      }
      for (const id of await client.listContainers().catch(() => [])) await client.deleteContainer(id).catch(() => {});
    }
    client?.close();
    const address = sup?.address;
    await sup?.stop();
    if (address) await killShims(address);
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const newId = () => `t${process.pid}-${++seq}`;

  /** Create record + FIFOs + task; returns the handles. */
  async function create(args: string[], o: { tty?: boolean; stdin?: boolean } = {}) {
    const id = newId();
    const fifoDir = join(execRoot, 'supervisor', id);
    await client.createContainer({ id, spec: ociSpec(rootfs, args, { terminal: o.tty }), runtime: runtimes.resolve(''), labels: { 'engine/test': 'true' } });
    const io = await stdio.open({ dir: fifoDir, procId: 'init', stdin: !!o.stdin, tty: !!o.tty });
    const hub = stdio.hub(io);
    const out = collect();
    let endCalled = false;
    hub.subscribe(out.fn, () => (endCalled = true));
    return { id, fifoDir, io, hub, out, endCalled: () => endCalled };
  }

  async function cleanup(id: string, fifoDir: string, io: { close(): void }) {
    await client.deleteTask(id).catch(() => {});
    await client.deleteContainer(id).catch(() => {});
    io.close();
    await stdio.remove(fifoDir, 'init');
  }

  test('version answers', async () => {
    const v = await client.version();
    assert.match(v.version, /\d+\.\d+/);
  });

  test('echo hi: output via the hub, exit 0 via Wait and via the exit event', async () => {
    const c = await create(['echo', 'hi']);
    try {
      const t = await client.createTask({ containerId: c.id, stdout: c.io.paths.stdout, stderr: c.io.paths.stderr, terminal: false });
      assert.ok(t.pid > 0);
      const waiting = client.waitTask(c.id);
      const started = await client.startTask(c.id);
      assert.equal(started.pid, t.pid);
      const res = await waiting;
      assert.equal(res.exitStatus, 0);
      assert.ok(res.exitedAt instanceof Date);
      const ev = await until(() => exits.find((e) => e.containerId === c.id));
      assert.equal(ev.exitStatus, 0);
      assert.equal(ev.id, c.id);
      const st = await client.getTask(c.id);
      assert.equal(st.status, 'STOPPED');
      const d = await client.deleteTask(c.id);
      assert.equal(d.exitStatus, 0);
      await c.hub.ended;
      assert.equal(c.out.text('stdout'), 'hi\n');
      assert.equal(c.endCalled(), true);
      await assert.rejects(client.getTask(c.id), (e: { code?: string }) => e.code === 'NotFound');
    } finally {
      await cleanup(c.id, c.fifoDir, c.io);
    }
    assert.equal(existsSync(c.fifoDir), false);
  });

  test("sh -c 'exit 3' exits 3, stderr kept apart", async () => {
    const c = await create(['sh', '-c', 'echo oops >&2; exit 3']);
    try {
      await client.createTask({ containerId: c.id, stdout: c.io.paths.stdout, stderr: c.io.paths.stderr, terminal: false });
      await client.startTask(c.id);
      const res = await client.waitTask(c.id);
      assert.equal(res.exitStatus, 3);
      const ev = await until(() => exits.find((e) => e.containerId === c.id));
      assert.equal(ev.exitStatus, 3);
      await client.deleteTask(c.id);
      await c.hub.ended;
      assert.equal(c.out.text('stderr'), 'oops\n');
      assert.equal(c.out.text('stdout'), '');
    } finally {
      await cleanup(c.id, c.fifoDir, c.io);
    }
  });

  test('a missing binary fails with the runtime message', async () => {
    const c = await create(['/no/such/binary']);
    try {
      const err = await client
        .createTask({ containerId: c.id, stdout: c.io.paths.stdout, stderr: c.io.paths.stderr, terminal: false })
        .then(() => client.startTask(c.id))
        .then(
          () => null,
          (e: Error) => e,
        );
      assert.ok(err, 'expected createTask or startTask to fail');
      assert.match(err.message, /executable file not found|no such file/);
    } finally {
      await cleanup(c.id, c.fifoDir, c.io);
    }
  });

  test('duplicate container id is AlreadyExists; unknown task is NotFound', async () => {
    const id = newId();
    await client.createContainer({ id, spec: ociSpec(rootfs, ['true']), runtime: runtimes.resolve('stdrt') });
    try {
      await assert.rejects(client.createContainer({ id, spec: ociSpec(rootfs, ['true']), runtime: runtimes.resolve('stdrt') }), (e: { code?: string }) => e.code === 'AlreadyExists');
      await assert.rejects(client.getTask(id), (e: { code?: string }) => e.code === 'NotFound');
    } finally {
      await client.deleteContainer(id);
    }
  });

  test('SIGKILL on sleep 100 gives 137; waitTask honours an AbortSignal', async () => {
    const c = await create(['sleep', '100']);
    try {
      await client.createTask({ containerId: c.id, stdout: c.io.paths.stdout, stderr: c.io.paths.stderr, terminal: false });
      await client.startTask(c.id);
      const ac = new AbortController();
      const aborted = client.waitTask(c.id, undefined, { signal: ac.signal });
      ac.abort();
      await assert.rejects(aborted, (e: { code?: string }) => e.code === 'Canceled');
      assert.equal((await client.getTask(c.id)).status, 'RUNNING');
      const pids = await client.pids(c.id);
      assert.ok(pids.length >= 1);
      assert.ok((await client.listTasks()).some((t) => t.containerId === c.id && t.status === 'RUNNING'));
      await client.pause(c.id);
      assert.equal((await client.getTask(c.id)).status, 'PAUSED');
      await client.resume(c.id);
      await client.killTask(c.id, 9, { all: true });
      const res = await client.waitTask(c.id);
      assert.equal(res.exitStatus, 137);
      await assert.rejects(client.killTask(c.id, 9), (e: { code?: string }) => e.code === 'NotFound');
    } finally {
      await cleanup(c.id, c.fifoDir, c.io);
    }
  });

  test('exec echo x into a running container; stdin via CloseIO', async () => {
    const c = await create(['sleep', '100']);
    const execDir = c.fifoDir;
    try {
      await client.createTask({ containerId: c.id, stdout: c.io.paths.stdout, stderr: c.io.paths.stderr, terminal: false });
      await client.startTask(c.id);

      const xio = await stdio.open({ dir: execDir, procId: 'e1', stdin: false, tty: false });
      const xhub = stdio.hub(xio);
      const xout = collect();
      xhub.subscribe(xout.fn);
      await client.execProcess({ containerId: c.id, execId: 'e1', spec: processSpec(['echo', 'x']), stdout: xio.paths.stdout, stderr: xio.paths.stderr, terminal: false });
      const w = client.waitTask(c.id, 'e1');
      const { pid } = await client.startProcess(c.id, 'e1');
      assert.ok(pid > 0);
      assert.equal((await w).exitStatus, 0);
      const ev = await until(() => exits.find((e) => e.containerId === c.id && e.id === 'e1'));
      assert.equal(ev.exitStatus, 0);
      const d = await client.deleteProcess(c.id, 'e1');
      assert.equal(d.exitStatus, 0);
      await xhub.ended;
      assert.equal(xout.text('stdout'), 'x\n');
      xio.close();
      await stdio.remove(execDir, 'e1');

      // stdin: cat echoes what we write, and exits once CloseIO delivers EOF.
      const cio = await stdio.open({ dir: execDir, procId: 'e2', stdin: true, tty: false });
      const chub = stdio.hub(cio);
      const cout = collect();
      chub.subscribe(cout.fn);
      await client.execProcess({ containerId: c.id, execId: 'e2', spec: processSpec(['cat']), stdin: cio.paths.stdin, stdout: cio.paths.stdout, stderr: cio.paths.stderr, terminal: false });
      const w2 = client.waitTask(c.id, 'e2');
      await client.startProcess(c.id, 'e2');
      chub.writeStdin(Buffer.from('ping\n'));
      await until(() => cout.text() === 'ping\n');
      chub.closeStdin();
      await client.closeIO(c.id, 'e2');
      assert.equal((await w2).exitStatus, 0);
      await client.deleteProcess(c.id, 'e2');
      cio.close();
      await stdio.remove(execDir, 'e2');

      await client.killTask(c.id, 9);
      assert.equal((await client.waitTask(c.id)).exitStatus, 137);
    } finally {
      await cleanup(c.id, c.fifoDir, c.io);
    }
  });

  test('tty mode: one merged stream, resize reaches the pty', async () => {
    const c = await create(['sh', '-c', 'sleep 0.3; stty size; echo err >&2'], { tty: true });
    try {
      assert.equal(c.io.stderr, null);
      assert.equal(c.io.paths.stderr, undefined);
      await client.createTask({ containerId: c.id, stdout: c.io.paths.stdout, terminal: true });
      await client.startTask(c.id);
      await client.resizePty(c.id, undefined, 132, 43);
      assert.equal((await client.waitTask(c.id)).exitStatus, 0);
      await client.deleteTask(c.id);
      await c.hub.ended;
      assert.equal(c.out.text(), '43 132\r\nerr\r\n');
    } finally {
      await cleanup(c.id, c.fifoDir, c.io);
    }
  });

  test('a drop-in runtime (path) is what the shim runs', async () => {
    const wrapper = join(dir, 'logged-runc');
    const argLog = join(dir, 'logged-runc.log');
    await writeFile(wrapper, `#!/bin/sh\necho "$@" >> ${argLog}\nexec runc "$@"\n`, { mode: 0o755 });
    const rt = createRuntimes({ defaultRuntime: 'stdrt', runtimes: { logged: { path: wrapper } }, execRoot });
    const id = newId();
    const fifoDir = join(execRoot, 'supervisor', id);
    await client.createContainer({ id, spec: ociSpec(rootfs, ['echo', 'via-wrapper']), runtime: rt.resolve('logged') });
    const io = await stdio.open({ dir: fifoDir, procId: 'init', stdin: false, tty: false });
    const hub = stdio.hub(io);
    const out = collect();
    hub.subscribe(out.fn);
    try {
      await client.createTask({ containerId: id, stdout: io.paths.stdout, stderr: io.paths.stderr, terminal: false });
      await client.startTask(id);
      assert.equal((await client.waitTask(id)).exitStatus, 0);
      await client.deleteTask(id);
      await hub.ended;
      assert.equal(out.text(), 'via-wrapper\n');
      assert.match(await readFile(argLog, 'utf8'), /create --bundle/);
    } finally {
      await cleanup(id, fifoDir, io);
    }
  });

  test('no shim is left for deleted tasks', async () => {
    await until(async () => (await shimsOf(sup!.address)).length === 0, 5000);
  });
});

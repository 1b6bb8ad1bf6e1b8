// The exec lifecycle machine, walked with the pure transition function (through the machine
// driver's `step`): every legal step as a table, the effect it asks for, and requests its state
// does not accept, which must change nothing and start nothing. Then the exec kind on a real store,
// run by its controller and reconciler over a fake supervisor and stdio: what the port's inspect,
// start and resize answer as the machine moves, and when a record goes.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { fromPromise, initialTransition, toPromise, type SnapshotFrom } from 'xstate';
import { effectActor, step } from '../../../controllers/machine-driver.ts';
import type { SupervisorPort } from '../../../reconcilers/container/deps.ts';
import { execLifecycle, type ExecEffectInput, type ExecStartOutput } from '../../../reconcilers/exec/machine.ts';
import { GC_AFTER_MS } from '../../../reconcilers/exec/reconciler.ts';
import { execWorld } from './exec-world.ts';
import { Containers } from '../../../store/kinds/container.ts';
import { Execs, type ExecConfig } from '../../../store/kinds/exec.ts';
import { FakeStdio } from '../container/fake-world.ts';
import { loose } from '../store/test-kind.ts';

type Snap = SnapshotFrom<typeof execLifecycle>;

/** The machine driven by hand: effects are recorded, their done/error events sent by the test. */
class Sim {
  snap: Snap;
  /** Effects started (by source name), in order. */
  started: string[] = [];

  constructor(state?: string, ctx: { pid?: number; exitCode?: number | null } = {}) {
    this.snap = state
      ? execLifecycle.resolveState({ value: state, context: { id: 'e1', pid: 0, exitCode: null, error: '', errorCode: '', ...ctx } })
      : initialTransition(execLifecycle, { id: 'e1' })[0];
  }

  get state(): string {
    return this.snap.value as string;
  }

  send(type: string, extra: Record<string, unknown> = {}): this {
    const r = step(execLifecycle, this.snap, { type, ...extra } as never, [], 0);
    this.snap = r.snapshot;
    assert.deepEqual(r.timers, [], 'the exec machine has no delays');
    for (const e of r.effects) this.started.push(e.src);
    for (const ev of r.raised) this.send(ev.type);
    return this;
  }

  done(output: ExecStartOutput): this {
    return this.send('xstate.done.actor.startProcess', { output });
  }

  fail(message: string): this {
    return this.send('xstate.error.actor.startProcess', { error: new Error(message) });
  }
}

interface Case {
  name: string;
  from?: string;
  ctx?: { pid?: number; exitCode?: number | null };
  run: (m: Sim) => Sim;
  state: string;
  effects: string[];
  pid?: number;
  exitCode?: number | null;
}

const CASES: Case[] = [
  { name: 'a new exec is created, no pid, no exit code', run: (m) => m, state: 'created', effects: [], pid: 0, exitCode: null },
  { name: 'created + START -> starting, asking for startProcess', run: (m) => m.send('START'), state: 'starting', effects: ['startProcess'], pid: 0, exitCode: null },
  { name: 'starting + done -> running with the pid', run: (m) => m.send('START').done({ pid: 4242 }), state: 'running', effects: ['startProcess'], pid: 4242, exitCode: null },
  {
    name: 'running + EXITED -> exited with its code',
    run: (m) => m.send('START').done({ pid: 7 }).send('EXITED', { exitCode: 3 }),
    state: 'exited',
    effects: ['startProcess'],
    pid: 7,
    exitCode: 3,
  },
  { name: 'EXITED with 0 keeps 0', from: 'running', ctx: { pid: 9 }, run: (m) => m.send('EXITED', { exitCode: 0 }), state: 'exited', effects: [], pid: 9, exitCode: 0 },
  {
    name: 'start failure: command not found -> exited 127',
    run: (m) => m.send('START').fail('exec: "nope": executable file not found in $PATH'),
    state: 'exited',
    effects: ['startProcess'],
    pid: 0,
    exitCode: 127,
  },
  {
    name: 'start failure: no such file or directory -> exited 127',
    run: (m) => m.send('START').fail('exec: "/x": stat /x: no such file or directory'),
    state: 'exited',
    effects: ['startProcess'],
    exitCode: 127,
  },
  { name: 'start failure: permission denied -> exited 126', run: (m) => m.send('START').fail('exec: "/etc": permission denied'), state: 'exited', effects: ['startProcess'], exitCode: 126 },
  { name: 'start failure: anything else -> exited 126', run: (m) => m.send('START').fail('unknown user nobody'), state: 'exited', effects: ['startProcess'], exitCode: 126 },
  { name: 'START in starting is ignored', from: 'starting', run: (m) => m.send('START'), state: 'starting', effects: [] },
  { name: 'START in running is ignored', from: 'running', ctx: { pid: 5 }, run: (m) => m.send('START'), state: 'running', effects: [], pid: 5, exitCode: null },
  { name: 'START in exited is ignored', from: 'exited', ctx: { exitCode: 2 }, run: (m) => m.send('START'), state: 'exited', effects: [], exitCode: 2 },
  { name: 'START after a start failure is ignored', run: (m) => m.send('START').fail('permission denied').send('START'), state: 'exited', effects: ['startProcess'], exitCode: 126 },
  { name: 'EXITED in created is ignored', run: (m) => m.send('EXITED', { exitCode: 1 }), state: 'created', effects: [], exitCode: null },
  { name: 'EXITED in starting is ignored (the exit is sent once running)', run: (m) => m.send('START').send('EXITED', { exitCode: 1 }), state: 'starting', effects: ['startProcess'], exitCode: null },
  { name: 'EXITED in exited keeps the first code', from: 'exited', ctx: { exitCode: 4 }, run: (m) => m.send('EXITED', { exitCode: 1 }), state: 'exited', effects: [], exitCode: 4 },
  { name: 'a late done in exited changes nothing', from: 'exited', ctx: { exitCode: 4 }, run: (m) => m.done({ pid: 1 }), state: 'exited', effects: [], pid: 0, exitCode: 4 },
];

describe('exec lifecycle machine', () => {
  for (const c of CASES) {
    test(c.name, () => {
      const m = c.run(new Sim(c.from, c.ctx));
      assert.equal(m.state, c.state);
      assert.deepEqual(m.started, c.effects);
      if (c.pid !== undefined) assert.equal(m.snap.context.pid, c.pid);
      if (c.exitCode !== undefined) assert.equal(m.snap.context.exitCode, c.exitCode);
    });
  }

  test('only a created exec can START', () => {
    const can = (state: string) => new Sim(state).snap.can({ type: 'START' });
    assert.deepEqual(['created', 'starting', 'running', 'exited'].map(can), [true, false, false, false]);
  });

  test('the provided startProcess runs with the exec id, its output feeds back as the done event', async () => {
    const inputs: ExecEffectInput[] = [];
    const machine = execLifecycle.provide({
      actors: {
        startProcess: fromPromise<ExecStartOutput, ExecEffectInput>(async ({ input }) => {
          inputs.push(input);
          return { pid: 31 };
        }),
      },
    });
    const [snap0] = initialTransition(machine, { id: 'abc' });
    const r = step(machine, snap0, { type: 'START' }, [], 0);
    assert.equal(r.effects.length, 1);
    const eff = r.effects[0]!;
    const actor = effectActor(eff);
    actor.start();
    const output = await toPromise(actor);
    assert.deepEqual(inputs, [{ id: 'abc' }]);
    const r2 = step(machine, r.snapshot, { type: `xstate.done.actor.${eff.id}`, output } as never, [], 0);
    assert.equal(r2.snapshot.value, 'running');
    assert.equal(r2.snapshot.context.pid, 31);
  });
});

// ---- the exec kind, its reconciler and port over fakes --------------------------------------

const CONFIG: ExecConfig = {
  User: '',
  Privileged: false,
  Tty: false,
  AttachStdin: false,
  AttachStdout: true,
  AttachStderr: true,
  DetachKeys: '',
  Env: [],
  WorkingDir: '',
  Cmd: ['sh', '-c', 'exit 3'],
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function world(opts: { failExec?: string } = {}) {
  const calls: string[] = [];
  const exit = Promise.withResolvers<{ exitStatus: number; exitedAt: Date | null }>();
  const execGate = Promise.withResolvers<void>();
  execGate.resolve();
  const state = { execGate, containerUp: true };
  const supervisor = {
    async execProcess(req: { execId: string }) {
      calls.push(`execProcess ${req.execId}`);
      await state.execGate.promise;
      if (opts.failExec) throw new Error(opts.failExec);
    },
    waitTask: () => exit.promise,
    async startProcess() {
      calls.push('startProcess');
      return { pid: 4242 };
    },
    async deleteProcess() {
      calls.push('deleteProcess');
      return { exitStatus: 0, exitedAt: null };
    },
    async resizePty(_c: string, _e: string | undefined, w: number, h: number) {
      calls.push(`resize ${w}x${h}`);
    },
    async closeIO() {},
  } as unknown as SupervisorPort;
  const stdio = new FakeStdio();
  const { execs, store, log, close } = await execWorld(supervisor, stdio, () => state.containerUp);
  const failures = () => log.lines.filter((l) => /reconcile failed/.test(l.msg ?? '')).map((l) => l.msg);
  return { execs, store, calls, exit, stdio, state, close, failures };
}

const running = (store: { list: (k: typeof Execs) => Array<{ name: string; spec: { containerId: string }; status: { phase: string } }> }, c: string) =>
  store.list(Execs).filter((e) => e.spec.containerId === c && e.status.phase !== 'exited').map((e) => e.name);

describe('execs as records: the reconciler and the port on the exec machine', () => {
  test('inspect follows the record: created, running with its pid, exited with its code; a second start is 409', async () => {
    const w = await world();
    try {
      const id = w.execs.create('c1', CONFIG);
      assert.deepEqual(pick(w.execs.inspect(id)), { Running: false, ExitCode: null, Pid: 0 });
      assert.deepEqual(running(w.store, 'c1'), [id], 'created: listed in ExecIDs');
      const hubs: unknown[] = [];
      const { exited } = await w.execs.start(id, { tty: false }, (hub) => hubs.push(hub));
      assert.equal(hubs.length, 1, 'onHub gets the stdio hub');
      assert.deepEqual(pick(w.execs.inspect(id)), { Running: true, ExitCode: null, Pid: 4242 });
      await assert.rejects(w.execs.start(id, { tty: false }), { code: 'Conflict', message: `exec command ${id} is already running` });
      await w.execs.resize(id, 80, 24);
      assert.ok(w.calls.includes('resize 80x24'));
      w.exit.resolve({ exitStatus: 3, exitedAt: new Date() });
      for (const io of [...w.stdio.ios.values()]) w.stdio.end(io.paths.stdout);
      assert.equal(await exited, 3);
      assert.deepEqual(pick(w.execs.inspect(id)), { Running: false, ExitCode: 3, Pid: 4242 });
      assert.deepEqual(running(w.store, 'c1'), []);
      assert.match(w.store.get(Execs, id)!.status.finishedAt, /^\d{4}-/);
      await assert.rejects(w.execs.start(id, { tty: false }), { code: 'Conflict', message: `exec command ${id} has already run` });
      await assert.rejects(w.execs.resize(id, 80, 24), { code: 'Conflict' });
      assert.ok(w.calls.includes('deleteProcess'));
      assert.equal(w.stdio.removed.length, 1);
    } finally {
      await w.close();
    }
  });

  test('a concurrent start while the first is starting is refused as already running', async () => {
    const w = await world();
    try {
      w.state.execGate = Promise.withResolvers<void>();
      const id = w.execs.create('c1', CONFIG);
      const first = w.execs.start(id, { tty: false });
      assert.deepEqual(pick(w.execs.inspect(id)), { Running: true, ExitCode: null, Pid: 0 }, 'asked to start counts as running');
      await assert.rejects(w.execs.start(id, { tty: false }), { message: `exec command ${id} is already running` });
      w.state.execGate.resolve();
      await first;
      assert.equal(w.calls.filter((c) => c.startsWith('execProcess')).length, 1);
    } finally {
      await w.close();
    }
  });

  test('a start that fails throws its error and leaves the exec exited with 127, cleaned up', async () => {
    const w = await world({ failExec: 'exec: "nope": executable file not found in $PATH' });
    try {
      const id = w.execs.create('c1', { ...CONFIG, Cmd: ['nope'] });
      await assert.rejects(w.execs.start(id, { tty: false }), /executable file not found/);
      assert.deepEqual(pick(w.execs.inspect(id)), { Running: false, ExitCode: 127, Pid: 0 });
      assert.ok(w.calls.includes('deleteProcess'));
      assert.equal(w.stdio.ios.size, 0, 'its stdio is closed');
      await assert.rejects(w.execs.start(id, { tty: false }), { message: `exec command ${id} has already run` });
    } finally {
      await w.close();
    }
  });

  test('a created exec of a container that stopped cannot start and goes; all go with the container; an unknown id is 404', async () => {
    const w = await world();
    try {
      const id = w.execs.create('c1', CONFIG);
      w.state.containerUp = false;
      await assert.rejects(w.execs.start(id, { tty: false }), { code: 'Conflict', message: 'container c1 is not running' });
      w.store.updateStatus(loose(Containers), 'c1', () => ({ phase: 'exited' }));
      await w.store.waitFor(Execs, id, (r) => !r, { timeoutMs: 2000 });
      assert.throws(() => w.execs.inspect(id), { code: 'NotFound', message: `No such exec instance: ${id}` });
      w.state.containerUp = true;
      w.store.updateStatus(loose(Containers), 'c1', () => ({ phase: 'running' }));
      const kept = w.execs.create('c1', CONFIG);
      w.store.delete(loose(Containers), 'c1');
      await w.store.waitFor(Execs, kept, (r) => !r, { timeoutMs: 2000 });
      assert.equal(w.store.list(Execs).length, 0);
    } finally {
      await w.close();
    }
  });

  test('a start asked of an exec whose container no longer runs is terminal: exited with the reason, not retried', async () => {
    const w = await world();
    try {
      const id = w.execs.create('c1', CONFIG);
      w.state.containerUp = false;
      // Written straight into the spec (the port refuses it before writing).
      w.store.updateSpec(Execs, id, (s) => ({ ...s, desired: 'started', start: { tty: false, consoleSize: null } }));
      const r = await w.store.waitFor(Execs, id, (x) => x?.status.phase === 'exited', { timeoutMs: 2000 });
      assert.deepEqual({ exitCode: r!.status.exitCode, error: r!.status.error, errorCode: r!.status.errorCode }, { exitCode: 126, error: 'container c1 is not running', errorCode: 'Conflict' });
      await sleep(300);
      assert.deepEqual(w.failures(), ['reconcile failed permanently'], 'no retry with backoff');
      assert.ok(!w.calls.some((c) => c.startsWith('execProcess')));
    } finally {
      await w.close();
    }
  });

  test('a healthcheck probe\'s exec is deleted as soon as it ended, its exit code still answered', async () => {
    const w = await world();
    try {
      const id = w.execs.create('c1', CONFIG, { probe: true });
      const { exited } = await w.execs.start(id, { tty: false });
      w.exit.resolve({ exitStatus: 3, exitedAt: new Date() });
      for (const io of [...w.stdio.ios.values()]) w.stdio.end(io.paths.stdout);
      assert.equal(await exited, 3);
      await w.store.waitFor(Execs, id, (r) => !r, { timeoutMs: 2000 });
    } finally {
      await w.close();
    }
  });

  test('an exec that ended is kept GC_AFTER_MS for inspect (a requeue), then deleted', async () => {
    const w = await world();
    try {
      const id = w.execs.create('c1', CONFIG);
      const { exited } = await w.execs.start(id, { tty: false });
      w.exit.resolve({ exitStatus: 0, exitedAt: new Date() });
      for (const io of [...w.stdio.ios.values()]) w.stdio.end(io.paths.stdout);
      await exited;
      await sleep(20);
      assert.ok(w.store.get(Execs, id), 'still there to inspect');
      // Ended long ago: the next reconcile deletes it.
      w.store.updateStatus(Execs, id, (s) => ({ ...s, finishedAt: new Date(Date.now() - GC_AFTER_MS - 1000).toISOString() }));
      w.store.updateSpec(Execs, id, (s) => ({ ...s, config: { ...s.config, Env: ['X=1'] } }));
      await w.store.waitFor(Execs, id, (r) => !r, { timeoutMs: 2000 });
    } finally {
      await w.close();
    }
  });
});

function pick(i: { Running: boolean; ExitCode: number | null; Pid: number }) {
  return { Running: i.Running, ExitCode: i.ExitCode, Pid: i.Pid };
}

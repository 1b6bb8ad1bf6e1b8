// Exec events as dockerd 20.10 logs them (probed here): on the container, `exec_create: CMD ARGS`,
// `exec_start: CMD ARGS` and `exec_die` with its exitCode, each with the execID; a healthcheck
// probe's too (made and started at once, its record gone with its end); none when a start failed.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { EventRecorder, type EngineEvent } from '../../../api/events/recorder.ts';
import { newId } from '../../../lib/ids.ts';
import { Containers } from '../../../store/kinds/container.ts';
import { type ExecConfig, Execs, newExecStatus } from '../../../store/kinds/exec.ts';
import { openStore } from '../../../store/store.ts';
import { containerRecord } from '../container/fake-world.ts';

const config = (Cmd: string[]): ExecConfig => ({ User: '', Privileged: false, Tty: false, AttachStdin: false, AttachStdout: true, AttachStderr: true, DetachKeys: '', Env: [], WorkingDir: '', Cmd });

test('exec_create, exec_start, exec_die with the execID; a probe made started and gone at its end; a failed start dies silently', () => {
  const dir = mkdtempSync(join(tmpdir(), 'engine-exec-events-'));
  const store = openStore(join(dir, 'engine.db'));
  const recorder = new EventRecorder(store);
  try {
    const cid = newId();
    const { spec, status } = containerRecord(cid);
    store.create(Containers, cid, { ...spec, name: '/web' }, status);
    const seen: EngineEvent[] = [];
    recorder.subscribe((e) => seen.push(e));

    const x = newId();
    store.create(Execs, x, { containerId: cid, config: config(['sh', '-c', 'exit 3']), desired: 'created' }, newExecStatus());
    store.updateSpec(Execs, x, (s) => ({ ...s, desired: 'started', start: { tty: false, consoleSize: null } }));
    store.updateStatus(Execs, x, (s) => ({ ...s, phase: 'running', pid: 42 }));
    store.updateStatus(Execs, x, (s) => ({ ...s, phase: 'exited', exitCode: 3 }));
    store.delete(Execs, x);

    const probe = newId();
    store.create(Execs, probe, { containerId: cid, config: config(['true']), desired: 'started', probe: true }, newExecStatus());
    store.updateStatus(Execs, probe, (s) => ({ ...s, phase: 'running', pid: 43 }));
    store.transaction(() => {
      store.updateStatus(Execs, probe, (s) => ({ ...s, phase: 'exited', exitCode: 0 }));
      store.delete(Execs, probe);
    });

    const failed = newId();
    store.create(Execs, failed, { containerId: cid, config: config(['nope']), desired: 'created' }, newExecStatus());
    store.updateSpec(Execs, failed, (s) => ({ ...s, desired: 'started' }));
    store.updateStatus(Execs, failed, (s) => ({ ...s, phase: 'exited', exitCode: 127, error: 'not found' }));

    assert.deepEqual(seen.map((e) => [e.Type, e.Action, e.Actor.ID, e.Actor.Attributes.execID, e.Actor.Attributes.exitCode, e.Actor.Attributes.name]), [
      ['container', 'exec_create: sh -c exit 3', cid, x, undefined, 'web'],
      ['container', 'exec_start: sh -c exit 3', cid, x, undefined, 'web'],
      ['container', 'exec_die', cid, x, '3', 'web'],
      ['container', 'exec_create: true ', cid, probe, undefined, 'web'],
      ['container', 'exec_start: true ', cid, probe, undefined, 'web'],
      ['container', 'exec_die', cid, probe, '0', 'web'],
      ['container', 'exec_create: nope ', cid, failed, undefined, 'web'],
      ['container', 'exec_start: nope ', cid, failed, undefined, 'web'],
    ]);
    assert.equal(seen[0]!.Actor.Attributes.image, 'fake');
  } finally {
    recorder.close();
    store.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

// engine apply --wait's progress: each service's state from the stack's status and the project's
// containers, printed as plain lines when they change, or rewritten in place on a terminal.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ApplyProgress, serviceState, serviceStates, type ContainerView } from '../../../cmd/apply-progress.ts';

const ready = [{ type: 'Ready', status: 'True' }];
const progressing = [{ type: 'Progressing', status: 'True' }];
const ctr = (service: string, State: string, Status = ''): ContainerView => ({ Labels: { 'com.docker.compose.service': service }, State, Status });

test('a service goes Waiting, Creating, Created, Starting, Started or Healthy, then Ready; Degraded with its message', () => {
  assert.equal(serviceState({ desired: 1, ready: 0, waitingOn: 'db', conditions: progressing }, []), 'Waiting for db');
  assert.equal(serviceState({ desired: 1, ready: 0, conditions: progressing }, []), 'Creating');
  assert.equal(serviceState({ desired: 1, ready: 0, conditions: progressing }, [ctr('web', 'created')]), 'Created');
  assert.equal(serviceState({ desired: 2, ready: 0, conditions: progressing }, [ctr('web', 'running', 'Up 1 second'), ctr('web', 'created')]), 'Starting');
  assert.equal(serviceState({ desired: 1, ready: 0, conditions: progressing }, [ctr('web', 'running', 'Up 1 second (health: starting)')]), 'Starting');
  assert.equal(serviceState({ desired: 1, ready: 0, conditions: progressing }, [ctr('web', 'running', 'Up 1 second')]), 'Started');
  assert.equal(serviceState({ desired: 1, ready: 1, conditions: progressing }, [ctr('web', 'running', 'Up 3 seconds (healthy)')]), 'Healthy');
  assert.equal(serviceState({ desired: 1, ready: 1, conditions: ready }, [ctr('web', 'running', 'Up 3 seconds (healthy)')]), 'Ready');
  assert.equal(serviceState({ desired: 1, ready: 0, conditions: [{ type: 'Degraded', status: 'True', message: 'exited with code 1' }] }, []), 'Degraded: exited with code 1');
  // A cluster stack's containers are on its nodes: the counts alone.
  assert.equal(serviceState({ desired: 3, ready: 1, conditions: progressing }, null), 'Starting 1/3');
  assert.deepEqual(serviceStates({ web: { desired: 1, ready: 0, conditions: progressing }, db: { desired: 1, ready: 1, conditions: ready } }, [ctr('web', 'created'), ctr('db', 'running')]), [['web', 'Created'], ['db', 'Ready']]);
});

test('plain output: a line for each change only; a terminal gets the block rewritten in place', () => {
  const plain: string[] = [];
  const p = new ApplyProgress({ write: (s) => plain.push(s) });
  p.update([['web', 'Creating'], ['db', 'Creating']]);
  p.update([['web', 'Creating'], ['db', 'Started']]);
  p.update([['web', 'Ready'], ['db', 'Started']]);
  assert.equal(plain.join(''), 'Service web  Creating\nService db  Creating\nService db  Started\nService web  Ready\n');

  const tty: string[] = [];
  const t = new ApplyProgress({ write: (s) => tty.push(s), isTTY: true });
  t.update([['web', 'Creating'], ['db', 'Creating']]);
  t.update([['web', 'Creating'], ['db', 'Creating']]);
  t.update([['web', 'Ready'], ['db', 'Creating']]);
  assert.equal(tty.length, 2, 'nothing redrawn without a change');
  assert.equal(tty[0], '\x1b[2K Service web  Creating\n\x1b[2K Service db   Creating\n');
  assert.equal(tty[1], '\x1b[2A\x1b[2K Service web  Ready\n\x1b[2K Service db   Creating\n');
});

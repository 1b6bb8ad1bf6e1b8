// A task's discrete generic resources name CDI devices of its node (issue (15 of 21), 4): the unit
// it was given is the device of that class and name, injected as a CDI device request.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { claimDevices, containerBodyOf } from '../../../lib/swarm/task-container.ts';
import type { NodeTask } from '../../../lib/swarm/task.ts';

const DEVICES = ['example.com/gpu=GPU-aaa', 'example.com/gpu=GPU-bbb', 'other.org/fpga=F1'];

test('a unit names the device of its kind and name; counts and unknown units name none', () => {
  assert.deepEqual(claimDevices([{ kind: 'gpu', unit: 'GPU-bbb' }, { kind: 'fpga', unit: 'F1' }], DEVICES), ['example.com/gpu=GPU-bbb', 'other.org/fpga=F1']);
  assert.deepEqual(claimDevices([{ kind: 'gpu', count: 2 }, { kind: 'gpu', unit: 'GPU-zzz' }], DEVICES), []);
});

test('the container body asks for the task\'s devices through CDI, beside DOCKER_RESOURCE_GPU', () => {
  const t = { ID: 't1', Spec: { ContainerSpec: { Image: 'img' } }, Claims: [{ kind: 'gpu', unit: 'GPU-aaa' }] } as unknown as NodeTask;
  const body = containerBodyOf(t, undefined, [], DEVICES) as { Env: string[]; HostConfig: { DeviceRequests?: unknown } };
  assert.ok(body.Env.includes('DOCKER_RESOURCE_GPU=GPU-aaa'));
  assert.deepEqual(body.HostConfig.DeviceRequests, [{ Driver: 'cdi', DeviceIDs: ['example.com/gpu=GPU-aaa'] }]);
  assert.equal((containerBodyOf(t, undefined, [], []) as { HostConfig: Record<string, unknown> }).HostConfig.DeviceRequests, undefined);
});

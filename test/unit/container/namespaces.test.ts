// Joining another container's namespaces in the OCI spec: the namespace path of its run, /dev/shm
// of a shareable IPC donor, the reference's refusals.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { joinNamespaceOf } from '../../../reconcilers/container/namespaces.ts';
import type { ContainerResource } from '../../../store/kinds/container.ts';

const ctr = (id: string, name: string, ipc = 'private') => ({ name: id, spec: { name: `/${name}`, hostConfig: { IpcMode: ipc } } }) as unknown as ContainerResource;
const spec = () => ({ linux: { namespaces: [{ type: 'mount' }, { type: 'pid' }, { type: 'ipc' }] }, mounts: [{ destination: '/dev/shm', type: 'tmpfs' }] }) as Record<string, unknown>;
const ctx = {
  containers: [ctr('a'.repeat(64), 'donor', 'shareable'), ctr('b'.repeat(64), 'private'), ctr('c'.repeat(64), 'stopped', 'shareable')],
  runOf: (id: string) => (id.startsWith('c') ? undefined : { pid: id.startsWith('a') ? 100 : 200 }),
  shmDirOf: (id: string) => `/data/containers/${id}/shm`,
};

test('pid and ipc joins: the donor run\'s namespace; IPC also binds its host-side /dev/shm', () => {
  const s = spec();
  joinNamespaceOf(s, 'pid', 'donor', ctx);
  joinNamespaceOf(s, 'ipc', 'aaaa', ctx);
  assert.deepEqual((s.linux as { namespaces: unknown[] }).namespaces, [{ type: 'mount' }, { type: 'pid', path: '/proc/100/ns/pid' }, { type: 'ipc', path: '/proc/100/ns/ipc' }]);
  assert.deepEqual(s.mounts, [{ destination: '/dev/shm', type: 'bind', source: `/data/containers/${'a'.repeat(64)}/shm`, options: ['rbind', 'rprivate'] }]);
});

test('refusals: a private IPC donor, a stopped or unknown container', () => {
  assert.throws(() => joinNamespaceOf(spec(), 'ipc', 'private', ctx), /non-shareable IPC \(hint: use IpcMode:shareable for the donor container\)/);
  assert.throws(() => joinNamespaceOf(spec(), 'pid', 'stopped', ctx), /cannot join PID of a non running container: stopped/);
  assert.throws(() => joinNamespaceOf(spec(), 'network', 'nosuch', ctx), /cannot join network of a non running container: nosuch/);
  assert.throws(() => joinNamespaceOf(spec(), 'ipc', 'donor', { ...ctx, shmDirOf: undefined }), /non-shareable IPC/);
});

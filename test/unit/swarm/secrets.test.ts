// Secrets and configs: their specs checked as swarmkit checks them, a secret's data sealed under the
// data key (opening only with that key, for that object), the list filters, the services using one.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { EngineError } from '../../../lib/errors.ts';
import { open, seal } from '../../../lib/swarm/seal.ts';
import { checkObjectSpec, objectView } from '../../../lib/swarm/swarm-object.ts';
import { makeDataKey } from '../../../lib/swarm/unlock-key.ts';
import { usersOf, type ServiceSpec } from '../../../lib/swarm/service-spec.ts';
import { objectFilter } from '../../../api/secrets/routes.ts';

const refused = (fn: () => unknown, message: string) => assert.throws(fn, (e: unknown) => e instanceof EngineError && e.code === 'InvalidArgument' && e.message === message);
const b64 = (s: string | Buffer) => Buffer.from(s).toString('base64');

describe('secrets and configs', () => {
  test('sealed data opens only with its data key and for its own object; never in the clear', () => {
    const key = makeDataKey();
    const plain = Buffer.from('pässwörd ✓ \u0000 bytes');
    const sealed = seal(key, plain, 'secret/a');
    assert.ok(!sealed.includes(plain.toString('base64')));
    assert.ok(open(key, sealed, 'secret/a').equals(plain));
    assert.throws(() => open(makeDataKey(), sealed, 'secret/a'), /does not open/);
    assert.throws(() => open(key, sealed, 'secret/b'), /does not open/, 'moved to another object');
    assert.notEqual(seal(key, plain, 'secret/a'), sealed, 'a fresh nonce each time');
  });

  test('specs: names and sizes as swarmkit checks them; a config keeps its data, a secret shows none', () => {
    refused(() => checkObjectSpec('secret', { Data: b64('x') }), 'rpc error: code = InvalidArgument desc = name must be provided');
    for (const name of ['bad name!', '-x', 'x-', 'a'.repeat(65)]) {
      refused(() => checkObjectSpec('secret', { Name: name, Data: b64('x') }), 'rpc error: code = InvalidArgument desc = invalid name, only 64 [a-zA-Z0-9-_.] characters allowed, and the start and end character must be [a-zA-Z0-9]');
    }
    refused(() => checkObjectSpec('secret', { Name: 's' }), 'rpc error: code = InvalidArgument desc = secret data must be larger than 0 and less than 512000 bytes');
    refused(() => checkObjectSpec('secret', { Name: 's', Data: b64(Buffer.alloc(512000)) }), 'rpc error: code = InvalidArgument desc = secret data must be larger than 0 and less than 512000 bytes');
    refused(() => checkObjectSpec('config', { Name: 's' }), 'rpc error: code = InvalidArgument desc = config data must be larger than 0 and less than 1024000 bytes');
    refused(() => checkObjectSpec('secret', { Name: 's', Data: 'not base64!' }), 'illegal base64 data at input byte 3');
    refused(() => checkObjectSpec('secret', { Name: 's', Data: 'aGVsbG8' }), 'illegal base64 data at input byte 4');
    refused(() => checkObjectSpec('secret', { Name: 's', Labels: 'a=b' }), 'json: cannot unmarshal string into Go struct field SecretSpec.Labels of type map[string]string');
    refused(() => checkObjectSpec('config', { Name: 7 }), 'json: cannot unmarshal number into Go struct field ConfigSpec.Name of type string');
    refused(() => checkObjectSpec('secret', { Name: 's', Data: 7 }), 'json: cannot unmarshal number into Go struct field SecretSpec.Data of type []uint8');
    refused(() => checkObjectSpec('secret', []), 'json: cannot unmarshal array into Go value of type swarm.SecretSpec');
    refused(() => checkObjectSpec('secret', { Name: 'bad name!' }), 'rpc error: code = InvalidArgument desc = invalid name, only 64 [a-zA-Z0-9-_.] characters allowed, and the start and end character must be [a-zA-Z0-9]');
    assert.equal(checkObjectSpec('secret', { Name: 's', Data: b64(Buffer.alloc(511999)) }).data.length, 511999);
    const s = checkObjectSpec('secret', { Name: 'a.b_c-1', Labels: { k: 'v' }, Data: b64('top') });
    assert.deepEqual(s.spec, { Name: 'a.b_c-1', Labels: { k: 'v' } });
    const c = checkObjectSpec('config', { Name: 'cfg', Data: b64('ünïcode') });
    assert.equal(Buffer.from(c.spec.Data!, 'base64').toString(), 'ünïcode');
    assert.deepEqual(objectView({ ID: 'i', CreatedAt: 't', UpdatedAt: 't', Spec: c.spec }, 7), { ID: 'i', Version: { Index: 7 }, CreatedAt: 't', UpdatedAt: 't', Spec: { Name: 'cfg', Labels: {}, Data: c.spec.Data } });
  });

  test('filters: id and name prefixes, exact names, labels; another key refused', () => {
    const x = (ID: string, Name: string, Labels: Record<string, string> = {}) => ({ object: { ID, CreatedAt: '', UpdatedAt: '', Spec: { Name, Labels } }, version: 1 });
    const all = [x('abc', 'web-key', { env: 'prod' }), x('abd', 'web'), x('xyz', 'db')];
    const names = (f: Record<string, string[]>) => all.filter(objectFilter('secret', JSON.stringify(f))).map((o) => o.object.Spec.Name);
    assert.deepEqual(names({ name: ['WEB'] }), ['web-key', 'web'], 'a name prefix in any case');
    assert.deepEqual(names({ names: ['Web'] }), ['web'], 'an exact name in any case');
    assert.deepEqual(names({ id: ['ab'] }), ['web-key', 'web']);
    assert.deepEqual(names({ id: ['AB'] }), [], 'an id prefix: its case counts');
    assert.deepEqual(names({ label: ['env=prod'] }), ['web-key']);
    assert.throws(() => objectFilter('secret', JSON.stringify({ nope: ['x'] })), /Invalid filter 'nope'/);
    assert.throws(() => objectFilter('config', JSON.stringify({ names: ['x'] })), /Invalid filter 'names'/, 'names: a secrets\' filter only');
  });

  test('the services using a secret or a config', () => {
    const svc = (Name: string, cs: Record<string, unknown>) => ({ Spec: { Name, TaskTemplate: { ContainerSpec: cs } } as unknown as Pick<ServiceSpec, 'Name' | 'TaskTemplate'> });
    const users = usersOf([svc('a', { Secrets: [{ SecretID: 's1' }, { SecretID: 's2' }] }), svc('b', { Secrets: [{ SecretID: 's1' }], Configs: [{ ConfigID: 'c1' }] })], 'secret');
    assert.deepEqual(Object.fromEntries(users), { s1: ['a', 'b'], s2: ['a'] });
  });
});

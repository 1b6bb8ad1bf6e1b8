// The API's route table: static before parameter before wildcard, backtracking, decoding.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BadUrlError, Router } from '../../../api/server/router.ts';

function table(): Router<string> {
  const r = new Router<string>(16);
  for (const [m, p] of [
    ['GET', '/containers/json'],
    ['GET', '/containers/:id/json'],
    ['DELETE', '/containers/:id'],
    ['DELETE', '/containers/:parent/:alias'],
    ['GET', '/images/json'],
    ['GET', '/images/*'],
    ['GET', '/networks'],
    ['GET', '/networks/'],
    ['GET', '/networks/:id'],
    ['GET', '/swarm/*'],
  ]) r.add(m, p, `${m} ${p}`);
  return r;
}

test('static segments win over parameters, parameters over the wildcard', () => {
  const r = table();
  assert.deepEqual(r.find('GET', '/containers/json'), { handler: 'GET /containers/json', params: {} });
  assert.deepEqual(r.find('GET', '/containers/abc/json'), { handler: 'GET /containers/:id/json', params: { id: 'abc' } });
  assert.deepEqual(r.find('GET', '/images/json'), { handler: 'GET /images/json', params: {} });
  assert.deepEqual(r.find('GET', '/images/library/busybox:1/json'), { handler: 'GET /images/*', params: { '*': 'library/busybox:1/json' } });
  assert.deepEqual(r.find('GET', '/networks/'), { handler: 'GET /networks/', params: {} });
  assert.deepEqual(r.find('GET', '/networks/n1'), { handler: 'GET /networks/:id', params: { id: 'n1' } });
  assert.deepEqual(r.find('GET', '/swarm'), null);
  assert.deepEqual(r.find('GET', '/swarm/'), { handler: 'GET /swarm/*', params: { '*': '' } });
});

test('one position may carry different parameter names in different routes', () => {
  const r = table();
  assert.deepEqual(r.find('DELETE', '/containers/web'), { handler: 'DELETE /containers/:id', params: { id: 'web' } });
  assert.deepEqual(r.find('DELETE', '/containers/web/db'), { handler: 'DELETE /containers/:parent/:alias', params: { parent: 'web', alias: 'db' } });
});

test('no match: unknown paths, methods, empty or overlong parameters, extra segments', () => {
  const r = table();
  assert.equal(r.find('GET', '/nope'), null);
  assert.equal(r.find('POST', '/containers/json'), null);
  assert.equal(r.find('GET', '/containers//json'), null);
  assert.equal(r.find('GET', `/containers/${'a'.repeat(17)}/json`), null);
  assert.equal(r.find('GET', '/containers/a/json/more'), null);
  assert.equal(r.find('GET', 'containers/json'), null);
  assert.throws(() => r.add('GET', '/containers/json', 'again'), /duplicate route/);
});

test('parameter values are percent-decoded; a bad escape is a BadUrlError', () => {
  const r = table();
  assert.deepEqual(r.find('GET', '/containers/a%20b/json')?.params, { id: 'a b' });
  assert.deepEqual(r.find('GET', '/images/foo%2Fbar/json')?.params, { '*': 'foo/bar/json' });
  assert.throws(() => r.find('GET', '/containers/%E0%A4%A/json'), BadUrlError);
});

// POST /auth bodies: checked as the reference's decoder checks a types.AuthConfig; a refused
// one never reaches the registry.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import pino from 'pino';
import { createApp } from '../../../api/app.ts';
import { authRoutes } from '../../../api/distribution/auth-routes.ts';
import type { RegistryAuth } from '../../../api/distribution/port.ts';

function setup() {
  const calls: Array<[string, RegistryAuth]> = [];
  const distribution = {
    checkAuth: async (server: string, auth: RegistryAuth) => {
      calls.push([server, auth]);
      return { Status: 'Login Succeeded' as const };
    },
    inspectDistribution: async () => { throw new Error('not used'); },
    search: async () => [],
  };
  const app = createApp({ log: pino({ level: 'silent' }), version: { api: '1.47', min: '1.24' }, plugins: [authRoutes({ distribution })] });
  const post = (payload: string) => app.inject({ method: 'POST', url: '/auth', headers: { 'content-type': 'application/json' }, payload });
  return { app, post, calls };
}

test('a body of the wrong type is 400 with the decoder\'s message and no login is tried', async () => {
  const { app, post, calls } = setup();
  const refused: Array<[string, string]> = [
    ['{"username":5}', 'json: cannot unmarshal number into Go struct field AuthConfig.username of type string'],
    ['{"Password":true}', 'json: cannot unmarshal bool into Go struct field AuthConfig.password of type string'],
    ['{"serveraddress":["r"]}', 'json: cannot unmarshal array into Go struct field AuthConfig.serveraddress of type string'],
    ['[]', 'json: cannot unmarshal array into Go value of type types.AuthConfig'],
    ['"u:p"', 'json: cannot unmarshal string into Go value of type types.AuthConfig'],
  ];
  for (const [payload, message] of refused) {
    const r = await post(payload);
    assert.equal(r.statusCode, 400, payload);
    assert.equal(r.json().message, message, payload);
  }
  assert.deepEqual(calls, []);
  await app.close();
});

test('good bodies log in: keys in any case, empty and null fields left out', async () => {
  const { app, post, calls } = setup();
  const r = await post(JSON.stringify({ Username: 'u', PASSWORD: 'p', serveraddress: 'r.example:5000', email: '', identitytoken: null, other: 1 }));
  assert.equal(r.statusCode, 200, r.body);
  assert.deepEqual(r.json(), { IdentityToken: '', Status: 'Login Succeeded' });
  assert.deepEqual(calls, [['r.example:5000', { username: 'u', password: 'p', serveraddress: 'r.example:5000' }]]);
  await app.close();
});

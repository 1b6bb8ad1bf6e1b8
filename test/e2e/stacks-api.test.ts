// The stack API extension (docs/api-extensions.md) through the daemon's socket: a Compose document
// as YAML or JSON is stored as a stack and inspected with its conditions; bad names and documents
// are 400s naming the path and write nothing; DELETE removes it through the stack reconciler.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { apiRequest, type ApiAnswer } from './harness/clients.ts';
import { startDaemon, type DaemonHandle } from './harness/daemon.ts';

const call = apiRequest;

const SHOP = `
services:
  web:
    image: busybox
    command: ["httpd", "-f"]
    ports: ["8080:80"]
    deploy:
      replicas: 2
  once:
    image: busybox
    restart: "no"
`;

describe('stacks API', () => {
  let d: DaemonHandle;
  before(async () => {
    d = await startDaemon({});
  });
  after(() => d?.cleanup());

  test('PUT a YAML document: 201, then inspect and list with the conditions at its generation; PUT again: 200', async () => {
    const put = await call(d, 'PUT', '/v1.41/stacks/shop', SHOP, 'application/yaml');
    assert.equal(put.status, 201, JSON.stringify(put.body));
    assert.equal(put.body.Name, 'shop');
    assert.equal(put.body.Document.services.web.deploy.replicas, 2);
    let got: ApiAnswer = { status: 0, text: '', body: undefined };
    for (let i = 0; i < 50; i++) {
      got = await call(d, 'GET', '/stacks/shop');
      if (got.body?.Status?.ObservedGeneration === got.body?.Generation) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal(got.status, 200);
    assert.equal(got.body.Status.ObservedGeneration, got.body.Generation);
    assert.equal(got.body.Status.Services.web.desired, 2);
    assert.deepEqual(got.body.Status.Conditions.map((c: { type: string }) => c.type).sort(), ['Degraded', 'Progressing', 'Ready']);
    const list = await call(d, 'GET', '/stacks');
    assert.deepEqual(list.body.map((s: { Name: string }) => s.Name), ['shop']);
    const again = await call(d, 'PUT', '/stacks/shop', JSON.stringify({ services: { web: { image: 'busybox' } } }));
    assert.equal(again.status, 200);
    assert.equal(again.body.Generation, got.body.Generation + 1);
  });

  test('bad names and documents: 400 naming the path, nothing written', async () => {
    const cases: Array<[string, string, string, RegExp]> = [
      ['/stacks/Bad_Name', '{"services":{"a":{"image":"b"}}}', 'application/json', /invalid project name "Bad_Name"/],
      ['/stacks/bad', 'services:\n  web:\n    image: b\n    deploy:\n      replicas: two\n', 'application/yaml', /^services\.web\.deploy\.replicas: expected integer$/],
      ['/stacks/bad', '{"services":{"web":{"image":"b","privileged":true}}}', 'application/json', /^services\.web\.privileged: key not supported by this daemon$/],
      ['/stacks/bad', 'services: [unclosed', 'application/yaml', /^invalid YAML: /],
      ['/stacks/bad', '{"services":', 'application/json', /^invalid JSON: /],
      ['/stacks/bad', '{"services":{"web":{"image":"b","networks":["nowhere"]}}}', 'application/json', /^services\.web\.networks: service "web" refers to undefined network nowhere$/],
    ];
    for (const [path, body, type, want] of cases) {
      const r = await call(d, 'PUT', path, body, type);
      assert.equal(r.status, 400, `${path} ${body}`);
      assert.match(r.body.message, want);
    }
    assert.equal((await call(d, 'GET', '/stacks/bad')).status, 404);
    assert.equal((await call(d, 'GET', '/stacks/bad')).body.message, 'no such stack: bad');
  });

  test('DELETE: 204 once the reconciler removed it; 404 after', async () => {
    assert.equal((await call(d, 'DELETE', '/stacks/shop?volumes=1')).status, 204);
    assert.equal((await call(d, 'GET', '/stacks/shop')).status, 404);
    assert.equal((await call(d, 'DELETE', '/stacks/shop')).status, 404);
  });
});

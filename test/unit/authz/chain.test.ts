// The chain against fake plugins on unix sockets: activation once, the reference's message
// (base64 bytes, omitempty), allow, deny (403 wording), a failing plugin (500 wording), order,
// and a live list.
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { AuthzChain, encodeMessage } from '../../../api/authz/chain.ts';
import { errorCode } from '../../../lib/errors.ts';
import { removeDir, startFakePlugin, type FakePlugin } from './fake-plugin.ts';

describe('authz chain', () => {
  let a: FakePlugin;
  let b: FakePlugin;
  let chain: AuthzChain;
  const msg = { RequestMethod: 'GET', RequestUri: '/v1.47/info', RequestHeaders: { 'User-Agent': 'x' } };
  before(async () => {
    a = await startFakePlugin('alpha');
    b = await startFakePlugin('beta', a.dir);
  });
  after(async () => {
    await a.close();
    await b.close();
    removeDir(a.dir);
  });
  beforeEach(() => {
    a.calls.length = 0;
    b.calls.length = 0;
    a.answer = b.answer = () => ({ body: { Allow: true } });
    a.implements = b.implements = ['authz'];
    chain = new AuthzChain(['alpha', 'beta', 'alpha'], { dirs: { socketDir: a.dir, specDirs: [] } });
  });

  test('encodes as Go does: bytes in base64, empty fields left out', () => {
    assert.deepEqual(encodeMessage({ RequestMethod: 'POST', RequestUri: '/x', RequestBody: Buffer.from('{"a":1}'), RequestHeaders: {}, User: '', ResponseStatusCode: 0 }), {
      RequestMethod: 'POST',
      RequestUri: '/x',
      RequestBody: Buffer.from('{"a":1}').toString('base64'),
    });
  });

  test('all allow: each plugin activated once, asked in order, with the plugin content type', async () => {
    assert.deepEqual(chain.names, ['alpha', 'beta']);
    await chain.authorizeRequest(msg);
    await chain.authorizeResponse({ ...msg, ResponseStatusCode: 200 });
    assert.deepEqual(a.calls.map((c) => c.path), ['/Plugin.Activate', '/AuthZPlugin.AuthZReq', '/AuthZPlugin.AuthZRes']);
    assert.deepEqual(b.calls.map((c) => c.path), ['/Plugin.Activate', '/AuthZPlugin.AuthZReq', '/AuthZPlugin.AuthZRes']);
    assert.equal(a.calls[1].headers.accept, 'application/vnd.docker.plugins.v1.2+json');
    assert.equal(a.calls[1].headers['content-type'], 'application/vnd.docker.plugins.v1.2+json');
    assert.deepEqual(a.calls[1].body, msg);
    assert.equal(a.calls[2].body.ResponseStatusCode, 200);
  });

  test('a denial is a 403 naming the plugin; later plugins are not asked', async () => {
    a.answer = () => ({ body: { Allow: false, Msg: 'no way' } });
    await assert.rejects(chain.authorizeRequest(msg), (err: Error) => {
      assert.equal(err.message, 'authorization denied by plugin alpha: no way');
      assert.equal(errorCode(err), 'PermissionDenied');
      return true;
    });
    assert.equal(b.calls.length, 0);
  });

  test('a plugin answering an error status: 500 wording with the method and its Err', async () => {
    b.answer = () => ({ status: 500, body: { Err: 'backend down' } });
    await assert.rejects(chain.authorizeRequest(msg), (err: Error) => {
      assert.equal(err.message, 'plugin beta failed with error: AuthZPlugin.AuthZReq: backend down');
      assert.equal(errorCode(err), 'Internal');
      return true;
    });
    b.answer = () => ({ status: 404, body: 'not here' });
    await assert.rejects(chain.authorizeResponse(msg), { message: 'plugin beta failed with error: AuthZPlugin.AuthZRes: not here' });
  });

  test('a plugin that does not implement authz, or is gone, fails; activation is tried again', async () => {
    a.implements = ['VolumeDriver'];
    await assert.rejects(chain.authorizeRequest(msg), { message: 'plugin alpha failed with error: Plugin does not implement the requested driver' });
    a.implements = ['authz'];
    await chain.authorizeRequest(msg);
    const gone = new AuthzChain(['gamma'], { dirs: { socketDir: a.dir, specDirs: [] } });
    await assert.rejects(gone.authorizeRequest(msg), { message: 'plugin gamma failed with error: could not find plugin gamma in v1 plugin registry: plugin not found' });
  });

  test('validate names the missing plugin; set replaces the list', async () => {
    assert.throws(() => chain.validate(['alpha', 'gamma']), { message: 'failed to validate authorization plugin: could not find plugin gamma in v1 plugin registry: plugin not found' });
    chain.validate(['beta']);
    chain.set(['beta']);
    await chain.authorizeRequest(msg);
    assert.equal(a.calls.length, 0);
    chain.set([]);
    assert.equal(chain.active, false);
    await chain.authorizeRequest(msg);
  });
});

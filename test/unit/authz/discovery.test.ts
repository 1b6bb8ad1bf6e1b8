// Plugin discovery: sockets before spec files, NAME and NAME/NAME, .spec URLs and .json specs,
// a spec file named by its path, and the reference's error for a plugin that is nowhere.
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { discover, pluginDirs, PluginNotFoundError } from '../../../api/authz/discovery.ts';

describe('authz plugin discovery', () => {
  const root = mkdtempSync(join(tmpdir(), 'authz-disc-'));
  const socketDir = join(root, 'run');
  const etc = join(root, 'etc');
  const lib = join(root, 'lib');
  for (const d of [socketDir, etc, lib, join(socketDir, 'nested')]) mkdirSync(d, { recursive: true });
  const dirs = { socketDir, specDirs: [etc, lib] };
  const servers: ReturnType<typeof createServer>[] = [];
  const listen = (path: string) =>
    new Promise<void>((r) => {
      const s = createServer();
      servers.push(s);
      s.listen(path, () => r());
    });
  after(() => {
    for (const s of servers) s.close();
    rmSync(root, { recursive: true, force: true });
  });

  test('env overrides the search directories only when set', () => {
    assert.deepEqual(pluginDirs({}), { socketDir: '/run/engine/plugins', specDirs: ['/etc/engine/plugins', '/usr/lib/engine/plugins'] });
    assert.deepEqual(pluginDirs({ ENGINE_PLUGINS_SOCKET_DIR: '/a', ENGINE_PLUGINS_SPEC_DIRS: '/b:/c' }), { socketDir: '/a', specDirs: ['/b', '/c'] });
  });

  test('NAME.sock and NAME/NAME.sock in the socket directory', async () => {
    await listen(join(socketDir, 'flat.sock'));
    await listen(join(socketDir, 'nested', 'nested.sock'));
    assert.equal(discover('flat', dirs).addr, `unix://${join(socketDir, 'flat.sock')}`);
    assert.equal(discover('nested', dirs).addr, `unix://${join(socketDir, 'nested', 'nested.sock')}`);
  });

  test('a regular file named NAME.sock is no socket', () => {
    writeFileSync(join(socketDir, 'plain.sock'), '');
    assert.throws(() => discover('plain', dirs), PluginNotFoundError);
  });

  test('NAME.spec holds a URL; NAME.json an address and TLS settings (no CA file: not verified)', () => {
    writeFileSync(join(etc, 'tcpplug.spec'), 'tcp://127.0.0.1:9999\n');
    assert.deepEqual(discover('tcpplug', dirs), { name: 'tcpplug', addr: 'tcp://127.0.0.1:9999', tls: { insecureSkipVerify: true } });
    mkdirSync(join(lib, 'jsonplug'));
    writeFileSync(join(lib, 'jsonplug', 'jsonplug.json'), JSON.stringify({ Name: 'jsonplug', Addr: 'https://example.test:443', TLSConfig: { CertFile: '/c', KeyFile: '/k' } }));
    assert.deepEqual(discover('jsonplug', dirs), { name: 'jsonplug', addr: 'https://example.test:443', tls: { caFile: undefined, certFile: '/c', keyFile: '/k', insecureSkipVerify: true } });
    writeFileSync(join(etc, 'noscheme.spec'), '/just/a/path');
    assert.throws(() => discover('noscheme', dirs), /Unknown protocol/);
  });

  test('a spec file by its absolute path', () => {
    const p = join(root, 'elsewhere.spec');
    writeFileSync(p, 'unix:///tmp/x.sock');
    assert.equal(discover(p, dirs).addr, 'unix:///tmp/x.sock');
  });

  test('missing everywhere: the reference error', () => {
    assert.throws(() => discover('nope', dirs), { message: 'could not find plugin nope in v1 plugin registry: plugin not found' });
  });
});

// Runtimes as records (issue 39 items 4-5): a runtime from the config file with path + runtimeArgs
// runs containers through its wrapper; the shims on PATH are runtimes with no configuration;
// `runtimes` and `default-runtime` reload on SIGHUP (docker info follows, an added runtime runs at
// once); a container on a runtime removed by a reload keeps running, and a later start of one is
// refused with the engine's message.
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { docker, dockerOk, dockerode, type TestImages } from './harness/clients.ts';
import type { DaemonHandle } from './harness/daemon.ts';
import { removeAllAndCleanup, startWithImages } from './harness/setup.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('runtimes', () => {
  let d: DaemonHandle;
  let imgs: TestImages;
  const dk = dockerOk(() => d);
  const tmp = mkdtempSync('/tmp/engine-e2e-rt-');
  const marker = join(tmp, 'marker.sh');
  const markFile = join(tmp, 'marked');
  const addedMark = join(tmp, 'added');
  // The runtimeArgs come first: `--mark FILE` is taken by the script, the rest goes to runc.
  writeFileSync(marker, '#!/bin/sh\nif [ "$1" = "--mark" ]; then touch "$2"; shift 2; fi\nexec runc "$@"\n');
  chmodSync(marker, 0o755);
  const fileWith = (o: Record<string, unknown>) => JSON.stringify(o);

  before(async () => {
    ({ d, imgs } = await startWithImages({ daemonJson: { runtimes: { marked: { path: marker, runtimeArgs: ['--mark', markFile] } } } }));
  });
  after(async () => {
    await removeAllAndCleanup(d);
    rmSync(tmp, { recursive: true, force: true });
  });

  const runtimesOf = async () => Object.keys(JSON.parse(await dk('info', '--format', '{{json .Runtimes}}')) as Record<string, unknown>).sort();
  const defaultRuntime = () => dk('info', '--format', '{{.DefaultRuntime}}');

  /** SIGHUP with `file` as the config, polled until `done` (a reload is applied asynchronously). */
  async function reload(file: string, done: () => Promise<boolean>): Promise<void> {
    writeFileSync(d.configFile, file);
    process.kill(d.pid, 'SIGHUP');
    for (let i = 0; i < 100; i++) {
      if (await done()) return;
      await sleep(100);
    }
    assert.fail(`reload not applied: ${d.logs().slice(-2000)}`);
  }

  test('a file runtime with path + runtimeArgs runs a container through its wrapper', async () => {
    assert.equal(existsSync(markFile), false);
    assert.equal(await dk('run', '--rm', '--runtime', 'marked', imgs.tag, 'echo', 'hi'), 'hi');
    assert.ok(existsSync(markFile), 'the runtime wrapper ran with its runtimeArgs');
    assert.ok(existsSync(join(d.dataRoot, 'runtimes', 'marked')), 'the runtimeArgs wrapper lives under the data root');
    const id = await dk('create', '--runtime', 'marked', imgs.tag, 'true');
    assert.equal(await dk('inspect', '-f', '{{.HostConfig.Runtime}}', id), 'marked');
    await dk('rm', id);
  });

  test('docker info lists the configured runtime and the shims on PATH; a shim runs with no configuration', async () => {
    const names = await runtimesOf();
    for (const n of ['stdrt', 'runc', 'marked', 'io.containerd.runc.v2']) assert.ok(names.includes(n), `${n} in ${names.join(',')}`);
    assert.equal(await defaultRuntime(), 'stdrt');
    assert.equal(await dk('run', '--rm', '--runtime', 'io.containerd.runc.v2', imgs.tag, 'echo', 'shim'), 'shim');
    const r = await docker(d, ['create', '--runtime', 'nope', imgs.tag, 'true']);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /unknown or invalid runtime name: nope/);
  });

  test('SIGHUP: an added runtime and a new default apply at once; a removed runtime keeps its containers running and refuses a later start', async () => {
    // Two containers on `marked`: one kept running, one stopped.
    const running = await dk('run', '-d', '--runtime', 'marked', imgs.tag, 'sleep', '300');
    const stopped = await dk('create', '--runtime', 'marked', imgs.tag, 'true');
    await dk('start', stopped);
    assert.equal(await dk('wait', stopped), '0');

    await reload(
      fileWith({ 'default-runtime': 'added', runtimes: { marked: { path: marker, runtimeArgs: ['--mark', markFile] }, added: { path: marker, runtimeArgs: ['--mark', addedMark] } } }),
      async () => (await defaultRuntime()) === 'added',
    );
    assert.ok((await runtimesOf()).includes('added'));
    assert.equal(await dk('run', '--rm', '--runtime', 'added', imgs.tag, 'echo', 'added'), 'added');
    assert.ok(existsSync(addedMark), 'the added runtime ran');
    // The default: a container created with no --runtime is on `added`.
    const byDefault = await dk('create', imgs.tag, 'true');
    assert.equal(await dk('inspect', '-f', '{{.HostConfig.Runtime}}', byDefault), 'added');
    await dk('rm', byDefault);

    await reload(fileWith({ 'default-runtime': 'added', runtimes: { added: { path: marker, runtimeArgs: ['--mark', addedMark] } } }), async () => !(await runtimesOf()).includes('marked'));
    assert.equal(await dk('inspect', '-f', '{{.State.Running}}', running), 'true', 'a container on a removed runtime keeps running');
    assert.equal(await dk('exec', running, 'echo', 'still'), 'still');
    const r = await docker(d, ['start', stopped]);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /unknown or invalid runtime name: marked/);
    const apiErr = await dockerode(d).getContainer(stopped).start().then(() => null, (e: { statusCode?: number; message: string }) => e);
    assert.equal(apiErr?.statusCode, 400, 'a 400, as the reference');
    const created = await docker(d, ['create', '--runtime', 'marked', imgs.tag, 'true']);
    assert.notEqual(created.code, 0);
    assert.match(created.stderr, /unknown or invalid runtime name: marked/);
    await dk('rm', '-f', running, stopped);
  });

  test('runtimeType + options: the runc shim with the configured BinaryName runs a container', async () => {
    const typedMark = join(tmp, 'typed');
    const binary = join(tmp, 'typed-runc.sh');
    writeFileSync(binary, `#!/bin/sh\ntouch ${typedMark}\nexec runc "$@"\n`);
    chmodSync(binary, 0o755);
    await reload(
      fileWith({ 'default-runtime': 'added', runtimes: { added: { path: marker, runtimeArgs: ['--mark', addedMark] }, typed: { runtimeType: 'io.containerd.runc.v2', options: { BinaryName: binary } } } }),
      async () => (await runtimesOf()).includes('typed'),
    );
    assert.equal(await dk('run', '--rm', '--runtime', 'typed', imgs.tag, 'echo', 'typed'), 'typed');
    assert.ok(existsSync(typedMark), 'the shim ran the BinaryName given in options');
  });

  test('runtimeType (a shim by path) + options TypeUrl and ConfigPath reach the shim as runtimeoptions.v1.Options', async () => {
    // Shims such as gVisor's or Kata's read these; none is installed here, and the runc shim does
    // not take this options type: its refusal, naming the type it was given, shows what was passed.
    const toml = join(tmp, 'runc-options.toml');
    writeFileSync(toml, 'BinaryName = "runc"\n');
    await reload(
      fileWith({
        'default-runtime': 'added',
        runtimes: {
          added: { path: marker, runtimeArgs: ['--mark', addedMark] },
          conf: { runtimeType: '/usr/bin/containerd-shim-runc-v2', options: { TypeUrl: 'io.containerd.runc.v1.Options', ConfigPath: toml } },
        },
      }),
      async () => (await runtimesOf()).includes('conf'),
    );
    const r = await docker(d, ['run', '--rm', '--runtime', 'conf', imgs.tag, 'echo', 'conf']);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /type with url runtimeoptions\.v1\.Options: not found/);
  });
});

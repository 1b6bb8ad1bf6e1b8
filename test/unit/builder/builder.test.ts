// The builder over a fake backend: config instructions, ARG rules, the cache, --target, the
// labels option, ONBUILD triggers and the refusals, without containers or layers.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { after, test } from 'node:test';
import { pino } from 'pino';
import type { BuildBackend, BuildImage, BuildOptions } from '../../../lib/ports/build.ts';
import type { LoadedImage } from '../../../lib/ports/images.ts';
import { createBuilder } from '../../../drivers/builder/builder.ts';
import { sameStep } from '../../../drivers/builder/cache.ts';
import { encodeHeader, endOfArchive, padding } from '../../../drivers/storage/tar-writer.ts';
import type { LayerStore } from '../../../drivers/storage/types.ts';

const tmp = mkdtempSync(join(tmpdir(), 'builder-test-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

function tarOf(files: Record<string, string>): Readable {
  const parts: Buffer[] = [];
  for (const [name, text] of Object.entries(files)) {
    const data = Buffer.from(text);
    parts.push(encodeHeader({ name, type: 'file', mode: 0o644, uid: 0, gid: 0, size: data.length, mtime: 0 }), data, padding(data.length));
  }
  parts.push(endOfArchive());
  return Readable.from([Buffer.concat(parts)]);
}

const BASE: BuildImage = {
  id: `sha256:${'b'.repeat(64)}`,
  rawConfig: JSON.stringify({ config: { Env: ['PATH=/bin'], Cmd: ['sh'], OnBuild: null }, rootfs: { type: 'layers', diff_ids: [] }, history: [] }),
  diffIds: [], chainId: null, size: 0,
};

function fakeBackend() {
  const images = new Map<string, { img: BuildImage; parent: string }>([[BASE.id, { img: BASE, parent: '' }]]);
  const tags = new Map<string, string>([['base', BASE.id]]);
  const backend: BuildBackend = {
    findImage: (ref) => images.get(tags.get(ref) ?? ref)?.img,
    pullImage: async (ref) => {
      throw new Error(`no pull in tests: ${ref}`);
    },
    children: (parent) => [...images.values()].filter((x) => x.parent === parent).map((x) => x.img),
    addImage: async (li: LoadedImage, parent) => {
      images.set(li.id, { img: { id: li.id, rawConfig: li.rawConfig, diffIds: li.diffIds, chainId: li.chainId, size: li.size }, parent });
    },
    createContainer: async () => {
      throw new Error('no containers in tests');
    },
    runContainer: async () => 0,
    removeContainer: async () => {},
  };
  return { backend, images, tags };
}

const OPTS: BuildOptions = {
  dockerfile: 'Dockerfile', buildArgs: {}, labels: {}, noCache: false, remove: true, forceRemove: false,
  pull: false, target: '', platform: '', cacheFrom: [], hostConfig: {},
};

async function run(dockerfile: string, opts: Partial<BuildOptions> = {}, fb = fakeBackend()) {
  const builder = createBuilder({ layers: {} as LayerStore, log: pino({ level: 'silent' }), platform: { os: 'linux', architecture: 'amd64' }, tmpDir: tmp });
  const lines: string[] = [];
  const aux: unknown[] = [];
  const out = { stream: (s: string) => lines.push(s), aux: (v: unknown) => aux.push(v), progress: () => {} };
  const id = await builder.build(tarOf({ Dockerfile: dockerfile }), { ...OPTS, ...opts }, fb.backend, out, new AbortController().signal);
  const img = fb.images.get(id)!.img;
  const parsed = JSON.parse(img.rawConfig) as { config: Record<string, unknown>; container_config: Record<string, unknown>; history: Array<Record<string, unknown>> };
  return { id, text: lines.join(''), aux, config: parsed.config, parsed, fb };
}

test('config instructions shape the image config, and each step prints its line and image', async () => {
  const r = await run([
    'FROM base', 'ENV A=1 B="two words"', 'LABEL x=y', 'WORKDIR /srv', 'WORKDIR sub', 'USER nobody', 'EXPOSE 80 53/udp',
    'VOLUME /v1 /v2', 'STOPSIGNAL SIGUSR1', 'HEALTHCHECK --interval=5s CMD true', 'ONBUILD RUN echo x', 'SHELL ["/bin/bash","-c"]',
    'CMD echo hi', 'MAINTAINER me',
  ].join('\n'));
  assert.match(r.text, /^Step 1\/14 : FROM base\n ---> bbbbbbbbbbbb\nStep 2\/14 : ENV A=1 B="two words"\n ---> [0-9a-f]{12}\n/);
  const c = r.config;
  assert.deepEqual(c.Env, ['PATH=/bin', 'A=1', 'B=two words']);
  assert.deepEqual(c.Labels, { x: 'y' });
  assert.equal(c.WorkingDir, '/srv/sub');
  assert.equal(c.User, 'nobody');
  assert.deepEqual(c.ExposedPorts, { '80/tcp': {}, '53/udp': {} });
  assert.deepEqual(c.Volumes, { '/v1': {}, '/v2': {} });
  assert.equal(c.StopSignal, 'SIGUSR1');
  assert.deepEqual(c.Healthcheck, { Test: ['CMD-SHELL', 'true'], Interval: 5e9 });
  assert.deepEqual(c.OnBuild, ['RUN echo x']);
  assert.deepEqual(c.Cmd, ['/bin/bash', '-c', 'echo hi']);
  assert.equal(c.Image, r.parsed.container_config.Image);
  assert.equal(r.parsed.history.at(-1)?.created_by, '/bin/bash -c #(nop)  MAINTAINER me');
  assert.equal(r.parsed.history.at(-1)?.empty_layer, true);
  assert.equal(r.parsed.history.length, 13);
  assert.deepEqual(r.aux, [{ ID: r.id }]);
});

test('ARG: meta args in FROM, a stage ARG takes the sent value, then its default, then the meta value; unused args warn', async () => {
  const fb = fakeBackend();
  const r = await run('ARG IMG=base\nARG V=meta\nFROM ${IMG}\nARG V\nARG D=dflt\nARG S=dflt\nENV V=$V D=$D S=$S\n', { buildArgs: { S: 'sent', EXTRA: 'x' } }, fb);
  assert.ok((r.config.Env as string[]).includes('V=meta'));
  assert.ok((r.config.Env as string[]).includes('D=dflt'));
  assert.ok((r.config.Env as string[]).includes('S=sent'));
  assert.match(r.text, /\[Warning\] One or more build-args \[EXTRA\] were not consumed/);
});

test('ENTRYPOINT drops an inherited CMD but keeps one set in the stage', async () => {
  assert.equal((await run('FROM base\nENTRYPOINT ["top"]\n')).config.Cmd, null);
  assert.deepEqual((await run('FROM base\nCMD ["a"]\nENTRYPOINT ["top"]\n')).config.Cmd, ['a']);
});

test('the cache: the same steps on the same parent reuse the images; nocache does not', async () => {
  const fb = fakeBackend();
  const first = await run('FROM base\nENV A=1\nLABEL b=2\n', {}, fb);
  const second = await run('FROM base\nENV A=1\nLABEL b=2\n', {}, fb);
  assert.equal(second.id, first.id);
  assert.equal((second.text.match(/Using cache/g) ?? []).length, 2);
  const changed = await run('FROM base\nENV A=2\nLABEL b=2\n', {}, fb);
  assert.notEqual(changed.id, first.id);
  assert.doesNotMatch(changed.text, /Using cache/);
  const fresh = await run('FROM base\nENV A=1\nLABEL b=2\n', { noCache: true }, fb);
  assert.doesNotMatch(fresh.text, /Using cache/);
});

test('--target, stages by name, the labels option and ONBUILD triggers of the base', async () => {
  const fb = fakeBackend();
  const t = await run('FROM base AS one\nENV S=one\nFROM one AS two\nENV S=two\n', { target: 'one' }, fb);
  assert.ok((t.config.Env as string[]).includes('S=one'));
  const two = await run('FROM base AS one\nENV S=one\nFROM one AS two\nENV T=two\n', { labels: { 'com.x': 'y z' } }, fb);
  assert.ok((two.config.Env as string[]).includes('S=one'));
  assert.deepEqual(two.config.Labels, { 'com.x': 'y z' });
  assert.equal(two.aux.length, 2);
  await assert.rejects(run('FROM base\nENV A=1\n', { target: 'nope' }, fb), /failed to reach build target nope in Dockerfile/);

  const parent = await run('FROM base\nONBUILD ENV FROM_TRIGGER=yes\n', {}, fb);
  fb.tags.set('parent', parent.id);
  const child = await run('FROM parent\nLABEL c=1\n', {}, fb);
  assert.match(child.text, /# Executing 1 build trigger\n/);
  assert.ok((child.config.Env as string[]).includes('FROM_TRIGGER=yes'));
  assert.equal(child.config.OnBuild, null);
});

test('refusals: no stage, nothing generated, a RUN before FROM, a bad instruction', async () => {
  await assert.rejects(run('# only a comment\n'), /No image was generated|file with no instructions/);
  await assert.rejects(run('RUN true\n'), /no build stage in current context/);
  await assert.rejects(run('FROM base\nFOO x\n'), /dockerfile parse error on line 2: unknown instruction: FOO/);
  await assert.rejects(run('FROM scratch\n'), /No image was generated/);
  await assert.rejects(run('FROM base\nEXPOSE 99999\n'), /Invalid containerPort: 99999/);
});

test('cache-from: an image loaded without its parents gives every step from its history', async () => {
  const first = fakeBackend();
  const built = await run('FROM base\nENV A=1\nLABEL b=2\nCMD ["x"]\n', {}, first);
  // A new daemon that has only the base and the final image (as after docker load).
  const fb = fakeBackend();
  fb.images.set(built.id, { img: { ...first.images.get(built.id)!.img, parent: '' }, parent: '' });
  fb.tags.set('built', built.id);
  const again = await run('FROM base\nENV A=1\nLABEL b=2\nCMD ["x"]\n', { cacheFrom: ['built', 'not-here'] }, fb);
  assert.equal((again.text.match(/Using cache/g) ?? []).length, 3, again.text);
  assert.equal(again.id, built.id);
  // Without cache-from nothing matches, and a different step stops the reuse there.
  const fb2 = fakeBackend();
  fb2.images.set(built.id, { img: first.images.get(built.id)!.img, parent: '' });
  fb2.tags.set('built', built.id);
  assert.doesNotMatch((await run('FROM base\nENV A=1\n', {}, fb2)).text, /Using cache/);
  const partial = await run('FROM base\nENV A=1\nLABEL b=3\n', { cacheFrom: ['built'] }, fb2);
  assert.equal((partial.text.match(/Using cache/g) ?? []).length, 1, partial.text);
});

test('sameStep compares what the reference compares', () => {
  const a = { Cmd: ['sh', '-c', 'x'], Env: ['A=1'], Labels: { a: 'b' }, ExposedPorts: { '80/tcp': {} } };
  assert.ok(sameStep(a, structuredClone(a)));
  assert.ok(!sameStep(a, { ...a, Cmd: ['sh', '-c', 'y'] }));
  assert.ok(!sameStep(a, { ...a, Env: ['A=2'] }));
  assert.ok(!sameStep(a, { ...a, Labels: { a: 'c' } }));
  assert.ok(!sameStep({ ...a, OpenStdin: true }, a));
});

test('FROM --platform: a local image of that platform is used; another OS is refused', async () => {
  const fb = fakeBackend();
  const base = fb.images.get(BASE.id)!;
  fb.images.set(BASE.id, { ...base, img: { ...base.img, rawConfig: JSON.stringify({ ...JSON.parse(base.img.rawConfig), os: 'linux', architecture: 'amd64' }) } });
  const r = await run('FROM --platform=linux/amd64 base\nENV A=1\n', {}, fb);
  assert.ok((r.config.Env as string[]).includes('A=1'));
  await assert.rejects(run('FROM --platform=linux/arm64 base\nENV A=1\n', {}, fb), /no pull in tests: base/);
  await assert.rejects(run('FROM --platform=windows/amd64 base\n', {}, fb), /operating system is not supported: windows/);
});

test('predefined proxy args: usable without an ARG, never warned about as unused', async () => {
  const r = await run('FROM base\nENV P=${HTTP_PROXY:-none} Q=${no_proxy:-none}\n', { buildArgs: { HTTP_PROXY: 'http://proxy:3128', no_proxy: 'localhost' } });
  assert.ok((r.config.Env as string[]).includes('P=http://proxy:3128'), String(r.config.Env));
  assert.ok((r.config.Env as string[]).includes('Q=localhost'));
  assert.doesNotMatch(r.text, /not consumed/);
});

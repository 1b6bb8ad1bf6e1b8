// POST /build?version=2's progress: the classic builder's output told as BuildKit's
// `moby.buildkit.trace` aux lines (base64 StatusResponse protobuf) and `moby.image.id` at the end;
// the generated codecs (api/builder/gen) are what api/builder/protos makes.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { GEN_DIR, generate } from '../../../hack/gen-buildkit-protos.ts';
import { readTree } from '../../../hack/gen-protos.ts';
import { buildkitProgress, decodeTrace, encodeTrace, IMAGE_ID, TRACE_ID } from '../../../api/builder/buildkit-progress.ts';
import type { StatusResponse, Vertex } from '../../../api/builder/gen/control.ts';
import type { JsonMessage } from '../../../api/streams.ts';

test('api/builder/gen is up to date with api/builder/protos', () => {
  const tmp = mkdtempSync(join(tmpdir(), 'engine-buildkit-gen-'));
  try {
    const fresh = generate(tmp);
    const committed = readTree(GEN_DIR);
    assert.deepEqual([...committed.keys()].sort(), [...fresh.keys()].sort(), 'stale: run node_modules/.bin/node hack/gen-buildkit-protos.ts');
    for (const [file, text] of fresh) assert.equal(committed.get(file), text, `${file} is stale: run node_modules/.bin/node hack/gen-buildkit-protos.ts`);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
});

test('a StatusResponse round-trips with BuildKit\'s field numbers', () => {
  const sr: StatusResponse = {
    vertexes: [{ digest: 'sha256:aa', inputs: ['sha256:bb'], name: '[1/2] FROM x', cached: true, started: { seconds: 1_700_000_000, nanos: 5 }, completed: { seconds: 1_700_000_001, nanos: 0 }, error: 'boom' }],
    statuses: [{ ID: 'layer', vertex: 'sha256:aa', name: 'Downloading', current: 10, total: 20, timestamp: { seconds: 1, nanos: 0 }, started: { seconds: 1, nanos: 0 }, completed: undefined }],
    logs: [{ vertex: 'sha256:aa', timestamp: { seconds: 2, nanos: 3 }, stream: 2, msg: Buffer.from('hi\n') }],
  };
  const aux = encodeTrace(sr);
  const bytes = Buffer.from(aux, 'base64');
  // StatusResponse.vertexes is field 1 (length-delimited), Vertex.digest field 1 inside it.
  assert.equal(bytes[0], 0x0a);
  const back = decodeTrace(aux);
  assert.deepEqual(back.vertexes, sr.vertexes);
  assert.deepEqual(back.statuses, sr.statuses);
  assert.equal(back.logs[0].stream, 2);
  assert.equal(Buffer.from(back.logs[0].msg).toString(), 'hi\n');
});

/** Every trace line decoded; the last state of each vertex by digest, in order of appearance. */
function readTraces(lines: JsonMessage[]) {
  const vertexes = new Map<string, Vertex>();
  const logs: Array<{ vertex: string; stream: number; text: string }> = [];
  for (const l of lines) {
    if (l.id !== TRACE_ID) continue;
    assert.equal(typeof l.aux, 'string');
    const sr = decodeTrace(l.aux as string);
    for (const v of sr.vertexes) vertexes.set(v.digest, v);
    for (const g of sr.logs) logs.push({ vertex: g.vertex, stream: g.stream, text: Buffer.from(g.msg).toString() });
  }
  return { vertexes: [...vertexes.values()], logs };
}

test('the classic builder\'s steps become vertexes: names, cached, logs, completion, the image id last', () => {
  const lines: JsonMessage[] = [];
  let t = 1_700_000_000_000;
  const p = buildkitProgress((m) => lines.push(m), () => new Date((t += 250)));
  const o = p.out;
  o.stream('Step 1/3 : FROM busybox\n');
  o.stream(' ---> 0123456789ab\n');
  o.stream('Step 2/3 : RUN echo hi\n');
  o.stream(' ---> Running in fedcba987654\n');
  o.stream('hi\n');
  o.stream('\u001b[91moops\n\u001b[0m');
  o.stream('Removing intermediate container fedcba987654\n');
  o.stream(' ---> 1111111111aa\n');
  o.stream('Step 3/3 : COPY a /a\n');
  o.stream(' ---> Using cache\n');
  o.stream(' ---> 2222222222bb\n');
  o.aux({ ID: 'sha256:stage' });
  p.done('sha256:' + 'c'.repeat(64));

  // Nothing but trace lines and the final image id.
  assert.ok(lines.slice(0, -1).every((l) => l.id === TRACE_ID));
  assert.deepEqual(lines.at(-1), { id: IMAGE_ID, aux: { ID: 'sha256:' + 'c'.repeat(64) } });

  const { vertexes, logs } = readTraces(lines);
  assert.deepEqual(vertexes.map((v) => v.name), ['[1/3] FROM busybox', '[2/3] RUN echo hi', '[3/3] COPY a /a']);
  for (const v of vertexes) {
    assert.match(v.digest, /^sha256:[0-9a-f]{64}$/);
    assert.ok(v.started && v.completed, v.name);
    assert.ok(v.completed.seconds * 1e9 + v.completed.nanos >= v.started.seconds * 1e9 + v.started.nanos);
    assert.equal(v.error, '');
  }
  assert.deepEqual(vertexes.map((v) => v.cached), [false, false, true]);
  // Each step's input is the one before it.
  assert.deepEqual(vertexes[1].inputs, [vertexes[0].digest]);
  assert.deepEqual(logs, [
    { vertex: vertexes[1].digest, stream: 1, text: 'hi\n' },
    { vertex: vertexes[1].digest, stream: 2, text: 'oops\n' },
  ]);
});

test('a failing step: its vertex completes with the error; nothing after it', () => {
  const lines: JsonMessage[] = [];
  const p = buildkitProgress((m) => lines.push(m));
  p.out.stream('Step 1/2 : FROM busybox\n');
  p.out.stream(' ---> 0123456789ab\n');
  p.out.stream('Step 2/2 : RUN exit 3\n');
  p.out.stream(' ---> Running in fedcba987654\n');
  p.failed("The command '/bin/sh -c exit 3' returned a non-zero code: 3");
  assert.ok(lines.every((l) => l.id === TRACE_ID));
  const { vertexes } = readTraces(lines);
  assert.deepEqual(vertexes.map((v) => [v.name, v.error, !!v.completed]), [
    ['[1/2] FROM busybox', '', true],
    ['[2/2] RUN exit 3', "The command '/bin/sh -c exit 3' returned a non-zero code: 3", true],
  ]);
});

test('output before the first step and a failure before any: an internal vertex; pull progress as statuses', () => {
  const lines: JsonMessage[] = [];
  const p = buildkitProgress((m) => lines.push(m));
  p.out.stream('[WARNING]: Empty continuation line found\n');
  p.out.stream('Step 1/1 : FROM remote/img\n');
  p.out.progress({ status: 'Pulling from remote/img', id: 'latest' });
  p.out.progress({ status: 'Downloading', id: 'abc', progressDetail: { current: 5, total: 10 } });
  p.out.progress({ status: 'Pull complete', id: 'abc' });
  p.out.progress({ status: 'Digest: sha256:00' });
  p.out.stream(' ---> 0123456789ab\n');
  p.done('sha256:' + 'd'.repeat(64));
  const statuses = lines.filter((l) => l.id === TRACE_ID).flatMap((l) => decodeTrace(l.aux as string).statuses);
  const { vertexes, logs } = readTraces(lines);
  assert.deepEqual(vertexes.map((v) => v.name), ['[internal] load build definition from Dockerfile', '[1/1] FROM remote/img']);
  assert.equal(logs[0].vertex, vertexes[0].digest);
  assert.equal(logs[1].text, 'Digest: sha256:00\n');
  assert.ok(statuses.every((s) => s.vertex === vertexes[1].digest));
  const dl = statuses.find((s) => s.name === 'Downloading')!;
  assert.deepEqual([dl.ID, dl.current, dl.total, !!dl.completed], ['abc', 5, 10, false]);
  assert.ok(statuses.find((s) => s.name === 'Pull complete')?.completed);

  const early: JsonMessage[] = [];
  buildkitProgress((m) => early.push(m)).failed('failed to parse Dockerfile');
  const ev = readTraces(early).vertexes;
  assert.equal(ev.length, 1);
  assert.equal(ev[0].error, 'failed to parse Dockerfile');
  assert.ok(ev[0].completed);
});

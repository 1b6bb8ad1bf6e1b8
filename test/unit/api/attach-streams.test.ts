// Attach and exec stream rules without a daemon: the body of an upgraded request is read off
// and never becomes stdin, a client's half-close is stdin EOF (held back until the process can
// see it), detach keys end a session without touching the process's stdin.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { readChunked, readLength, readUpgradeBody } from '../../../api/upgrade-body.ts';
import { AttachSession, DetachScanner, parseDetachKeys } from '../../../api/attach/session.ts';
import { fakeHub, fakeSocket } from './socket-fakes.ts';

const tick = () => new Promise((r) => setImmediate(r));

function feeder(chunks: string[]) {
  return async () => {
    const c = chunks.shift();
    return c === undefined ? null : Buffer.from(c);
  };
}

test('a Content-Length body is read off; what follows is the stream', async () => {
  const body = '{"stream":true,"stdin":true}';
  const r = await readLength(body.length, Buffer.from(body + 'stdin-bytes'), feeder([]));
  assert.equal(r.body.toString(), body);
  assert.equal(r.rest.toString(), 'stdin-bytes');
  // Only part of the body came with the headers: the rest is read from the socket.
  const split = await readLength(body.length, Buffer.from(body.slice(0, 3)), feeder([body.slice(3, 10), body.slice(10) + 'more']));
  assert.equal(split.body.toString(), body);
  assert.equal(split.rest.toString(), 'more');
  await assert.rejects(readLength(10, Buffer.from('abc'), feeder([])), /unexpected end/);
});

test('a chunked body is decoded up to its last chunk; what follows is the stream', async () => {
  const wire = '7\r\n{"a":1,\r\n6;ext=1\r\n"b":2}\r\n0\r\n\r\nstdin';
  const whole = await readChunked(Buffer.from(wire), feeder([]));
  assert.equal(whole.body.toString(), '{"a":1,"b":2}');
  assert.equal(whole.rest.toString(), 'stdin');
  // The same bytes one at a time.
  const bytes = [...wire];
  const slow = await readChunked(Buffer.alloc(0), feeder(bytes));
  assert.equal(slow.body.toString(), '{"a":1,"b":2}');
  assert.equal(slow.rest.toString() + bytes.join(''), 'stdin');
  await assert.rejects(readChunked(Buffer.from('zz\r\n'), feeder([])), /malformed/);
  await assert.rejects(readChunked(Buffer.from('5\r\nab'), feeder([])), /unexpected end/);
});

test('readUpgradeBody picks the framing from the headers and leaves later bytes on the socket', async () => {
  const { sock, client } = fakeSocket();
  sock.pause();
  const req = (headers: Record<string, string>) => ({ headers }) as unknown as IncomingMessage;
  const none = await readUpgradeBody(req({}), sock, Buffer.from('typed'));
  assert.deepEqual([none.body.length, none.rest.toString()], [0, 'typed']);
  const p = readUpgradeBody(req({ 'content-length': '4' }), sock, Buffer.from('{"'));
  client('}}after');
  const r = await p;
  assert.deepEqual([r.body.toString(), r.rest.toString()], ['{"}}', 'after']);
  const c = await readUpgradeBody(req({ 'transfer-encoding': 'chunked' }), sock, Buffer.from('2\r\n{}\r\n0\r\n\r\n'));
  assert.deepEqual([c.body.toString(), c.rest.length], ['{}', 0]);
  await assert.rejects(readUpgradeBody(req({ 'content-length': '-1' }), sock, Buffer.alloc(0)), /Content-Length/);
});

test('half-close is stdin EOF, passed on only once the process can see it', async () => {
  const { sock, client, sent } = fakeSocket();
  const session = new AttachSession(sock, { tty: false, stdin: true, stdout: true, stderr: true, closeStdinOnEof: true, closeOnEnd: false, detachKeys: parseDetachKeys(undefined) });
  const started = Promise.withResolvers<void>();
  session.closeStdinAfter(started.promise);
  // The client is quick: its stdin and EOF arrive before the process exists.
  client('hi\n');
  client(null);
  await tick();
  const h = fakeHub();
  session.bind(h.hub);
  await tick();
  assert.equal(h.stdin(), 'hi\n');
  assert.equal(h.closed(), 0, 'EOF held back until the process started');
  started.resolve();
  await tick();
  assert.equal(h.closed(), 1);
  // Output keeps flowing after the half-close.
  h.out('stdout', 'late\n');
  assert.equal(session.isClosed, false);
  assert.deepEqual(Buffer.concat(sent).subarray(8).toString(), 'late\n');
});

test('without StdinOnce (or with a tty) half-close ends the session, not the process stdin', async () => {
  const { sock, client, ended } = fakeSocket();
  const session = new AttachSession(sock, { tty: false, stdin: true, stdout: true, stderr: true, closeStdinOnEof: false, detachKeys: parseDetachKeys(undefined) });
  const h = fakeHub();
  session.bind(h.hub);
  client('x');
  client(null);
  await session.done;
  await tick();
  assert.equal(h.stdin(), 'x');
  assert.equal(h.closed(), 0);
  assert.ok(ended());
});

test('detach keys end a tty session; bytes before them reach stdin, the keys do not', async () => {
  const { sock, client } = fakeSocket();
  let detached = 0;
  const session = new AttachSession(sock, { tty: true, stdin: true, stdout: true, stderr: true, closeStdinOnEof: false, detachKeys: parseDetachKeys('ctrl-a,b'), onDetach: () => detached++ });
  const h = fakeHub();
  session.bind(h.hub);
  client('ls\r\x01');
  client('\x01b');
  await session.done;
  assert.equal(h.stdin(), 'ls\r\x01');
  assert.equal(detached, 1);
  assert.equal(h.closed(), 0);
});

test('detach keys are only honoured with a tty', async () => {
  const { sock, client } = fakeSocket();
  const session = new AttachSession(sock, { tty: false, stdin: true, stdout: true, stderr: true, closeStdinOnEof: true, detachKeys: parseDetachKeys(undefined) });
  const h = fakeHub();
  session.bind(h.hub);
  client('\x10\x11');
  await tick();
  assert.equal(h.stdin(), '\x10\x11');
  assert.equal(session.isClosed, false);
});

test('the detach scanner holds a partial match back and releases it on a mismatch', () => {
  const s = new DetachScanner(parseDetachKeys('ctrl-p,ctrl-q'));
  assert.deepEqual(s.feed(Buffer.from('a\x10')), { data: Buffer.from('a'), detach: false });
  assert.deepEqual(s.feed(Buffer.from('\x10')), { data: Buffer.from('\x10'), detach: false });
  assert.deepEqual(s.feed(Buffer.from('z')), { data: Buffer.from('\x10z'), detach: false });
  assert.deepEqual(s.feed(Buffer.from('\x10\x11rest')), { data: Buffer.alloc(0), detach: true });
});

test('detach key specs', () => {
  assert.deepEqual([...parseDetachKeys(undefined)], [0x10, 0x11]);
  assert.deepEqual([...parseDetachKeys('ctrl-@,ctrl-[,ctrl-\\,ctrl-],ctrl-^,ctrl-_,x,ctrl-Z')], [0, 27, 28, 29, 30, 31, 0x78, 26]);
  assert.throws(() => parseDetachKeys('ctrl-1'), /Invalid detach keys \(ctrl-1\) provided/);
  assert.throws(() => parseDetachKeys('ab'), /Invalid detach keys/);
});

// The supervisor client (drivers/supervisor/rpc.ts, client.ts, events.ts) against fake supervisors
// built with the same library (@grpc/grpc-js) from the same generated service definitions: the
// namespace header, containerd's errors as engine errors, deadlines, aborts, a connection that
// breaks under a call, and the event stream that re-subscribes when the supervisor comes back.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { connect, createServer, type Socket } from 'node:net';
import { join } from 'node:path';
import { createSupervisorClient } from '../../../drivers/supervisor/client.ts';
import { subscribeEvents, type ExitEvent } from '../../../drivers/supervisor/events.ts';
import { EventsService, type Envelope, type PublishRequest } from '../../../drivers/supervisor/gen/events.ts';
import { TaskExit } from '../../../drivers/supervisor/gen/task-events.ts';
import { TasksService } from '../../../drivers/supervisor/gen/tasks.ts';
import { VersionService } from '../../../drivers/supervisor/gen/version.ts';
import { EngineError } from '../../../lib/errors.ts';
import { fakeGrpcServer, testLogger, until } from './helpers.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function tmpSocket(): Promise<{ socket: string; cleanup: () => Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'engine-rpc-'));
  return { socket: join(dir, 'grpc.sock'), cleanup: () => rm(dir, { recursive: true, force: true }) };
}

const isEngine = (code: string, text?: RegExp) => (err: unknown) => err instanceof EngineError && err.code === code && (!text || text.test(err.message));

test('unary calls carry the namespace; a gRPC status is the engine error class with containerd\'s message', async () => {
  const { socket, cleanup } = await tmpSocket();
  const seen: string[] = [];
  const server = await fakeGrpcServer(socket, [
    [VersionService, { version: (call: grpc.ServerUnaryCall<unknown, unknown>, cb: grpc.sendUnaryData<unknown>) => {
      seen.push(String(call.metadata.get('containerd-namespace')[0]));
      cb(null, { version: 'fake', revision: 'r1' });
    } }],
    [TasksService, {
      get: (_call: unknown, cb: grpc.sendUnaryData<unknown>) => cb({ code: grpc.status.NOT_FOUND, details: 'container "x": not found, 100%' }),
      create: (_call: unknown, cb: grpc.sendUnaryData<unknown>) => cb({ code: grpc.status.ALREADY_EXISTS, details: 'task x: already exists' }),
      list: (_call: unknown, cb: grpc.sendUnaryData<unknown>) => cb(null, { tasks: [{ id: 'c1', container_id: '', pid: 7, status: 'RUNNING', exit_status: 0, stdin: '', stdout: '', stderr: '', terminal: false }] }),
    }],
  ]);
  const client = createSupervisorClient({ address: socket, namespace: 'ns1', log: testLogger(), timeoutMs: 5_000 });
  try {
    assert.deepEqual(await client.version(), { version: 'fake', revision: 'r1' });
    // Several calls share the one channel.
    await Promise.all([1, 2, 3].map(() => client.version()));
    assert.deepEqual(seen, ['ns1', 'ns1', 'ns1', 'ns1']);
    await assert.rejects(client.getTask('x'), isEngine('NotFound', /^container "x": not found, 100%$/));
    await assert.rejects(client.createTask({ containerId: 'x', terminal: false }), isEngine('AlreadyExists'));
    assert.deepEqual(await client.listTasks(), [{ pid: 7, status: 'RUNNING', exitStatus: 0, exitedAt: null, containerId: 'c1', id: 'c1', stdin: '', stdout: '', stderr: '', terminal: false }]);
  } finally {
    client.close();
    server.forceShutdown();
    await cleanup();
  }
});

test('a deadline ends a call the supervisor never answers; an abort is Canceled; close() ends pending calls', async () => {
  const { socket, cleanup } = await tmpSocket();
  const hang = () => {};
  const server = await fakeGrpcServer(socket, [[TasksService, { get: hang, wait: hang }]]);
  const client = createSupervisorClient({ address: socket, namespace: 'n', log: testLogger(), timeoutMs: 200 });
  try {
    const t0 = Date.now();
    await assert.rejects(client.getTask('x'), isEngine('Unavailable'));
    assert.ok(Date.now() - t0 >= 190);
    const ac = new AbortController();
    const waiting = client.waitTask('x', undefined, { signal: ac.signal });
    setTimeout(() => ac.abort(), 50);
    await assert.rejects(waiting, isEngine('Canceled'));
    const pending = client.waitTask('x');
    await sleep(50);
    client.close();
    await assert.rejects(pending, (err: unknown) => err instanceof EngineError);
  } finally {
    server.forceShutdown();
    await cleanup();
  }
});

test('no supervisor: a call waits for it until its deadline', async () => {
  const { socket, cleanup } = await tmpSocket();
  const client = createSupervisorClient({ address: socket, namespace: 'n', log: testLogger(), timeoutMs: 400 });
  try {
    const t0 = Date.now();
    await assert.rejects(client.getTask('x'), isEngine('Unavailable'));
    assert.ok(Date.now() - t0 >= 390);
  } finally {
    client.close();
    await cleanup();
  }
});

/** A unix-socket proxy in front of `target`: cut() drops every connection, as a supervisor that dies does. */
async function proxy(socket: string, target: string): Promise<{ cut(): void; close(): Promise<void> }> {
  const conns = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = connect(target);
    for (const s of [client, upstream]) {
      conns.add(s);
      s.on('error', () => {});
      s.on('close', () => conns.delete(s));
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((r) => server.listen(socket, r));
  return {
    cut: () => {
      for (const s of conns) s.destroy();
    },
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

test('a call in flight when the connection breaks fails Unavailable; the next call reconnects', async () => {
  const { socket, cleanup } = await tmpSocket();
  const target = `${socket}.real`;
  let answer = false;
  const server = await fakeGrpcServer(target, [[TasksService, { wait: (_c: unknown, cb: grpc.sendUnaryData<unknown>) => answer && cb(null, { exit_status: 3 }) }]]);
  const p = await proxy(socket, target);
  const client = createSupervisorClient({ address: socket, namespace: 'n', log: testLogger(), timeoutMs: 5_000 });
  try {
    const inFlight = client.waitTask('x');
    await sleep(100);
    p.cut();
    await assert.rejects(inFlight, isEngine('Unavailable'));
    answer = true;
    assert.deepEqual(await client.waitTask('x'), { exitStatus: 3, exitedAt: null });
  } finally {
    client.close();
    p.cut();
    await p.close();
    server.forceShutdown();
    await cleanup();
  }
});

/** An Events service: Publish goes to every subscriber, as containerd's exchange does. */
function fakeEvents(namespace: string) {
  const subscribers = new Set<grpc.ServerWritableStream<unknown, Envelope>>();
  const publish = (topic: string, event: { type_url: string; value: Buffer }) => {
    for (const s of subscribers) s.write({ namespace, topic, event });
  };
  const impl = {
    publish: (call: grpc.ServerUnaryCall<PublishRequest, unknown>, cb: grpc.sendUnaryData<unknown>) => {
      publish(call.request.topic, call.request.event!);
      cb(null, {});
    },
    subscribe: (call: grpc.ServerWritableStream<unknown, Envelope>) => {
      subscribers.add(call);
      call.on('cancelled', () => subscribers.delete(call));
    },
  };
  return { impl, publish, subscribers };
}

test('the event stream: exits delivered once live, re-subscribed after the supervisor restarts', async () => {
  const { socket, cleanup } = await tmpSocket();
  let events = fakeEvents('ns1');
  let server = await fakeGrpcServer(socket, [[EventsService, events.impl]]);
  const exits: ExitEvent[] = [];
  let readies = 0;
  const sub = subscribeEvents({ address: socket, namespace: 'ns1', log: testLogger(), onExit: (e) => exits.push(e), onOom: () => {}, onReady: () => readies++ });
  const exit = (id: string) => ({ type_url: 'containerd.events.TaskExit', value: Buffer.from(TaskExit.encode(TaskExit.fromPartial({ container_id: id, id, pid: 9, exit_status: 137, exited_at: { seconds: 1_700_000_000, nanos: 5_000_000 } })).finish()) });
  try {
    await sub.ready;
    assert.ok(sub.live);
    events.publish('/tasks/exit', exit('c1'));
    await until(() => exits.length === 1);
    assert.deepEqual(exits[0], { containerId: 'c1', id: 'c1', pid: 9, exitStatus: 137, exitedAt: new Date(1_700_000_000_005) });
    server.forceShutdown();
    await until(() => !sub.live);
    events = fakeEvents('ns1');
    server = await fakeGrpcServer(socket, [[EventsService, events.impl]]);
    await until(() => sub.live && readies === 2, 10_000);
    events.publish('/tasks/exit', exit('c2'));
    await until(() => exits.length === 2);
    assert.equal(exits[1].containerId, 'c2');
  } finally {
    sub.close();
    server.forceShutdown();
    await cleanup();
  }
});

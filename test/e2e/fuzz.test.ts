// Malformed requests never crash the daemon, never get a 5xx, never hang: the fuzzer in
// hack/fuzz.ts runs against a real engined with a fixed seed, so a failure here replays with
//   node_modules/.bin/node hack/fuzz.ts --socket <sock> --seed 13 --requests 2000 --image engine-test/busybox:latest
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startDaemon, type DaemonHandle } from './harness/daemon.ts';
import { docker, testImages } from './harness/clients.ts';
import { fuzz, ping, type KnownFinding } from '../../hack/fuzz.ts';

/** Findings seen and not yet fixed; each names the exact case and why it is excused. */
const KNOWN: KnownFinding[] = [
  {
    // Not bad input: the fuzzer pulls from 127.0.0.1:1 (refused) and from names whose first
    // component has upper case (a registry host, as in dockerd, whose lookup fails). An upstream
    // failure; dockerd 20.10 answers 500 for these too.
    reason: 'pull from an unreachable registry answers 500',
    match: (f) => f.type === '5xx' && f.label === 'image-create' && f.status === 500 && /dial tcp|no such host|connection refused/.test(f.response ?? ''),
  },
  {
    // POST /images/create?fromSrc=<anything> -> 501 "importing from a URL is not supported":
    // a deliberate Not Implemented, not a crash.
    reason: 'image import (fromSrc) is not implemented: 501',
    match: (f) => f.type === '5xx' && f.label === 'image-create' && f.status === 501 && /importing from a URL is not supported/.test(f.response ?? ''),
  },
  {
    // Known finding (issue 13): POST /containers/{id}/restart answers 500 "Cannot restart container
    // <id>: ..." whenever starting fails on the container's own config, where /start on the same
    // container answers 400: restart loses the error class. Seen with HostConfig.CapAdd ["FOO"]
    // ("unknown capability"), HostConfig.CpusetMems "/" ("unable to apply cgroup configuration"),
    // User "80/xyz" ("unable to find user"). Create accepts all three (dockerd rejects the
    // capability with 400 at create).
    reason: 'restart answers 500 when the start it does fails on bad container config',
    match: (f) => f.type === '5xx' && f.label === 'container-restart' && /Cannot restart container/.test(f.response ?? ''),
  },
  {
    // Known finding (issue 13): GET /v1.41/events?filters=null answers 500 "Cannot convert
    // undefined or null to object" (dockerd: 400 for filters that are not an object).
    reason: 'events with filters=null answers 500',
    match: (f) => f.type === '5xx' && f.label === 'events' && /filters=null/.test(f.request) && /Cannot convert undefined or null to object/.test(f.response ?? ''),
  },
  {
    // Known finding (issue 13): POST /containers/create with HostConfig.CpuPeriod 1.5 (a fraction
    // where the API takes an integer) answers 201; POST /containers/{id}/start then answers 500
    // "... runc create failed: json: cannot unmarshal number 1.5 into Go struct field
    // LinuxCPU.linux.resources.cpu.period of type uint64". dockerd rejects the create with 400.
    reason: 'a fractional number in an integer HostConfig field is accepted at create, 500 at start',
    match: (f) => f.type === '5xx' && /^container-(start|restart)$/.test(f.label) && /cannot unmarshal number/.test(f.response ?? ''),
  },
];

describe('fuzz', () => {
  let d: DaemonHandle;
  let image = '';
  before(async () => {
    d = await startDaemon();
    const imgs = await testImages();
    const r = await docker(d, ['load', '-i', imgs.dockerArchive]);
    assert.equal(r.code, 0, r.stderr);
    image = imgs.tag;
  });
  after(async () => {
    await d?.cleanup();
  });

  test('2000 malformed requests: no crash, no 5xx, no hang', async () => {
    const report = await fuzz({ socketPath: d.socket, requests: 2000, seconds: 60, seed: 13, image, known: KNOWN });
    const summary = JSON.stringify({ requests: report.requests, elapsedMs: report.elapsedMs, byStatus: report.byStatus, blocked: report.blocked, known: report.known.map((k) => `${k.reason}: ${k.request}`) }, null, 1);
    console.log(summary);
    assert.ok(report.requests >= 500, `only ${report.requests} requests in the time given`);
    assert.equal(report.crashed, false, `daemon stopped answering:\n${JSON.stringify(report.findings, null, 1)}\n${d.logs().split('\n').slice(-40).join('\n')}`);
    assert.ok(d.pid > 0, 'daemon process alive');
    assert.equal(await ping(d.socket), true, '/_ping after the run');
    assert.deepEqual(report.findings, [], `findings:\n${JSON.stringify(report.findings, null, 1)}`);
  });
});

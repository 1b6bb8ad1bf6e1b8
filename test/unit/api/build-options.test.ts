// POST /build's query as the reference reads it: defaults, tags, JSON parameters and refusals.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildQuery, parseBuildRequest as parseRequest } from '../../../api/builder/options.ts';
import { parseQuery } from '../../../api/request.ts';

// The query through the route's schema (as fastify applies it), then the handler's checks.
const req = (query: Record<string, string | string[]>) => query;
const parseBuildRequest = (query: Record<string, string | string[]>, experimental: boolean, version = 1.41) =>
  parseRequest(parseQuery(buildQuery, query), version, experimental);

test('defaults: rm on, the Dockerfile named Dockerfile, no tags', () => {
  const r = parseBuildRequest(req({}), false);
  assert.equal(r.options.remove, true);
  assert.equal(r.options.forceRemove, false);
  assert.equal(r.options.dockerfile, 'Dockerfile');
  assert.deepEqual(r.tags, []);
  assert.deepEqual(r.options.hostConfig, {});
  assert.equal(parseBuildRequest(req({ rm: '0' }), false).options.remove, false);
  assert.equal(parseBuildRequest(req({ rm: '0', forcerm: '1' }), false).options.remove, true);
  // rm absent or empty is true; otherwise Go's BoolValue.
  assert.equal(parseBuildRequest(req({ rm: '' }), false).options.remove, true);
  assert.equal(parseBuildRequest(req({ rm: 'off' }), false).options.remove, true);
  assert.equal(parseBuildRequest(req({ rm: ' no ' }), false).options.remove, false);
});

test('memory and CPU limits are Int64ValueOrZero: a bad value is 0, not a refusal', () => {
  const r = parseBuildRequest(req({ memory: 'abc', cpushares: 'x', cpuquota: '-5', memswap: '1.5' }), false);
  assert.deepEqual(r.options.hostConfig, { CpuQuota: -5 });
});

test('tags are normalised with latest; build args, labels, cache-from and limits are read', () => {
  const r = parseBuildRequest(req({
    t: ['app', 'reg:5000/team/app:v2'], buildargs: '{"A":"1","B":null}', labels: '{"l":"v"}', cachefrom: '["x:1"]',
    networkmode: 'host', extrahosts: 'h:1.2.3.4', shmsize: '1048576', memory: '0', cpusetcpus: '0', q: '1', target: 'final',
  }), false);
  assert.deepEqual(r.tags, ['docker.io/library/app:latest', 'reg:5000/team/app:v2']);
  assert.deepEqual(r.options.buildArgs, { A: '1', B: null });
  assert.deepEqual(r.options.labels, { l: 'v' });
  assert.deepEqual(r.options.cacheFrom, ['x:1']);
  assert.deepEqual(r.options.hostConfig, { NetworkMode: 'host', ExtraHosts: ['h:1.2.3.4'], ShmSize: 1048576, CpusetCpus: '0' });
  assert.equal(r.quiet, true);
  assert.equal(r.options.target, 'final');
});

test('refusals before any output, with the reference messages', () => {
  const cases: Array<[Record<string, string>, RegExp]> = [
    [{ t: 'UPPER' }, /repository name must be lowercase|invalid reference format/],
    [{ t: 'app@sha256:' + 'a'.repeat(64) }, /build tag cannot contain a digest/],
    [{ buildargs: '{bad' }, /error reading build args: /],
    [{ buildargs: '{"A":1}' }, /error reading build args: /],
    [{ labels: '[1]' }, /error reading labels: /],
    [{ squash: '1' }, /squash is only supported with experimental mode/],
    [{ securityopt: 'seccomp=unconfined' }, /does not support setting security options on build/],
    [{ isolation: 'hyperv' }, /Unsupported isolation: "hyperv"/],
    [{ shmsize: 'lots' }, /strconv\.ParseInt: parsing "lots": invalid syntax$/],
    [{ platform: 'windows/amd64' }, /unsupported platform/],
    [{ remote: 'client-session', version: '2' }, /remote=client-session is not supported: this daemon does not read a build context over the session's file sync/],
    [{ remote: 'https://example.com/ctx.tar' }, /: remote build contexts are not supported/],
  ];
  for (const [q, re] of cases) assert.throws(() => parseBuildRequest(req(q), false), re, JSON.stringify(q));
  assert.equal(parseBuildRequest(req({ squash: '1' }), true).options.noCache, false);
  // version=2 (BuildKit) is accepted: the classic builder runs it, its progress as BuildKit's.
  assert.equal(parseBuildRequest(req({ version: '2' }), false).buildkit, true);
  assert.equal(parseBuildRequest(req({ version: '1' }), false).buildkit, false);
});

// The container create body's shape, checked as the reference's JSON decoder checks it: what it
// takes (lowercase keys, nulls, a lone string for a list) and, for bad bodies, the 400 with its
// "json: cannot unmarshal" message and nothing written.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parseCreateBody } from '../../../admission/containers/create-schema.ts';
import { containerRoutes, type ContainerRouteDeps } from '../../../api/containers/routes.ts';
import { EngineError } from '../../../lib/errors.ts';

import { routeHarness } from './route-harness.ts';
import { Containers } from '../../../store/kinds/container.ts';

/** Each bad body with the reference daemon's message for it. */
const BAD: Array<[unknown, string]> = [
  [{ Image: 'x', Env: 5 }, 'json: cannot unmarshal number into Go struct field ContainerConfigWrapper.Env of type []string'],
  [{ Image: 'x', Env: ['A=1', 2] }, 'json: cannot unmarshal number into Go struct field ContainerConfigWrapper.Env of type string'],
  [{ Image: 'x', Cmd: { a: 1 } }, 'json: cannot unmarshal object into Go struct field ContainerConfigWrapper.Cmd of type string'],
  [{ Image: 7 }, 'json: cannot unmarshal number into Go struct field ContainerConfigWrapper.Image of type string'],
  [{ Image: 'x', Labels: { a: 1 } }, 'json: cannot unmarshal number into Go struct field ContainerConfigWrapper.Labels of type string'],
  [{ Image: 'x', Labels: ['a'] }, 'json: cannot unmarshal array into Go struct field ContainerConfigWrapper.Labels of type map[string]string'],
  [{ Image: 'x', StopTimeout: '10' }, 'json: cannot unmarshal string into Go struct field ContainerConfigWrapper.StopTimeout of type int'],
  [{ Image: 'x', HostConfig: 'host' }, 'json: cannot unmarshal string into Go struct field ContainerConfigWrapper.HostConfig of type container.HostConfig'],
  [{ Image: 'x', HostConfig: { Memory: '64m' } }, 'json: cannot unmarshal string into Go struct field HostConfig.HostConfig.Memory of type int64'],
  [{ Image: 'x', HostConfig: { memory: 1.5 } }, 'json: cannot unmarshal number 1.5 into Go struct field HostConfig.HostConfig.Memory of type int64'],
  [{ Image: 'x', HostConfig: { BlkioWeight: -1 } }, 'json: cannot unmarshal number -1 into Go struct field HostConfig.HostConfig.BlkioWeight of type uint16'],
  [{ Image: 'x', HostConfig: { RestartPolicy: 'always' } }, 'json: cannot unmarshal string into Go struct field HostConfig.HostConfig.RestartPolicy of type container.RestartPolicy'],
  [
    { Image: 'x', HostConfig: { RestartPolicy: { Name: 'on-failure', MaximumRetryCount: '3' } } },
    'json: cannot unmarshal string into Go struct field RestartPolicy.HostConfig.RestartPolicy.MaximumRetryCount of type int',
  ],
  [{ Image: 'x', HostConfig: { Init: 'yes' } }, 'json: cannot unmarshal string into Go struct field HostConfig.HostConfig.Init of type bool'],
  [{ Image: 'x', HostConfig: { Binds: [1] } }, 'json: cannot unmarshal number into Go struct field HostConfig.HostConfig.Binds of type string'],
  [{ Image: 'x', HostConfig: { LogConfig: { Config: { 'max-size': 10 } } } }, 'json: cannot unmarshal number into Go struct field LogConfig.HostConfig.LogConfig.Config of type string'],
  [{ Image: 'x', HostConfig: { PortBindings: { '80/tcp': [{ HostPort: 8080 }] } } }, 'json: cannot unmarshal number into Go struct field PortBinding.HostConfig.PortBindings.HostPort of type string'],
  // The message dockerd 20.10 gives here, word for word (the fuzzer's create of this body was accepted).
  [{ Image: 'x', HostConfig: { BlkioDeviceWriteBps: 'xx' } }, 'json: cannot unmarshal string into Go struct field HostConfig.HostConfig.BlkioDeviceWriteBps of type []*blkiodev.ThrottleDevice'],
  // Elements of the small-struct lists, as dockerd 20.10 words them (checked live).
  [{ Image: 'x', HostConfig: { BlkioDeviceWriteBps: ['x'] } }, 'json: cannot unmarshal string into Go struct field HostConfig.HostConfig.BlkioDeviceWriteBps of type blkiodev.ThrottleDevice'],
  [{ Image: 'x', HostConfig: { BlkioDeviceWriteBps: [{ Path: '/dev/sda', Rate: 'x' }] } }, 'json: cannot unmarshal string into Go struct field ThrottleDevice.HostConfig.BlkioDeviceWriteBps.Rate of type uint64'],
  [{ Image: 'x', HostConfig: { Ulimits: [{ Name: 'nofile', Soft: '1' }] } }, 'json: cannot unmarshal string into Go struct field Ulimit.HostConfig.Ulimits.Soft of type int64'],
  [{ Image: 'x', HostConfig: { BlkioWeightDevice: [{ Path: '/dev/sda', Weight: 70000 }] } }, 'json: cannot unmarshal number 70000 into Go struct field WeightDevice.HostConfig.BlkioWeightDevice.Weight of type uint16'],
  [{ Image: 'x', HostConfig: { DeviceCgroupRules: 'c 1:3 rwm' } }, 'json: cannot unmarshal string into Go struct field HostConfig.HostConfig.DeviceCgroupRules of type []string'],
  [{ Image: 'x', HostConfig: { DeviceRequests: {} } }, 'json: cannot unmarshal object into Go struct field HostConfig.HostConfig.DeviceRequests of type []container.DeviceRequest'],
  [{ Image: 'x', HostConfig: { Sysctls: { 'net.ipv4.ip_forward': 1 } } }, 'json: cannot unmarshal number into Go struct field HostConfig.HostConfig.Sysctls of type string'],
  [{ Image: 'x', HostConfig: { SecurityOpt: [true] } }, 'json: cannot unmarshal bool into Go struct field HostConfig.HostConfig.SecurityOpt of type string'],
  [{ Image: 'x', HostConfig: { UsernsMode: 1 } }, 'json: cannot unmarshal number into Go struct field HostConfig.HostConfig.UsernsMode of type container.UsernsMode'],
  [{ Image: 'x', Healthcheck: { Interval: '1s' } }, 'json: cannot unmarshal string into Go struct field HealthConfig.Healthcheck.Interval of type time.Duration'],
  [[{ Image: 'x' }], 'json: cannot unmarshal array into Go value of type runconfig.ContainerConfigWrapper'],
  ['x', 'json: cannot unmarshal string into Go value of type runconfig.ContainerConfigWrapper'],
];

function refusedWith(body: unknown, message: string): void {
  assert.throws(
    () => parseCreateBody(body),
    (err: unknown) => err instanceof EngineError && err.code === 'InvalidArgument' && err.message === message,
    JSON.stringify(body),
  );
}

describe('create body schema', () => {
  test('valid bodies: minimal, lowercase keys matched as Go matches them, nulls, a lone string for a list', () => {
    assert.equal(parseCreateBody({ Image: 'x' }).Image, 'x');
    // A null element of a list of pointers is taken, as Go takes it; lowercase field names too.
    assert.deepEqual(parseCreateBody({ Image: 'x', HostConfig: { Ulimits: [null, { name: 'nofile', soft: 1, hard: 2 }] } }).HostConfig?.Ulimits, [null, { Name: 'nofile', Soft: 1, Hard: 2 }]);
    const lower = parseCreateBody({ image: 'x', cmd: ['sh'], hostconfig: { memory: 67108864, restartpolicy: { name: 'always' } } });
    assert.equal(lower.Image, 'x');
    assert.deepEqual(lower.Cmd, ['sh']);
    assert.equal(lower.HostConfig?.Memory, 67108864);
    assert.equal(lower.HostConfig?.RestartPolicy?.Name, 'always');
    // An exact-case key wins over another casing of it.
    assert.equal(parseCreateBody({ image: 'a', Image: 'b' }).Image, 'b');
    const nulls = parseCreateBody({ Image: 'x', Cmd: null, Env: null, Labels: null, HostConfig: { RestartPolicy: null, Memory: null, Binds: null }, Healthcheck: null, NetworkingConfig: null });
    assert.equal(nulls.Env, null);
    assert.equal(nulls.HostConfig?.RestartPolicy, null);
    assert.deepEqual(parseCreateBody({ Image: 'x', Cmd: 'sh', Env: 'A=1', HostConfig: { CapAdd: 'NET_ADMIN' } }).Env, ['A=1']);
    // No body (or JSON null) is an empty request; unknown keys are kept, as Go ignores them.
    assert.deepEqual(parseCreateBody(undefined), {});
    assert.deepEqual(parseCreateBody(null), {});
    assert.equal((parseCreateBody({ Image: 'x', Whatever: 1 }) as Record<string, unknown>).Whatever, 1);
  });

  test('bad bodies are refused with the decoder message', () => {
    for (const [body, message] of BAD) refusedWith(body, message);
  });

  test('over HTTP: 400 with the message, nothing written', async () => {
    const { app, store, close } = await routeHarness(
      (store) => [containerRoutes({ store, resolveImage: () => assert.fail('the image is looked up only after the body is checked') } as unknown as ContainerRouteDeps)],
      { engineVersion: '0.1.0' },
    );
    try {
      for (const [body, message] of BAD) {
        const r = await app.inject({ method: 'POST', url: '/v1.47/containers/create', headers: { 'content-type': 'application/json' }, payload: JSON.stringify(body) });
        assert.equal(r.statusCode, 400, JSON.stringify(body));
        assert.equal(r.json().message, message);
      }
      const none = await app.inject({ method: 'POST', url: '/v1.47/containers/create', headers: { 'content-type': 'application/json' }, payload: '{}' });
      assert.equal(none.statusCode, 400);
      assert.equal(none.json().message, 'No image was specified');
      assert.deepEqual(store.list(Containers), []);
    } finally {
      await close();
    }
  });
});

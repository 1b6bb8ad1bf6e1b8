// A service spec checked and filled in as dockerd 20.10 does (docs/reference-services.md §1–3).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { serviceSpecOf, withDefaults } from '../../../lib/swarm/service-spec.ts';
import { EngineError } from '../../../lib/errors.ts';

const image = { TaskTemplate: { ContainerSpec: { Image: 'busybox:local', Command: ['sleep', '1000'] } } };
const named = () => 'generated_name';
const refused = (raw: unknown, code: string, message: string) =>
  assert.throws(() => serviceSpecOf(raw, named), (e: unknown) => e instanceof EngineError && e.code === code && e.message === message);

describe('service specs', () => {
  test('filled in as the reference stores them', () => {
    const s = serviceSpecOf({ Name: 'web', ...image }, named);
    assert.deepEqual(s, {
      Name: 'web',
      Labels: {},
      TaskTemplate: { ContainerSpec: { Image: 'busybox:local', Command: ['sleep', '1000'], Isolation: 'default' }, ForceUpdate: 0, Runtime: 'container' },
      Mode: { Replicated: { Replicas: 1 } },
    });
    assert.equal(serviceSpecOf(image, named).Name, 'generated_name');
    assert.deepEqual(serviceSpecOf({ ...image, Mode: { Foo: {} } }, named).Mode, { Replicated: { Replicas: 1 } });
    assert.deepEqual(serviceSpecOf({ ...image, Mode: { Global: {} } }, named).Mode, { Global: {} });
    assert.deepEqual(serviceSpecOf({ ...image, Mode: { Replicated: { Replicas: 0 } } }, named).Mode, { Replicated: { Replicas: 0 } });
    const ports = serviceSpecOf({ ...image, EndpointSpec: { Ports: [{ Protocol: 'xyz', TargetPort: 80, PublishedPort: 8081, PublishMode: 'host' }] } }, named);
    assert.deepEqual(ports.EndpointSpec, { Ports: [{ Protocol: 'tcp', TargetPort: 80, PublishedPort: 8081, PublishMode: 'host' }] });
  });

  test('insertDefaults', () => {
    const d = withDefaults(serviceSpecOf({ Name: 'web', ...image }, named));
    assert.deepEqual(d.TaskTemplate, {
      ContainerSpec: { Image: 'busybox:local', Command: ['sleep', '1000'], Isolation: 'default', StopGracePeriod: 10_000_000_000, DNSConfig: {} },
      ForceUpdate: 0,
      Runtime: 'container',
      Resources: {},
      RestartPolicy: { Condition: 'any', Delay: 5_000_000_000, MaxAttempts: 0 },
      Placement: {},
    });
    assert.deepEqual(d.UpdateConfig, { Parallelism: 1, FailureAction: 'pause', Monitor: 5_000_000_000, MaxFailureRatio: 0, Order: 'stop-first' });
    assert.deepEqual(d.RollbackConfig, d.UpdateConfig);
  });

  test('the reference\'s refusals', () => {
    refused({ Name: 'web', TaskTemplate: { ContainerSpec: {} } }, 'InvalidArgument', 'rpc error: code = InvalidArgument desc = ContainerSpec: image reference must be provided');
    refused({ Name: 'bad name!', ...image }, 'InvalidArgument', 'rpc error: code = InvalidArgument desc = name must be valid as a DNS name component');
    refused({ Name: '-dash', ...image }, 'InvalidArgument', 'rpc error: code = InvalidArgument desc = name must be valid as a DNS name component');
    refused({ Name: 'a'.repeat(65), ...image }, 'InvalidArgument', 'rpc error: code = InvalidArgument desc = name must be 63 characters or fewer');
    refused({ ...image, Mode: { Replicated: { Replicas: -1 } } }, 'InvalidArgument', 'json: cannot unmarshal number -1 into Go struct field ReplicatedService.Mode.Replicated.Replicas of type uint64');
    refused({ ...image, Mode: { Replicated: { Replicas: 1 }, Global: {} } }, 'InvalidArgument', 'must specify only one service mode');
    refused({ TaskTemplate: { ...image.TaskTemplate, Placement: { Constraints: ['node.labels.zone=b'] } } }, 'Internal', 'rpc error: code = Unknown desc = constraint expected one operator from ==, !=');
    refused({ ...image, EndpointSpec: { Mode: 'bogus' } }, 'InvalidArgument', 'invalid resolution mode: "bogus"');
    refused({ TaskTemplate: { ...image.TaskTemplate, RestartPolicy: { Condition: 'sometimes' } } }, 'InvalidArgument', 'invalid RestartCondition: "sometimes"');
    refused({ ...image, EndpointSpec: { Ports: [{ TargetPort: 80, PublishedPort: 8096, PublishMode: 'host' }, { TargetPort: 81, PublishedPort: 8096, PublishMode: 'host' }] } }, 'InvalidArgument', 'rpc error: code = InvalidArgument desc = EndpointSpec: duplicate published ports provided');
    refused({ ...image, EndpointSpec: { Mode: 'dnsrr', Ports: [{ TargetPort: 80, PublishedPort: 8097 }] } }, 'InvalidArgument', "rpc error: code = InvalidArgument desc = EndpointSpec: port published with ingress mode can't be used with dnsrr mode");
    refused({ ...image, Networks: [{ Target: 'nosuchnet' }] }, 'Internal', 'network nosuchnet not found');
    assert.equal(serviceSpecOf({ ...image, EndpointSpec: { Ports: [{ TargetPort: 80, PublishedPort: 8080 }] } }, named).EndpointSpec?.Ports?.[0]?.PublishMode, 'ingress', 'the routing mesh\'s mode by default');
    assert.throws(() => serviceSpecOf({ ...image, Labels: 'x' }, named), (e: unknown) => e instanceof EngineError && e.code === 'InvalidArgument');
  });
});

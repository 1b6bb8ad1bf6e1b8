// drivers/cdi/spec.ts: CDI spec files read and refused as the reference library reads and
// refuses them, so the daemon offers the same devices from the same files.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CDI_VERSIONS, parseSpec, qualifiedName } from '../../../drivers/cdi/spec.ts';
import { isCdiName } from '../../../lib/device-requests.ts';
import { isCode } from '../../../lib/errors.ts';

const minimal = (version: string) => JSON.stringify({
  cdiVersion: version,
  kind: 'vendor.com/gpu',
  devices: [{ name: 'gpu0', containerEdits: { deviceNodes: [{ path: '/dev/vendor0' }] } }],
});

/** Refused with InvalidArgument, the file named, and the message containing `words`. */
function refused(text: string, path: string, words: string): void {
  assert.throws(() => parseSpec(text, path), (e) => isCode(e, 'InvalidArgument') && (e as Error).message.includes(path) && (e as Error).message.includes(words), words);
}

test('every released version 0.3.0 to 0.8.0 is accepted', () => {
  assert.deepEqual([...CDI_VERSIONS], ['0.3.0', '0.4.0', '0.5.0', '0.6.0', '0.7.0', '0.8.0']);
  for (const v of CDI_VERSIONS) assert.equal(parseSpec(minimal(v), '/etc/cdi/v.json').cdiVersion, v);
});

test('an unknown or missing version is refused, naming the file', () => {
  refused(minimal('0.9.0'), '/etc/cdi/new.json', 'invalid version "0.9.0"');
  refused(minimal('0.2.0'), '/etc/cdi/old.json', 'invalid version "0.2.0"');
  refused(JSON.stringify({ kind: 'vendor.com/gpu', devices: [{ name: 'a', containerEdits: { env: ['A=1'] } }] }), '/etc/cdi/none.json', 'invalid version ""');
});

test('a feature newer than the declared version is refused (the library\'s minimum version)', () => {
  const withGids = (v: string) => JSON.stringify({ cdiVersion: v, kind: 'v.com/c', devices: [{ name: 'd', containerEdits: { additionalGids: [44] } }] });
  refused(withGids('0.6.0'), '/etc/cdi/g.json', 'the spec version must be at least v0.7.0');
  assert.deepEqual(parseSpec(withGids('0.7.0'), '/etc/cdi/g.json').devices[0]!.containerEdits.additionalGids, [44]);
  const mountType = JSON.stringify({ cdiVersion: '0.3.0', kind: 'v.com/c', devices: [{ name: 'd', containerEdits: { mounts: [{ hostPath: '/a', containerPath: '/b', type: 'bind' }] } }] });
  refused(mountType, '/etc/cdi/m.json', 'at least v0.4.0');
  refused(minimal('0.4.0').replace('gpu0', '0'), '/etc/cdi/n.json', 'at least v0.5.0');
});

test('YAML and JSON files give the same spec', () => {
  const yaml = [
    'cdiVersion: "0.6.0"',
    'kind: vendor.com/gpu',
    'containerEdits:',
    '  env: [VENDOR_ALL=1]',
    'devices:',
    '  - name: gpu0',
    '    containerEdits:',
    '      deviceNodes:',
    '        - path: /dev/vendor0',
    '          type: c',
    '          major: 195',
    '          minor: 0',
    '          fileMode: 0666',
    '          permissions: rw',
    '      mounts:',
    '        - hostPath: /usr/lib/libvendor.so',
    '          containerPath: /usr/lib/libvendor.so',
    '          options: [ro, nosuid, bind]',
    '      hooks:',
    '        - hookName: createContainer',
    '          path: /usr/bin/vendor-hook',
    '          args: [vendor-hook, update-ldcache]',
    '          env: [X=1]',
    '          timeout: 5',
  ].join('\n');
  const fromYaml = parseSpec(yaml, '/etc/cdi/vendor.yaml');
  assert.deepEqual(parseSpec(yaml, '/etc/cdi/vendor.yml'), fromYaml);
  assert.deepEqual(parseSpec(JSON.stringify(fromYaml), '/etc/cdi/vendor.json'), fromYaml);
  assert.deepEqual(fromYaml.containerEdits, { env: ['VENDOR_ALL=1'] });
  const edits = fromYaml.devices[0]!.containerEdits;
  // 0666 is octal, as the library's YAML 1.1 reader takes it.
  assert.deepEqual(edits.deviceNodes, [{ path: '/dev/vendor0', type: 'c', major: 195, minor: 0, fileMode: 0o666, permissions: 'rw' }]);
  assert.deepEqual(edits.hooks, [{ hookName: 'createContainer', path: '/usr/bin/vendor-hook', args: ['vendor-hook', 'update-ldcache'], env: ['X=1'], timeout: 5 }]);
  assert.equal(edits.mounts![0]!.options!.length, 3);
  // An unquoted YAML scalar is the string the field wants (the library's reader does the same);
  // JSON stays strict.
  assert.equal(parseSpec(yaml.replace('name: gpu0', 'name: 0'), '/etc/cdi/vendor.yaml').devices[0]!.name, '0');
  refused(minimal('0.5.0').replace('"gpu0"', '0'), '/etc/cdi/num.json', 'devices[0].name: expected a string');
  // JSON text in a .yaml file still reads (YAML is a superset).
  assert.equal(parseSpec(minimal('0.3.0'), '/etc/cdi/x.yaml').kind, 'vendor.com/gpu');
});

test('intelRdt and netDevices are accepted (not applied); unknown fields are refused', () => {
  const s = parseSpec(JSON.stringify({ cdiVersion: '0.8.0', kind: 'v.com/c', devices: [{ name: 'd', containerEdits: { intelRdt: { closID: 'x' }, netDevices: [{ hostInterfaceName: 'eth1', name: 'net1' }] } }] }), '/etc/cdi/r.json');
  assert.deepEqual(s.devices[0]!.containerEdits, {});
  refused(JSON.stringify({ cdiVersion: '0.3.0', kind: 'v.com/c', extra: 1, devices: [{ name: 'd', containerEdits: { env: ['A=1'] } }] }), '/etc/cdi/u.json', 'unknown field "extra"');
});

test('bad kinds are refused with the library\'s reasons', () => {
  const withKind = (kind: string) => JSON.stringify({ cdiVersion: '0.6.0', kind, devices: [{ name: 'd', containerEdits: { env: ['A=1'] } }] });
  refused(withKind('nokind'), '/etc/cdi/k.json', 'invalid vendor. empty name');
  refused(withKind('1vendor.com/gpu'), '/etc/cdi/k.json', 'should start with letter');
  refused(withKind('vendor.com/gpu-'), '/etc/cdi/k.json', 'should end with a letter or digit');
  refused(withKind('vendor.com/g/pu'), '/etc/cdi/k.json', "invalid character '/'");
  // A dot in the class is allowed from 0.6.0 on.
  assert.equal(parseSpec(withKind('vendor.com/gpu.v2'), '/etc/cdi/k.json').kind, 'vendor.com/gpu.v2');
});

test('bad devices are refused: names, duplicates, empty edits, bad edits', () => {
  const withDevices = (devices: unknown[]) => JSON.stringify({ cdiVersion: '0.8.0', kind: 'v.com/c', devices });
  const env = { env: ['A=1'] };
  refused(withDevices([]), '/etc/cdi/d.json', 'invalid spec, no devices');
  refused(withDevices([{ name: 'bad name', containerEdits: env }]), '/etc/cdi/d.json', "invalid character ' ' in device name");
  refused(withDevices([{ name: '-x', containerEdits: env }]), '/etc/cdi/d.json', 'should start with a letter or digit');
  refused(withDevices([{ name: 'a', containerEdits: env }, { name: 'a', containerEdits: env }]), '/etc/cdi/d.json', 'invalid spec, multiple device "a"');
  refused(withDevices([{ name: 'a', containerEdits: {} }]), '/etc/cdi/d.json', 'empty container edits');
  refused(withDevices([{ name: 'a', containerEdits: { env: ['NOEQUALS'] } }]), '/etc/cdi/d.json', 'invalid environment variable "NOEQUALS"');
  refused(withDevices([{ name: 'a', containerEdits: { deviceNodes: [{ path: '/dev/x', type: 'z' }] } }]), '/etc/cdi/d.json', 'invalid type "z"');
  refused(withDevices([{ name: 'a', containerEdits: { deviceNodes: [{ path: '/dev/x', permissions: 'rwx' }] } }]), '/etc/cdi/d.json', 'invalid permissions "rwx"');
  refused(withDevices([{ name: 'a', containerEdits: { deviceNodes: [{ path: 'dev/x' }] } }]), '/etc/cdi/d.json', 'not an absolute path');
  refused(withDevices([{ name: 'a', containerEdits: { hooks: [{ hookName: 'preStart', path: '/x' }] } }]), '/etc/cdi/d.json', 'invalid hook name "preStart"');
  refused(withDevices([{ name: 'a', containerEdits: { mounts: [{ containerPath: '/x' }] } }]), '/etc/cdi/d.json', 'invalid mount, empty host path');
  refused('cdiVersion: [unclosed', '/etc/cdi/broken.yaml', 'failed to unmarshal CDI Spec');
  refused('', '/etc/cdi/empty.yaml', 'no Spec data');
});

test('qualified names: built and parsed; host paths and malformed names are not CDI names', () => {
  assert.equal(qualifiedName('nvidia.com/gpu', '0'), 'nvidia.com/gpu=0');
  // The one rule for what --device takes as a CDI name (lib/device-requests.ts), the library's.
  assert.equal(isCdiName('nvidia.com/gpu=0'), true);
  assert.equal(isCdiName('vendor.com/class=GPU-1a:2.b'), true);
  for (const s of ['/dev/nvidia0', 'nvidia.com/gpu', 'nvidia.com/gpu=', '=x', 'gpu=0', 'nvidia.com/=0', '1v.com/gpu=0', 'v.com/gpu=a b', 'v.com/a/b=0', 'v.com/gpu-=0', 'v.com/gpu=0-', ''])
    assert.equal(isCdiName(s), false, s);
});

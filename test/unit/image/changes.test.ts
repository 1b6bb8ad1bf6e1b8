import { test } from 'node:test';
import assert from 'node:assert/strict';
import { applyChanges } from '../../../drivers/image/changes.ts';
import { EngineError } from '../../../lib/errors.ts';

test('applies each allowed instruction', () => {
  const base = { Env: ['PATH=/bin'], Cmd: ['old'], WorkingDir: '', Labels: null };
  const out = applyChanges(base, [
    'CMD ["sh", "-c", "echo hi"]',
    'ENTRYPOINT /entry.sh --flag',
    'ENV A=1 B="two words" C=$A-${A}',
    'ENV LEGACY value with spaces',
    'ENV PATH=/usr/bin:$PATH',
    'EXPOSE 80 53/udp 8000-8001',
    'LABEL com.example="x y" other=z',
    'USER nobody:nogroup',
    'VOLUME ["/data", "/logs"]',
    'VOLUME /more /other',
    'WORKDIR /srv',
    'WORKDIR app/../sub',
    'ONBUILD RUN make',
    'stopsignal SIGINT',
  ]);
  assert.deepEqual(out.Cmd, ['sh', '-c', 'echo hi']);
  assert.deepEqual(out.Entrypoint, ['/bin/sh', '-c', '/entry.sh --flag']);
  assert.deepEqual(out.Env, ['PATH=/usr/bin:/bin', 'A=1', 'B=two words', 'C=-', 'LEGACY=value with spaces']);
  assert.deepEqual(out.ExposedPorts, { '80/tcp': {}, '53/udp': {}, '8000/tcp': {}, '8001/tcp': {} });
  assert.deepEqual(out.Labels, { 'com.example': 'x y', other: 'z' });
  assert.equal(out.User, 'nobody:nogroup');
  assert.deepEqual(out.Volumes, { '/data': {}, '/logs': {}, '/more': {}, '/other': {} });
  assert.equal(out.WorkingDir, '/srv/sub');
  assert.deepEqual(out.OnBuild, ['RUN make']);
  assert.equal(out.StopSignal, 'SIGINT');
  // the input is not modified
  assert.deepEqual(base, { Env: ['PATH=/bin'], Cmd: ['old'], WorkingDir: '', Labels: null });
});

test('ENV expansion sees earlier instructions, not the same one', () => {
  const out = applyChanges({}, ['ENV A=1', 'ENV A=2 B=$A', "ENV C='$A' D=\\$A E=${Z:-def} F=${A:+set}"]);
  assert.deepEqual(out.Env, ['A=2', 'B=1', 'C=$A', 'D=$A', 'E=def', 'F=set']);
});

test('ENTRYPOINT clears an inherited CMD unless CMD is also changed', () => {
  assert.equal(applyChanges({ Cmd: ['x'] }, ['ENTRYPOINT ["e"]']).Cmd, null);
  assert.deepEqual(applyChanges({ Cmd: ['x'] }, ['CMD ["y"]', 'ENTRYPOINT ["e"]']).Cmd, ['y']);
  assert.deepEqual(applyChanges({}, ['CMD echo $HOME']).Cmd, ['/bin/sh', '-c', 'echo $HOME']);
  assert.deepEqual(applyChanges({}, ['CMD [not json']).Cmd, ['/bin/sh', '-c', '[not json']);
});

test('rejects what the reference daemon rejects', () => {
  const cases: Array<[string, RegExp]> = [
    ['RUN echo hi', /^run is not a valid change command$/],
    ['FROM busybox', /^from is not a valid change command$/],
    ['HEALTHCHECK NONE', /^healthcheck is not a valid change command$/],
    ['ENV A=1 B', /can't find = in "B"/],
    ['ENV', /ENV requires at least one argument/],
    ['ENV ONLYKEY', /ENV must have two arguments/],
    ['EXPOSE abc', /Invalid containerPort: abc/],
    ['ONBUILD ONBUILD RUN x', /Chaining ONBUILD/],
    ['ONBUILD FROM x', /FROM isn't allowed as an ONBUILD trigger/],
    ['STOPSIGNAL not a signal', /Invalid signal/],
    ['WORKDIR', /WORKDIR requires exactly one argument/],
  ];
  for (const [change, re] of cases) {
    assert.throws(() => applyChanges({}, ['CMD ["ok"]', change]), (e: unknown) => {
      assert.ok(e instanceof EngineError, change);
      assert.equal(e.code, 'InvalidArgument');
      assert.match(e.message, re, change);
      return true;
    });
  }
});

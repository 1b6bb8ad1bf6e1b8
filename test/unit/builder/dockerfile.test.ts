import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseDockerfile } from '../../../drivers/builder/dockerfile/parse.ts';
import { parseStages, parseInstruction, type Instruction } from '../../../drivers/builder/dockerfile/instructions.ts';
import { ShellLex, envLookup } from '../../../drivers/builder/dockerfile/lex.ts';
import { parseGoDuration } from '../../../lib/units.ts';
import { DockerfileError } from '../../../drivers/builder/dockerfile/errors.ts';

const nodes = (text: string) => parseDockerfile(text).instructions;
const one = (text: string) => nodes(text)[0];
const instr = (line: string) => parseInstruction(one(line)) as Instruction;
const stagesOf = (text: string) => parseStages(nodes(text));
const errOf = (fn: () => unknown) => {
  try { fn(); } catch (err) { return (err as Error).message; }
  assert.fail('expected an error');
};
const stageErr = (text: string) => errOf(() => stagesOf(text));

test('directives, comments, blank lines, case-insensitive names and line numbers', () => {
  const r = parseDockerfile('# syntax=docker/dockerfile:1\n# escape=`\n\n# a comment\n  from alpine\nRUN echo hi\n');
  assert.deepEqual(r.directives, { escape: '`', syntax: 'docker/dockerfile:1' });
  assert.deepEqual(r.instructions.map((n) => [n.cmd, n.name, n.args, n.startLine, n.endLine]),
    [['from', 'from', ['alpine'], 5, 5], ['run', 'RUN', ['echo hi'], 6, 6]]);
  // A directive after a non-directive line is only a comment.
  assert.equal(parseDockerfile('FROM a\n# escape=`\n').directives.escape, '\\');
  assert.equal(errOf(() => parseDockerfile('# escape=x\nFROM a')), "invalid escape token 'x' does not match ` or \\");
  assert.equal(errOf(() => parseDockerfile('# escape=`\n# escape=\\\nFROM a')), 'only one escape parser directive can be used');
});

test('line continuations with both escape tokens, comments inside, EOF continuation, empty-line warning', () => {
  const n = one('RUN echo a \\\n  # inside\n  b \\\n\n  c\n');
  assert.deepEqual([n.args, n.startLine, n.endLine], [['echo a   b   c'], 1, 5]);
  assert.deepEqual(parseDockerfile('RUN a \\\n\n b').warnings, ['Empty continuation line found in: RUN a  b']);
  assert.deepEqual(one('# escape=`\nRUN dir c:\\ `\n  /w').args, ['dir c:\\   /w']);
  assert.deepEqual(one('FROM a \\').args, ['a']);
  assert.deepEqual(one('RUN a\\\\\n').args, ['a\\\\'], 'an escaped escape does not continue');
});

test('empty file and comment-only file', () => {
  assert.equal(errOf(() => parseDockerfile('')), 'file with no instructions');
  const e = (() => { try { parseDockerfile('# c\n\n'); } catch (err) { return err; } })();
  assert.ok(e instanceof DockerfileError);
  assert.equal(e.code, 'InvalidArgument');
  assert.equal(e.message, 'file with no instructions');
});

test('exec vs shell form and the JSON fallback', () => {
  assert.deepEqual(instr('RUN ["echo", "a b"]'), { ...instr('RUN ["echo", "a b"]'), kind: 'run', cmd: ['echo', 'a b'], shell: false });
  const shell = instr('CMD echo  $HOME') as { cmd: string[]; shell: boolean };
  assert.deepEqual([shell.cmd, shell.shell], [['echo  $HOME'], true]);
  const bad = one('ENTRYPOINT [echo, a]');
  assert.deepEqual([bad.args, bad.json], [['[echo, a]'], false]);
  assert.equal(errOf(() => nodes('CMD ["a", 1]')), 'when using JSON array syntax, arrays must be comprised of strings only');
  assert.deepEqual(one('COPY ["a b", "/c"]').args, ['a b', '/c']);
  assert.deepEqual(one('VOLUME /a   /b').args, ['/a', '/b']);
  assert.deepEqual((instr('SHELL ["/bin/bash", "-c"]') as { shell: string[] }).shell, ['/bin/bash', '-c']);
  assert.equal(stageErr('FROM a\nSHELL /bin/sh'), 'dockerfile parse error on line 2: SHELL requires the arguments to be in JSON form');
});

test('ENV, LABEL and ARG forms', () => {
  assert.deepEqual(one('ENV A=1 B="x y" C=a\\ b').args, ['A', '1', '=', 'B', '"x y"', '=', 'C', 'a\\ b', '=']);
  assert.deepEqual((instr('ENV PATH /usr/bin  /x') as { pairs: unknown }).pairs, [{ key: 'PATH', value: '/usr/bin  /x' }]);
  assert.deepEqual((instr('LABEL "a b"=c d=') as { pairs: unknown }).pairs, [{ key: '"a b"', value: 'c' }, { key: 'd', value: '' }]);
  assert.deepEqual((instr('ARG A B=2 C=') as { args: unknown }).args, [{ name: 'A' }, { name: 'B', default: '2' }, { name: 'C', default: '' }]);
  assert.equal(errOf(() => nodes('ENV A')), 'ENV must have two arguments');
  assert.equal(errOf(() => nodes('LABEL a=b c')), 'Syntax error - can\'t find = in "c". Must be of the form: name=value');
  assert.equal(stageErr('FROM a\nENV =x'), 'dockerfile parse error on line 2: ENV names can not be blank');
  assert.equal(stageErr('FROM a\nENV'), 'dockerfile parse error on line 2: ENV requires at least one argument');
  assert.equal(stageErr('FROM a\nARG =x'), 'dockerfile parse error on line 2: ARG names can not be blank');
});

test('FROM, stages, meta ARGs and COPY --from', () => {
  const r = stagesOf('ARG V=1\nFROM --platform=linux/arm64 golang:$V AS Build\nRUN make\nFROM alpine\nCOPY --from=build --chown=1:1 --chmod=755 /out /a /bin/\n');
  assert.deepEqual(r.metaArgs, [{ name: 'V', default: '1' }]);
  assert.deepEqual(r.stages.map((s) => [s.name, s.base, s.platform, s.instructions.map((i) => i.kind)]),
    [['build', 'golang:$V', 'linux/arm64', ['run']], [undefined, 'alpine', undefined, ['copy']]]);
  const copy = r.stages[1].instructions[0];
  assert.ok(copy.kind === 'copy');
  assert.deepEqual([copy.from, copy.chown, copy.chmod, copy.sources, copy.dest], ['build', '1:1', '755', ['/out', '/a'], '/bin/']);
  assert.equal(stageErr('FROM a b'), 'dockerfile parse error on line 1: FROM requires either one or three arguments');
  assert.equal(stageErr('FROM a AS 1x'), 'dockerfile parse error on line 1: invalid name for build stage: "1x", name can\'t start with a number or contain symbols');
  assert.equal(stageErr('RUN x'), 'no build stage in current context');
  assert.equal(stageErr('FROM a\nCOPY x'), 'dockerfile parse error on line 2: COPY requires at least two arguments, but only one was provided. Destination could not be determined');
  assert.equal(stageErr('FROM a\nCOPY --fro=x a b'), 'dockerfile parse error on line 2: unknown flag: --fro (did you mean from?)');
  assert.equal(stageErr('FROM a\nCOPY --from a b'), 'dockerfile parse error on line 2: missing a value on flag: --from');
  assert.equal(stageErr('FROM a\nADD --link=maybe a b'), 'dockerfile parse error on line 2: expecting boolean value for flag --link, not: maybe');
});

test('ADD, RUN flags, and the single-value instructions', () => {
  const add = instr('ADD --checksum=sha256:x --unpack=false http://x/a.tgz /d');
  assert.ok(add.kind === 'add');
  assert.deepEqual([add.checksum, add.unpack, add.sources, add.dest], ['sha256:x', false, ['http://x/a.tgz'], '/d']);
  const run = instr('RUN --mount=type=cache,target=/c --network=none make');
  assert.ok(run.kind === 'run');
  assert.deepEqual([run.mounts, run.network, run.flagsUsed, run.cmd], [['type=cache,target=/c'], 'none', ['mount', 'network'], ['make']]);
  for (const [line, kind, value] of [['WORKDIR /a b', 'workdir', '/a b'], ['USER 1:2', 'user', '1:2'], ['STOPSIGNAL SIGKILL', 'stopsignal', 'SIGKILL'], ['MAINTAINER me <m@x>', 'maintainer', 'me <m@x>']]) {
    assert.deepEqual(instr(line), { kind, value, node: one(line) });
  }
  assert.deepEqual((instr('EXPOSE 80/tcp 443 53/udp') as { ports: string[] }).ports, ['443', '53/udp', '80/tcp']);
  assert.equal(stageErr('FROM a\nWORKDIR'), 'dockerfile parse error on line 2: WORKDIR requires exactly one argument');
  assert.equal(stageErr('FROM a\nEXPOSE'), 'dockerfile parse error on line 2: EXPOSE requires at least one argument');
  assert.equal(stageErr('FROM a\nVOLUME [""]'), 'dockerfile parse error on line 2: VOLUME specified can not be an empty string');
  assert.equal(stageErr('FROM a\nENV --x a=b'), 'dockerfile parse error on line 2: unknown flag: --x');
  assert.equal(stageErr('FROM a\nFOO bar'), 'dockerfile parse error on line 2: unknown instruction: FOO (did you mean FROM?)');
  assert.equal(stageErr('FROM a\nXYZZY bar'), 'dockerfile parse error on line 2: unknown instruction: XYZZY');
  assert.equal(stageErr('FROM a\ncopx a b'), 'dockerfile parse error on line 2: unknown instruction: copx (did you mean copy?)');
});

test('HEALTHCHECK', () => {
  const h = instr('HEALTHCHECK --interval=1m30s --timeout=1.5s --retries=3 CMD curl -f http://x/');
  assert.ok(h.kind === 'healthcheck');
  assert.deepEqual(h.health, { test: ['CMD-SHELL', 'curl -f http://x/'], interval: 90e9, timeout: 1.5e9, startPeriod: 0, startInterval: 0, retries: 3 });
  const j = instr('HEALTHCHECK CMD ["true"]');
  assert.ok(j.kind === 'healthcheck');
  assert.deepEqual(j.health.test, ['CMD', 'true']);
  assert.deepEqual((instr('healthcheck none') as { health: unknown }).health, { test: ['NONE'] });
  assert.equal(stageErr('FROM a\nHEALTHCHECK NONE x'), 'dockerfile parse error on line 2: HEALTHCHECK NONE takes no arguments');
  assert.equal(stageErr('FROM a\nHEALTHCHECK CMD'), 'dockerfile parse error on line 2: Missing command after HEALTHCHECK CMD');
  assert.equal(stageErr('FROM a\nHEALTHCHECK FOO x'), 'dockerfile parse error on line 2: Unknown type "FOO" in HEALTHCHECK (try CMD)');
  assert.equal(stageErr('FROM a\nHEALTHCHECK --interval=1us CMD x'), 'dockerfile parse error on line 2: Interval "interval" cannot be less than 1ms');
  assert.equal(stageErr('FROM a\nHEALTHCHECK --retries=-1 CMD x'), 'dockerfile parse error on line 2: --retries cannot be negative (-1)');
  assert.equal(stageErr('FROM a\nHEALTHCHECK --timeout=5 CMD x'), 'dockerfile parse error on line 2: time: missing unit in duration "5"');
  assert.equal(parseGoDuration('2h45m0.5s'), (2 * 3600 + 45 * 60 + 0.5) * 1e9);
  assert.equal(parseGoDuration('0'), 0);
  assert.equal(errOf(() => parseGoDuration('1x')), 'time: unknown unit "x" in duration "1x"');
});

test('ONBUILD', () => {
  const n = one('ONBUILD RUN ["echo", "x"]');
  assert.deepEqual([n.args, n.child?.cmd, n.child?.json], [['RUN', 'echo', 'x'], 'run', true]);
  assert.deepEqual((instr('onbuild  COPY . /app') as { expression: string }).expression, 'COPY . /app');
  assert.equal(stageErr('FROM a\nONBUILD ONBUILD RUN x'), 'dockerfile parse error on line 2: Chaining ONBUILD via `ONBUILD ONBUILD` isn\'t allowed');
  assert.equal(stageErr('FROM a\nONBUILD FROM x'), 'dockerfile parse error on line 2: FROM isn\'t allowed as an ONBUILD trigger');
  assert.equal(stageErr('FROM a\nONBUILD'), 'dockerfile parse error on line 2: ONBUILD requires at least one argument');
});

test('shell lexer: substitution forms, quotes and escapes', () => {
  const env = envLookup({ A: 'a', E: '', S: 'x  y' });
  const lex = new ShellLex();
  const w = (s: string) => lex.processWord(s, env);
  assert.equal(w('$A-${A}_$B'), 'a-a_');
  assert.equal(w('${B:-d} ${E:-d} ${E-d} ${B-d}'), 'd d  d');
  assert.equal(w('${A:+alt} ${E:+alt} ${E+alt} ${B+alt}'), 'alt  alt ');
  assert.equal(w(`'$A' "$A \\$A \\" \\x" \\$A`), '$A a $A " \\x $A');
  assert.equal(w('$ $1x ${B:-"q r"}'), '$ x q r');
  assert.deepEqual(lex.processWords('$S "$S" z\\ w', env), ['x', 'y', 'x  y', 'z w']);
  assert.equal(new ShellLex('`').processWord('a`$A b\\c', env), 'a$A b\\c');
  assert.equal(errOf(() => w('${B:?must set}')), 'failed to process "${B:?must set}": B: must set');
  assert.equal(errOf(() => w('${E:?}')), 'failed to process "${E:?}": E: is not allowed to be empty');
  assert.equal(errOf(() => w('${A:-x')), 'failed to process "${A:-x": syntax error: missing \'}\'');
  assert.equal(errOf(() => w('${A')), 'failed to process "${A": unsupported modifier (\uFFFD) in substitution');
  assert.equal(errOf(() => w('${:}')), 'failed to process "${:}": syntax error: bad substitution');
  assert.equal(errOf(() => w("'a")), 'failed to process "\'a": unexpected end of statement while looking for matching single-quote');
  assert.equal(errOf(() => w('${A%x}')), 'failed to process "${A%x}": unsupported modifier (%) in substitution');
});

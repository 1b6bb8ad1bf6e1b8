// bin/engine against a real daemon: `apply` does Compose's client-side work (.env interpolation,
// env_file, configs and secrets files, relative binds) and --wait waits for Ready or reports
// Degraded; `stack ls|ps|inspect|rm`; the daemon from -H, ENGINE_HOST or DOCKER_HOST; the daemon's
// errors as `Error response from daemon: ...`.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { dockerOk, runProcess, type TestImages } from './harness/clients.ts';
import { REPO, type DaemonHandle } from './harness/daemon.ts';
import { runEngine } from './harness/engine-cli.ts';
import { removeAllAndCleanup, startWithImages } from './harness/setup.ts';

const engine = runEngine;

describe('bin/engine', () => {
  let d: DaemonHandle;
  let imgs: TestImages;
  let root: string;
  let dir: string;
  const dk = dockerOk(() => d);
  const H = () => ['-H', `unix://${d.socket}`];
  before(async () => {
    ({ d, imgs } = await startWithImages({ bridge: true }));
    root = mkdtempSync(join(tmpdir(), 'engine-client-e2e-'));
    // The project name comes from the directory, normalised: "My Shop!" -> "myshop".
    dir = join(root, 'My Shop!');
    mkdirSync(join(dir, 'data'), { recursive: true });
    writeFileSync(join(dir, 'data', 'hello.txt'), 'hello from the bind\n');
    writeFileSync(join(dir, '.env'), `IMAGE=${imgs.tag}\nTOKEN="s3cret token"\nGREETING=from-dotenv\n`);
    writeFileSync(join(dir, 'app.env'), '# read by the client\nFROM_ENV_FILE=yes\nOVERRIDDEN=from-env-file\n');
    writeFileSync(join(dir, 'site.conf'), 'listen 80;\n');
    writeFileSync(join(dir, 'compose.yaml'), [
      'services:',
      '  web:',
      '    image: ${IMAGE}',
      '    command: ["sleep", "300"]',
      '    env_file: app.env',
      '    environment:',
      '      OVERRIDDEN: from-environment',
      '      GREETING: ${GREETING:-unset}',
      '      PRICE: "$$5"',
      '    configs: [site]',
      '    secrets: [token]',
      '    volumes: ["./data:/data", "cache:/cache"]',
      'configs:',
      '  site:',
      '    file: ./site.conf',
      'secrets:',
      '  token:',
      '    environment: TOKEN',
      'volumes:',
      '  cache: {}',
      '',
    ].join('\n'));
  });
  after(async () => {
    if (root) rmSync(root, { recursive: true, force: true });
    await removeAllAndCleanup(d);
  });

  test('apply -f --wait: the client-side work done, exit 0 once Ready', async () => {
    const r = await engine([...H(), 'apply', '-f', join(dir, 'compose.yaml'), '--wait', '--timeout', '60'], { GREETING: 'from-shell', DOCKER_HOST: 'unix:///nonexistent.sock' });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /stack myshop created/);
    assert.match(r.stdout, /stack myshop ready/);
    // Progress as compose prints it without a terminal: a plain line each time the service's state changes, Ready last.
    const states = r.stdout.split('\n').filter((l) => l.startsWith('Service web  ')).map((l) => l.slice('Service web  '.length));
    assert.equal(states.at(-1), 'Ready', r.stdout);
    assert.ok(states.every((st) => /^(Creating|Created|Starting|Started|Ready)$/.test(st)), r.stdout);
    assert.equal(new Set(states).size, states.length, 'a state is printed once');
    const env = await dk('inspect', '-f', '{{range .Config.Env}}{{println .}}{{end}}', 'myshop-web-1');
    assert.match(env, /^FROM_ENV_FILE=yes$/m, 'env_file read');
    assert.match(env, /^OVERRIDDEN=from-environment$/m, 'environment wins over env_file');
    assert.match(env, /^GREETING=from-shell$/m, 'the process environment wins over .env');
    assert.match(env, /^PRICE=\$5$/m, '$$ is $');
    assert.equal(await dk('exec', 'myshop-web-1', 'cat', '/site'), 'listen 80;', 'the config file\'s content');
    assert.equal(await dk('exec', 'myshop-web-1', 'cat', '/run/secrets/token'), 's3cret token', 'the secret from .env');
    assert.equal(await dk('exec', 'myshop-web-1', 'cat', '/data/hello.txt'), 'hello from the bind');
    const mounts = JSON.parse(await dk('inspect', '-f', '{{json .Mounts}}', 'myshop-web-1')) as Array<{ Type: string; Source: string; Destination: string }>;
    assert.equal(mounts.find((m) => m.Destination === '/data')?.Source, join(dir, 'data'), 'the bind from the absolute path');
    assert.equal(mounts.find((m) => m.Destination === '/cache')?.Type, 'volume');
  });

  test('stack ls, ps and inspect (ENGINE_HOST, DOCKER_HOST)', async () => {
    const ls = await engine(['stack', 'ls'], { ENGINE_HOST: `unix://${d.socket}`, DOCKER_HOST: 'unix:///nonexistent.sock' });
    assert.equal(ls.code, 0, ls.stderr);
    assert.match(ls.stdout, /^NAME\s+STATUS\s+SERVICES$/m);
    assert.match(ls.stdout, /^myshop\s+Ready\s+1$/m);
    const ps = await engine(['stack', 'ps', 'myshop'], { DOCKER_HOST: `unix://${d.socket}` });
    assert.equal(ps.code, 0, ps.stderr);
    assert.match(ps.stdout, /^SERVICE\s+DESIRED\s+READY\s+CONDITION/m);
    assert.match(ps.stdout, /^web\s+1\s+1\s+Ready\b/m);
    const inspect = await engine([...H(), 'stack', 'inspect', 'myshop']);
    assert.equal(inspect.code, 0, inspect.stderr);
    const [s] = JSON.parse(inspect.stdout);
    assert.equal(s.Name, 'myshop');
    assert.equal(s.Document.services.web.image, imgs.tag);
    assert.equal(s.Document.services.web.env_file, undefined);
    assert.equal(s.Document.configs.site.content, 'listen 80;\n');
    assert.equal(s.Document.services.web.volumes[0], `${join(dir, 'data')}:/data`);
    assert.equal(s.Status.Conditions.find((c: { type: string }) => c.type === 'Ready').status, 'True');
  });

  test('applying the same file again: configured, nothing recreated', async () => {
    const id = await dk('inspect', '-f', '{{.Id}}', 'myshop-web-1');
    const r = await engine([...H(), 'apply', '-f', join(dir, 'compose.yaml'), '--wait', '--timeout', '60'], { GREETING: 'from-shell' });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /stack myshop configured/);
    assert.equal(await dk('inspect', '-f', '{{.Id}}', 'myshop-web-1'), id);
  });

  test('a failing one-shot service: apply --wait exits non-zero with the Degraded condition', async () => {
    const file = join(root, 'failing.yaml');
    writeFileSync(file, `name: failing\nservices:\n  job:\n    image: ${imgs.tag}\n    restart: "no"\n    command: ["false"]\n`);
    const r = await engine([...H(), 'apply', '-f', file, '--wait', '--timeout', '60']);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /stack failing is Degraded/);
    assert.match(r.stderr, /Degraded=True \(ServicesDegraded\): job: container failing-job-1 exited with code 1/);
    assert.match(r.stderr, /service job: 0\/1 ready, Degraded \(ExitedNonZero\)/);
    const rm = await engine([...H(), 'stack', 'rm', 'failing']);
    assert.equal(rm.code, 0, rm.stderr);
  });

  test('completion: bash completes commands, flags and the daemon\'s stack names; the zsh script loads', async () => {
    const bin = join(REPO, 'bin');
    const script = [
      `export PATH=${bin}:$PATH`,
      'source <(engine completion bash)',
      'comp() { COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); COMPREPLY=(); _engine; echo "${COMPREPLY[*]}"; }',
      "comp engine ''",
      'comp engine st',
      "comp engine stack ''",
      'comp engine apply --w',
      `comp engine -H unix://${d.socket} stack rm ''`,
      'comp engine stack rm --v',
    ].join('\n');
    const r = await runProcess('bash', ['-c', script]);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(r.stdout.trim().split('\n'), [
      'apply stack completion help -H --host -h --help',
      'stack',
      'ls ps inspect diff rm',
      '--wait',
      'myshop',
      '--volumes',
    ]);
    const zsh = await runProcess('zsh', ['-fc', 'mkdir -p "$1" && engine completion zsh > "$1/_engine" && fpath=("$1" $fpath) && autoload -U compinit && compinit -u -d "$1/.zcompdump" && autoload -U _engine && echo $_comps[engine]', 'zsh', join(root, 'zfunc')], { env: { ...process.env, PATH: `${bin}:${process.env.PATH}` } });
    assert.equal(zsh.code, 0, zsh.stderr);
    assert.equal(zsh.stdout.trim(), '_engine');
  });

  test('--wait gives up at --timeout with the conditions', async () => {
    const file = join(root, 'slow.yaml');
    writeFileSync(file, `services:\n  slow:\n    image: ${imgs.tag}\n    command: ["sleep", "300"]\n    healthcheck:\n      test: ["CMD", "false"]\n      interval: 1h\n`);
    const r = await engine([...H(), 'apply', '-f', file, '-p', 'slow', '--wait', '--timeout', '2']);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /stack slow not Ready after 2s/);
    // Its healthcheck has not run yet: the last state shown is Starting (health: starting), never Ready.
    assert.match(r.stdout, /^Service slow  Starting$/m, r.stdout);
    assert.doesNotMatch(r.stdout, /Service slow {2}Ready/);
    assert.match(r.stderr, /Progressing=True/);
    assert.equal((await engine([...H(), 'stack', 'rm', 'slow'])).code, 0);
  });

  test('errors: the daemon\'s as "Error response from daemon", the client\'s own', async () => {
    const missing = await engine([...H(), 'stack', 'inspect', 'nosuch']);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /^Error response from daemon: no such stack: nosuch$/m);
    const file = join(root, 'bad.yaml');
    writeFileSync(file, `services:\n  web:\n    image: ${imgs.tag}\n    privileged: true\n`);
    const bad = await engine([...H(), 'apply', '-f', file, '-p', 'bad']);
    assert.equal(bad.code, 1);
    assert.equal(bad.stderr.trim(), 'Error response from daemon: services.web.privileged: key not supported by this daemon');
    writeFileSync(file, 'services:\n  web:\n    image: ${NOPE:?set NOPE}\n');
    const unset = await engine([...H(), 'apply', '-f', file, '-p', 'bad']);
    assert.equal(unset.code, 1);
    assert.equal(unset.stderr.trim(), 'required variable NOPE is missing a value: set NOPE');
  });

  test('stack rm --volumes: containers, network and named volume gone', async () => {
    assert.match(await dk('volume', 'ls', '--format', '{{.Name}}'), /^myshop_cache$/m);
    const r = await engine(['stack', 'rm', 'myshop', '--volumes'], { DOCKER_HOST: `unix://${d.socket}` });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(await dk('ps', '-a', '--filter', 'label=com.docker.compose.project=myshop', '-q'), '');
    assert.doesNotMatch(await dk('volume', 'ls', '--format', '{{.Name}}'), /myshop_cache/);
    assert.doesNotMatch(await dk('network', 'ls', '--format', '{{.Name}}'), /myshop_default/);
    const ls = await engine([...H(), 'stack', 'ls']);
    assert.doesNotMatch(ls.stdout, /myshop/);
  });
});

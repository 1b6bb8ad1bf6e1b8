import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadDaemonConfig, normalizeHost, type DaemonConfig, type ConfigSources } from '../../../config/load.ts';

const NO_FILE = ['--config-file', '/nonexistent/engine-test-daemon.json'];

function withFile(json: unknown): { path: string; done: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'engine-cfg-'));
  const path = join(dir, 'daemon.json');
  writeFileSync(path, typeof json === 'string' ? json : JSON.stringify(json));
  return { path, done: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Runs with a config file, or with the default path pointed at a temp dir that has none. */
function run(argv: string[], json?: unknown, env: NodeJS.ProcessEnv = {}): { config: DaemonConfig; sources: ConfigSources } {
  if (json === undefined) {
    const dir = mkdtempSync(join(tmpdir(), 'engine-cfg-'));
    try {
      // An explicit file that exists and is empty behaves as "no keys".
      writeFileSync(join(dir, 'daemon.json'), '');
      const r = loadDaemonConfig([...argv, '--config-file', join(dir, 'daemon.json')], { HOME: '/home/u', ...env });
      assert.equal(r.kind, 'run');
      return r as { kind: 'run'; config: DaemonConfig; sources: ConfigSources };
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  const f = withFile(json);
  try {
    const r = loadDaemonConfig([...argv, '--config-file', f.path], { HOME: '/home/u', ...env });
    assert.equal(r.kind, 'run');
    return r as { kind: 'run'; config: DaemonConfig; sources: ConfigSources };
  } finally {
    f.done();
  }
}

function fails(argv: string[], json: unknown, re: RegExp, env: NodeJS.ProcessEnv = {}): void {
  const f = json === undefined ? null : withFile(json);
  try {
    assert.throws(() => loadDaemonConfig(f ? [...argv, '--config-file', f.path] : argv, env), (err: Error) => {
      assert.match(err.message, re);
      return true;
    });
  } finally {
    f?.done();
  }
}

describe('defaults', () => {
  test('the documented defaults', () => {
    const { config: c, sources } = run([]);
    assert.deepEqual(c.hosts, ['unix:///var/run/engine.sock']);
    assert.equal(c.dataRoot, '/var/lib/engine');
    assert.equal(c.execRoot, '/var/run/engine');
    assert.equal(c.pidfile, '/var/run/engine.pid');
    assert.equal(c.supervisor, '');
    assert.equal(c.supervisorNamespace, 'engine');
    assert.equal(c.supervisorPluginsNamespace, 'plugins.engine');
    assert.equal(c.defaultRuntime, 'stdrt');
    assert.deepEqual(c.runtimes, {});
    assert.equal(c.storageDriver, '', 'none asked for: chosen at start (drivers/storage/select.ts)');
    assert.deepEqual(c.storageOpts, []);
    assert.equal(c.logLevel, 'info');
    assert.equal(c.debug, false);
    assert.equal(c.shutdownTimeout, 15);
    assert.equal(c.logDriver, 'json-file');
    assert.deepEqual(c.logOpts, {});
    assert.equal(c.group, 'engine');
    assert.equal(c.maxConcurrentDownloads, 3);
    assert.equal(c.maxConcurrentUploads, 5);
    assert.equal(c.maxDownloadAttempts, 5);
    assert.equal(c.defaultShmSize, 64 * 1024 * 1024);
    assert.equal(c.mtu, 1500);
    assert.equal(c.iptables, true);
    assert.equal(c.ipForward, true);
    assert.equal(c.ipMasq, true);
    assert.equal(c.icc, true);
    assert.equal(c.userlandProxy, true);
    assert.equal(c.ip, '0.0.0.0');
    assert.equal(c.seccompProfile, 'builtin');
    assert.equal(c.defaultCgroupnsMode, 'private');
    assert.equal(c.logFormat, 'text');
    assert.equal(c.tlscacert, '/home/u/.engine/ca.pem');
    assert.equal(sources.dataRoot, 'default');
    assert.equal(sources.hosts, 'default');
  });

  test('a missing default config file is fine, a missing explicit one is an error', () => {
    const r = loadDaemonConfig([], {});
    assert.ok(r.kind === 'run' || r.kind === 'validate');
    fails(NO_FILE, undefined, /unable to configure the engine daemon with file \/nonexistent\/engine-test-daemon.json: open .*no such file or directory/);
  });
});

describe('flags', () => {
  test('long, short, =value, repeatable and grouped forms', () => {
    const { config: c, sources } = run([
      '-H', 'unix:///tmp/a.sock', '--host=tcp://0.0.0.0:2375', '--data-root', '/d', '--exec-root=/e', '-p', '/p.pid',
      '-Dl', 'warn', '-s', 'vfs', '-G', 'wheel', '-bnone', '--label', 'a=1', '--label=b=2', '--storage-opt', 'x=y',
    ]);
    assert.deepEqual(c.hosts, ['unix:///tmp/a.sock', 'tcp://0.0.0.0:2375']);
    assert.equal(c.dataRoot, '/d');
    assert.equal(c.execRoot, '/e');
    assert.equal(c.pidfile, '/p.pid');
    assert.equal(c.debug, true);
    assert.equal(c.logLevel, 'warn');
    assert.equal(c.storageDriver, 'vfs');
    assert.equal(c.group, 'wheel');
    assert.equal(c.bridge, 'none');
    assert.deepEqual(c.labels, ['a=1', 'b=2']);
    assert.deepEqual(c.storageOpts, ['x=y']);
    assert.equal(sources.hosts, 'flag');
    assert.equal(sources.debug, 'flag');
  });

  test('bool flags: bare, =true/=false, and the default-true ones', () => {
    assert.equal(run(['--debug']).config.debug, true);
    assert.equal(run(['--debug=false']).config.debug, false);
    assert.equal(run(['--debug=1']).config.debug, true);
    assert.equal(run(['--iptables=false']).config.iptables, false);
    assert.equal(run(['--ip-masq=false', '--userland-proxy=false']).config.userlandProxy, false);
    fails(['--debug=maybe'], undefined, /invalid argument "maybe" for "-D, --debug" flag: strconv.ParseBool/);
  });

  test('typed values: int, bytes, map, ulimit, runtime, feature, pools, network opts', () => {
    const { config: c } = run([
      '--mtu', '1400', '--shutdown-timeout=3', '--default-shm-size', '128m', '--log-opt', 'max-size=10m', '--log-opt', 'max-file=3',
      '--default-ulimit', 'nofile=1024:2048', '--default-ulimit', 'nproc=100', '--add-runtime', 'crun=/usr/bin/crun',
      '--feature', 'cdi', '--feature', 'supervisor-snapshotter=false', '--default-address-pool', 'base=10.10.0.0/16,size=24',
      '--default-network-opt', 'bridge=com.docker.network.driver.mtu=1400', '--default-runtime', 'crun',
    ]);
    assert.equal(c.mtu, 1400);
    assert.equal(c.shutdownTimeout, 3);
    assert.equal(c.defaultShmSize, 128 * 1024 * 1024);
    assert.deepEqual(c.logOpts, { 'max-size': '10m', 'max-file': '3' });
    assert.deepEqual(c.defaultUlimits, { nofile: { Name: 'nofile', Soft: 1024, Hard: 2048 }, nproc: { Name: 'nproc', Soft: 100, Hard: 100 } });
    assert.deepEqual(c.runtimes, { crun: { path: '/usr/bin/crun' } });
    assert.deepEqual(c.features, { cdi: true, 'supervisor-snapshotter': false });
    assert.deepEqual(c.defaultAddressPools, [{ base: '10.10.0.0/16', size: 24 }]);
    assert.deepEqual(c.defaultNetworkOpts, { bridge: { 'com.docker.network.driver.mtu': '1400' } });
    assert.equal(c.defaultRuntime, 'crun');
  });

  test('errors in pflag wording', () => {
    fails(['--x'], undefined, /^unknown flag: --x$/);
    fails(['-X'], undefined, /^unknown shorthand flag: 'X' in -X$/);
    fails(['--data-root'], undefined, /^flag needs an argument: --data-root$/);
    fails(['-H'], undefined, /^flag needs an argument: 'H' in -H$/);
    fails(['--mtu', 'abc'], undefined, /invalid argument "abc" for "--mtu" flag/);
    fails(['--default-shm-size', 'lots'], undefined, /invalid size: 'lots'/);
    fails(['--default-ulimit', 'bogus=1'], undefined, /invalid ulimit type: bogus/);
    fails(['--default-ulimit', 'nofile=10:5'], undefined, /soft limit must be less than or equal to hard limit/);
    fails(['--add-runtime', 'stdrt=/bin/x'], undefined, /runtime name 'stdrt' is reserved/);
    fails(['--add-runtime', 'nopath'], undefined, /invalid runtime argument: nopath/);
    fails(['stray'], undefined, /accepts no arguments/);
  });

  test('help, version and validate', () => {
    const h = loadDaemonConfig(['--help'], {});
    assert.equal(h.kind, 'help');
    assert.match((h as { text: string }).text, /--data-root string\s+Root directory of persistent engine state \(default "\/var\/lib\/engine"\)/);
    assert.match((h as { text: string }).text, /-H, --host list/);
    assert.equal(loadDaemonConfig(['-v'], {}).kind, 'version');
    assert.equal(loadDaemonConfig(['--version'], {}).kind, 'version');
    const f = withFile({ debug: true });
    try {
      const v = loadDaemonConfig(['--validate', '--config-file', f.path], {});
      assert.equal(v.kind, 'validate');
      assert.deepEqual({ ok: v.kind === 'validate' && v.ok, message: v.kind === 'validate' && v.message }, { ok: true, message: 'configuration OK' });
      assert.equal(v.kind === 'validate' && v.config?.configFile, f.path, 'the merged configuration, for the checks a reload makes');
    } finally {
      f.done();
    }
  });

  test('-H with an empty value means the default; hosts are normalised', () => {
    assert.deepEqual(run(['-H', '']).config.hosts, ['unix:///var/run/engine.sock']);
    assert.deepEqual(run(['-H', 'unix://']).config.hosts, ['unix:///var/run/engine.sock']);
    assert.equal(normalizeHost('tcp://'), 'tcp://127.0.0.1:2375');
    assert.equal(normalizeHost('tcp://', true), 'tcp://127.0.0.1:2376');
    assert.equal(normalizeHost(':2375'), 'tcp://127.0.0.1:2375');
    assert.equal(normalizeHost('0.0.0.0:4243'), 'tcp://0.0.0.0:4243');
    assert.equal(normalizeHost('tcp://host:1/path'), 'tcp://host:1/path');
    assert.equal(normalizeHost('fd://'), 'fd://');
    assert.equal(normalizeHost('fd://3'), 'fd://3');
    assert.throws(() => normalizeHost('udp://x:1'), /Invalid bind address format/);
    assert.deepEqual(run(['--tlsverify', '-H', 'tcp://']).config.hosts, ['tcp://127.0.0.1:2376']);
  });
});

describe('config file', () => {
  test('keys of every shape are read and typed', () => {
    const { config: c, sources } = run([], {
      debug: true, 'data-root': '/srv/engine', hosts: ['unix:///tmp/f.sock'], labels: ['a=b'], 'log-opts': { 'max-size': '1m' },
      'default-shm-size': '32M', 'default-ulimits': { nofile: { Name: 'nofile', Soft: 10, Hard: 20 } },
      runtimes: { crun: { path: '/usr/bin/crun', runtimeArgs: ['--debug'] }, kata: { runtimeType: 'io.containerd.kata.v2', options: { ConfigPath: '/x' } } },
      features: { cdi: true }, proxies: { 'http-proxy': 'http://p:3128', 'no-proxy': 'localhost' },
      'default-address-pools': [{ base: '172.30.0.0/16', size: 24 }], 'default-network-opts': { bridge: { 'com.docker.network.driver.mtu': '1450' } },
      'insecure-registries': ['localhost:5000'], 'registry-mirrors': ['https://m.example'], 'max-concurrent-downloads': 7, 'live-restore': true,
      builder: { gc: { enabled: true, defaultKeepStorage: '10GB' } }, iptables: false, 'cdi-spec-dirs': ['/etc/cdi'],
    });
    assert.equal(c.debug, true);
    assert.equal(c.dataRoot, '/srv/engine');
    assert.deepEqual(c.hosts, ['unix:///tmp/f.sock']);
    assert.deepEqual(c.labels, ['a=b']);
    assert.deepEqual(c.logOpts, { 'max-size': '1m' });
    assert.equal(c.defaultShmSize, 32 * 1024 * 1024);
    assert.deepEqual(c.defaultUlimits.nofile, { Name: 'nofile', Soft: 10, Hard: 20 });
    assert.deepEqual(c.runtimes.crun, { path: '/usr/bin/crun', runtimeArgs: ['--debug'] });
    assert.equal(c.runtimes.kata.runtimeType, 'io.containerd.kata.v2');
    assert.deepEqual(c.features, { cdi: true });
    assert.equal(c.httpProxy, 'http://p:3128');
    assert.equal(c.noProxy, 'localhost');
    assert.deepEqual(c.defaultAddressPools, [{ base: '172.30.0.0/16', size: 24 }]);
    assert.equal(c.defaultNetworkOpts.bridge['com.docker.network.driver.mtu'], '1450');
    assert.deepEqual(c.insecureRegistries, ['localhost:5000']);
    assert.equal(c.maxConcurrentDownloads, 7);
    assert.equal(c.liveRestore, true);
    assert.equal(c.builder.gc?.enabled, true);
    assert.equal(c.iptables, false);
    assert.equal(sources.dataRoot, 'file');
    assert.equal(sources.httpProxy, 'file');
    assert.equal(sources.execRoot, 'default');
  });

  test('flags and file merge when they set different options', () => {
    const { config: c, sources } = run(['--data-root', '/flag'], { 'exec-root': '/file' });
    assert.equal(c.dataRoot, '/flag');
    assert.equal(c.execRoot, '/file');
    assert.equal(sources.dataRoot, 'flag');
    assert.equal(sources.execRoot, 'file');
  });

  test('an option both as a flag and in the file is the reference conflict error', () => {
    fails(['--data-root', '/a'], { 'data-root': '/b' }, /unable to configure the engine daemon with file .*: the following directives are specified both as a flag and in the configuration file: data-root: \(from flag: \/a, from file: \/b\)$/);
    fails(['-H', 'unix:///x.sock'], { hosts: ['tcp://127.0.0.1:2376'] }, /hosts: \(from flag: \[unix:\/\/\/x.sock\], from file: \[tcp:\/\/127.0.0.1:2376\]\)/);
    fails(['--debug', '--label', 'a=b'], { debug: false, labels: ['c=d'] }, /debug: \(from flag: true, from file: false\), labels: \(from flag: \[a=b\], from file: \[c=d\]\)/);
    fails(['--log-opt', 'max-size=1m'], { 'log-opts': { 'max-size': '2m' } }, /log-opts: \(from flag: map\[max-size:1m\], from file: map\[max-size:2m\]\)/);
    // features and log-format: flag or key, never both
    fails(['--feature', 'cdi'], { features: { cdi: true } }, /features: \(from flag/);
    fails(['--log-format', 'json'], { 'log-format': 'json' }, /log-format: \(from flag: json, from file: json\)/);
    // proxies are nested in the file, masked in the message
    fails(['--http-proxy', 'https://u:pw@example.org'], { proxies: { 'http-proxy': 'https://u:pw@example.org' } },
      /http-proxy: \(from flag: https:\/\/xxxxx:xxxxx@example.org, from file: https:\/\/xxxxx:xxxxx@example.org\)/);
  });

  test('unknown keys, bad JSON and wrong types are errors', () => {
    fails([], { debug: true, nope: 1, 'also-nope': 2 }, /the following directives don't match any configuration option: also-nope, nope/);
    fails([], { proxies: { 'ftp-proxy': 'x' } }, /don't match any configuration option: ftp-proxy/);
    fails([], '{"debug": tru', /invalid JSON/);
    fails([], '[1]', /must be a JSON object/);
    fails([], { debug: 'yes' }, /"debug".*expected a boolean, got string/);
    fails([], { labels: 'a=b' }, /"labels".*expected an array of strings/);
    fails([], { mtu: 1.5 }, /"mtu".*expected an integer/);
  });

  test('a UTF-8 BOM and an empty file are accepted', () => {
    assert.equal(run([], '\uFEFF{"debug": true}').config.debug, true);
    assert.equal(run([], '  \n').config.debug, false);
  });

  test('--validate reports instead of throwing', () => {
    const f = withFile({ bogus: true });
    try {
      const r = loadDaemonConfig(['--validate', '--config-file', f.path], {});
      assert.equal(r.kind, 'validate');
      assert.equal((r as { ok: boolean }).ok, false);
      assert.match((r as { message: string }).message, /unable to configure the engine daemon with file .*: the following directives don't match any configuration option: bogus/);
    } finally {
      f.done();
    }
  });
});

describe('validation of the merged configuration', () => {
  test('the reference checks', () => {
    fails(['--log-level', 'loud'], undefined, /invalid logging level: loud/);
    fails(['--log-format', 'xml'], undefined, /invalid log format: xml/);
    fails(['--max-concurrent-downloads', '-1'], undefined, /invalid max concurrent downloads: -1/);
    fails(['--max-concurrent-uploads=-2'], undefined, /invalid max concurrent uploads: -2/);
    fails(['--mtu=-1'], undefined, /invalid default MTU: -1/);
    fails(['--dns', 'not-an-ip'], undefined, /not-an-ip is not an ip address/);
    fails(['--label', 'novalue'], undefined, /invalid label 'novalue'/);
    fails(['--label', 'a=1', '--label', 'a=2'], undefined, /conflict labels for a=2 and a=1/);
    fails(['--default-runtime', 'ghost'], undefined, /specified default runtime 'ghost' does not exist/);
    fails([], { runtimes: { stdrt: { path: 'runc' } } }, /runtime name 'stdrt' is reserved/);
    fails([], { runtimes: { x: { path: 'a', runtimeType: 'b' } } }, /cannot configure both path and runtimeType/);
    fails(['--default-cgroupns-mode', 'shared'], undefined, /invalid default cgroup namespace/);
    fails(['--exec-opt', 'native.cgroupdriver=upstart'], undefined, /native.cgroupdriver option upstart not supported/);
    fails(['-H', 'udp://1.2.3.4:5'], undefined, /Invalid bind address format/);
  });
});

describe('environment', () => {
  test('env applies only where flags and file are silent', () => {
    const env = { ENGINE_DRIVER: 'vfs', ENGINE_TLS_VERIFY: '1', HTTPS_PROXY: 'http://env:1', no_proxy: 'x', ENGINE_TMPDIR: '/t', ENGINE_RAMDISK: '1', ENGINE_DISABLE_PIGZ: '1', ENGINE_CERT_PATH: '/certs' };
    const { config: c, sources } = run([], undefined, env);
    assert.equal(c.storageDriver, 'vfs');
    assert.equal(sources.storageDriver, 'env');
    assert.equal(c.tlsverify, true);
    assert.equal(c.tls, true);
    assert.equal(c.httpsProxy, 'http://env:1');
    assert.equal(c.noProxy, 'x');
    assert.equal(c.tmpDir, '/t');
    assert.equal(c.noPivotRoot, true);
    assert.equal(c.disablePigz, true);
    assert.equal(c.tlscacert, '/certs/ca.pem');
    assert.equal(c.tlskey, '/certs/key.pem');
    const flagWins = run(['-s', 'overlay2', '--https-proxy', 'http://flag:1'], undefined, env).config;
    assert.equal(flagWins.storageDriver, 'overlay2');
    assert.equal(flagWins.httpsProxy, 'http://flag:1');
    assert.equal(run([], { 'storage-driver': 'overlay2' }, env).config.storageDriver, 'overlay2');
  });
});

test('--rootless: per-user roots unless given (data under XDG_DATA_HOME, exec root, pidfile and socket under XDG_RUNTIME_DIR)', () => {
  const env = { HOME: '/home/u', XDG_RUNTIME_DIR: '/run/user/1000' };
  const { config } = run(['--rootless'], undefined, env);
  assert.equal(config.dataRoot, '/home/u/.local/share/engine');
  assert.equal(config.execRoot, '/run/user/1000/engine');
  assert.equal(config.pidfile, '/run/user/1000/engine.pid');
  assert.deepEqual(config.hosts, ['unix:///run/user/1000/engine.sock']);
  // Without --config-file: the user's own file (missing is fine, as the default file).
  const own = loadDaemonConfig(['--rootless'], { ...env, HOME: '/nonexistent-home' }) as { kind: 'run'; config: DaemonConfig };
  assert.equal(own.config.configFile, '/nonexistent-home/.config/engine/daemon.json');
  const given = run(['--rootless', '--data-root', '/srv/e', '-H', 'unix:///tmp/e.sock'], undefined, { ...env, XDG_DATA_HOME: '/x' }).config;
  assert.equal(given.dataRoot, '/srv/e');
  assert.deepEqual(given.hosts, ['unix:///tmp/e.sock']);
  assert.equal(given.execRoot, '/run/user/1000/engine');
  assert.equal(run(['--rootless'], undefined, { HOME: '/home/u', XDG_RUNTIME_DIR: '/r', XDG_DATA_HOME: '/d' }).config.dataRoot, '/d/engine');
  assert.throws(() => run(['--rootless'], undefined, { HOME: '/home/u' }), /rootless mode needs XDG_RUNTIME_DIR/);
});

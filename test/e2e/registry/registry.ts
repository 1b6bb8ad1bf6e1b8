// Run Debian's docker-registry for tests: storage in a temp dir, plain HTTP or TLS (a test CA made
// with openssl), optional basic auth (a bcrypt htpasswd file). Each registry is stopped by its PID.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { shellQuote, watchdog } from './watchdog.ts';

export const REGISTRY_BIN = '/usr/bin/docker-registry';

export function registryAvailable(): boolean {
  return existsSync(REGISTRY_BIN);
}

export interface TestCa {
  dir: string;
  caCert: string;
  /** Server certificate and key for the names given (IP SANs for IP literals). */
  cert: string;
  key: string;
}

/** A CA and a server certificate signed by it, for `names` (e.g. ['127.0.0.1', 'localhost']). */
export async function makeTestCa(names: string[]): Promise<TestCa> {
  const dir = await mkdtemp(join(tmpdir(), 'engine-test-ca-'));
  const run = (args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  run(['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '2', '-subj', '/CN=engine test CA']);
  run(['req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'server.key', '-out', 'server.csr', '-subj', `/CN=${names[0]}`]);
  const san = names.map((n) => (/^[\d.]+$/.test(n) || n.includes(':') ? `IP:${n}` : `DNS:${n}`)).join(',');
  await writeFile(join(dir, 'ext.cnf'), `subjectAltName=${san}\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n`);
  run(['x509', '-req', '-in', 'server.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'server.crt', '-days', '2', '-extfile', 'ext.cnf']);
  return { dir, caCert: join(dir, 'ca.crt'), cert: join(dir, 'server.crt'), key: join(dir, 'server.key') };
}

/**
 * One bcrypt htpasswd line, or undefined when no bcrypt implementation is available: apache2-utils'
 * htpasswd if installed, else Python's crypt module (libxcrypt does bcrypt; Debian's python3 first,
 * since crypt left the standard library in Python 3.13).
 */
export function bcryptHtpasswd(user: string, password: string): string | undefined {
  const attempts: Array<[string, string[]]> = [
    ['htpasswd', ['-nbBC', '5', user, password]],
    ...['/usr/bin/python3', 'python3'].map((py): [string, string[]] => [py, ['-W', 'ignore', '-c', 'import crypt,sys; print(sys.argv[1] + ":" + crypt.crypt(sys.argv[2], crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=1<<5)))', user, password]]),
  ];
  for (const [cmd, args] of attempts) {
    try {
      const line = execFileSync(cmd, args, { stdio: 'pipe' }).toString().trim();
      if (line.startsWith(`${user}:$2`)) return line;
    } catch {
      // not installed, or no bcrypt there
    }
  }
  return undefined;
}

export async function freePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.on('error', reject);
    srv.listen(0, host, () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
  });
}

export interface RegistryOptions {
  /** Address to listen on (default 127.0.0.1). */
  host?: string;
  tls?: { cert: string; key: string };
  /** htpasswd line(s) enabling basic auth. */
  htpasswd?: string;
  /** Extra config appended verbatim (YAML). */
  extraConfig?: string;
}

export interface TestRegistry {
  /** host:port as a reference names it (`127.0.0.1:5123`). */
  hostPort: string;
  url: string;
  dataDir: string;
  process: ChildProcess;
  logs(): string;
  stop(): Promise<void>;
}

export async function startRegistry(opts: RegistryOptions = {}): Promise<TestRegistry> {
  const host = opts.host ?? '127.0.0.1';
  const dir = await mkdtemp(join(tmpdir(), 'engine-test-registry-'));
  const port = await freePort(host);
  let auth = '';
  if (opts.htpasswd) {
    await writeFile(join(dir, 'htpasswd'), `${opts.htpasswd}\n`);
    auth = `auth:\n  htpasswd:\n    realm: basic-realm\n    path: ${join(dir, 'htpasswd')}\n`;
  }
  const tls = opts.tls ? `  tls:\n    certificate: ${opts.tls.cert}\n    key: ${opts.tls.key}\n` : '';
  const config = `version: 0.1
log:
  level: warn
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: ${join(dir, 'data')}
  delete:
    enabled: true
  cache:
    blobdescriptor: inmemory
http:
  addr: ${host.includes(':') ? `[${host}]` : host}:${port}
  secret: engine-test-secret
${tls}${auth}${opts.extraConfig ?? ''}`;
  await writeFile(join(dir, 'config.yml'), config);
  const child = spawn(REGISTRY_BIN, ['serve', join(dir, 'config.yml')], { stdio: ['ignore', 'pipe', 'pipe'] });
  const dog = watchdog(`kill ${child.pid} 2>/dev/null; rm -rf ${shellQuote(dir)}`);
  let output = '';
  child.stdout!.on('data', (d: Buffer) => (output = (output + d.toString()).slice(-20000)));
  child.stderr!.on('data', (d: Buffer) => (output = (output + d.toString()).slice(-20000)));
  const hostPort = `${host.includes(':') ? `[${host}]` : host}:${port}`;
  const url = `${opts.tls ? 'https' : 'http'}://${hostPort}`;
  const stop = async () => {
    dog.cancel();
    const running = () => child.exitCode === null && child.signalCode === null;
    const kill = (sig: NodeJS.Signals) => {
      try {
        if (child.pid) process.kill(child.pid, sig);
      } catch {
        /* already gone */
      }
    };
    if (running()) {
      const exited = new Promise((r) => child.once('exit', r));
      kill('SIGTERM');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 3000))]);
      if (running()) kill('SIGKILL');
    }
    await rm(dir, { recursive: true, force: true });
  };
  const deadline = Date.now() + 15000;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      await stop();
      throw new Error(`docker-registry exited: ${output}`);
    }
    if (await answers(url)) break;
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`docker-registry did not start: ${output}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return { hostPort, url, dataDir: dir, process: child, logs: () => output, stop };
}

function answers(url: string): Promise<boolean> {
  return new Promise((resolve) => {
    const req = (url.startsWith('https') ? httpsRequest : httpRequest)(`${url}/v2/`, { rejectUnauthorized: false, agent: false }, (res) => {
      res.resume();
      resolve(true);
    });
    req.on('error', () => resolve(false));
    req.setTimeout(1000, () => req.destroy());
    req.end();
  });
}

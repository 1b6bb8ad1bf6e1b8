// What a node keeps of the swarm it is in, under <data-root>/swarm/ (the reference's layout):
// state.json (its id, the cluster's, its role and addresses, where the swarm's etcd is: the managed
// member's ports, or --cluster-store's), the
// certificates (certificates/swarm-node.crt, swarm-node.key, swarm-root-ca.crt) and the member's
// data (etcd/, drivers/swarm/etcd-member.ts). No state file: the node is in no swarm. With autolock
// a manager's key is sealed by the swarm's unlock key (lib/swarm/unlock-key.ts); while the node runs
// its key is kept unsealed under <exec-root>/swarm only.
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import * as z from 'zod';
import type { KeyPair } from '../../drivers/swarm/ca.ts';
import { isSealed, seal, unseal } from '../../lib/swarm/unlock-key.ts';

const SwarmState = z.object({
  nodeId: z.string().regex(/^[a-z0-9]{25}$/),
  clusterId: z.string().regex(/^[a-z0-9]{25}$/),
  role: z.enum(['manager', 'worker']),
  /** host:port, normalised (lib/swarm/addresses.ts). */
  listenAddr: z.string(),
  /** The advertise IP and port. */
  advertiseHost: z.string(),
  advertisePort: z.string(),
  dataPathAddr: z.string(),
  /** managed: this daemon runs an etcd member of the swarm; external: the swarm lives in --cluster-store's etcd. */
  store: z.enum(['managed', 'external']).default('managed'),
  member: z.object({ clientPort: z.number().int(), peerPort: z.number().int() }).optional(),
  /** A node that joined a managed swarm: the managers' etcd client URLs it was given. */
  managers: z.array(z.string()).optional(),
  /** The swarm's dispatcher heartbeat period (ns) when the node entered it: a node is down after 3 of them without a renewal. */
  heartbeatNs: z.number().int().positive().optional(),
  /** A node that joined through a manager's address: that address (asked to forget the node if the join is given up). */
  joinedThrough: z.string().optional(),
});
export type SwarmState = z.output<typeof SwarmState>;

/** The node's key is sealed (autolock) and the unlock key that opens it has not been given. */
export class SwarmLockedError extends Error {}

export class SwarmFiles {
  readonly dir: string;
  /** Where the node's private key lives unsealed while the node runs (the exec root: a tmpfs in production). */
  readonly runDir: string;
  /** The unlock key the node's key is (to be) sealed under; undefined: kept plain. */
  private unlock: Buffer | undefined;

  constructor(dataRoot: string, execRoot: string) {
    this.dir = join(dataRoot, 'swarm');
    this.runDir = join(execRoot, 'swarm');
  }

  /** The unlock key the node's key is sealed under now (undefined: plain). */
  get unlockKey(): Buffer | undefined {
    return this.unlock;
  }

  /** Gives the key to open a sealed node key with (POST /swarm/unlock); `readCerts` tells whether it opens it. */
  useUnlockKey(k: Buffer | undefined): void {
    this.unlock = k;
  }

  /** Whether the node key on disk is sealed. */
  async keySealed(): Promise<boolean> {
    return isSealed(await readFile(this.cert('swarm-node.key'), 'utf8').catch(() => ''));
  }

  /** Seals the node key and the swarm's data key on disk under `k` (undefined: keeps them plain), from what they hold now. */
  async sealWith(k: Buffer | undefined): Promise<void> {
    const certs = await this.readCerts();
    const dataKey = await this.readDataKey();
    this.unlock = k;
    await this.writeKey(certs.keyPem);
    if (dataKey) await this.writeSealable(this.dataKeyFile, dataKey);
  }

  /**
   * The swarm's data key (a manager's: it will seal the swarm's secrets, (9 of 21)), sealed like the
   * node key; undefined removes it (a worker holds none). It is never in etcd: a manager that joins
   * or is promoted is given it over the listener's mTLS.
   */
  async writeDataKey(key: string | undefined): Promise<void> {
    if (key === undefined) await rm(this.dataKeyFile, { force: true });
    else await this.writeSealable(this.dataKeyFile, key);
  }

  /** The swarm's data key (undefined: the node holds none; SwarmLockedError while sealed and locked). */
  async readDataKey(): Promise<string | undefined> {
    const stored = await readFile(this.dataKeyFile, 'utf8').catch(() => undefined);
    if (stored === undefined || !isSealed(stored)) return stored;
    const key = this.unlock ? unseal(stored, this.unlock) : undefined;
    if (!key) throw new SwarmLockedError('the swarm\'s data key is sealed by the swarm\'s unlock key');
    return key;
  }

  private get dataKeyFile(): string {
    return join(this.dir, 'certificates', 'swarm-data.key');
  }

  /** The node's private key, unsealed, where the node's etcd clients read it while it runs. */
  get liveKeyFile(): string {
    return join(this.runDir, 'swarm-node.key');
  }

  async writeLiveKey(): Promise<void> {
    const { keyPem } = await this.readCerts();
    await mkdir(this.runDir, { recursive: true, mode: 0o700 });
    await writeFile(this.liveKeyFile, keyPem, { mode: 0o600 });
  }

  async removeLiveKey(): Promise<void> {
    await rm(this.runDir, { recursive: true, force: true });
  }

  private async writeKey(keyPem: string): Promise<void> {
    await this.writeSealable(this.cert('swarm-node.key'), keyPem);
  }

  /** `text` written to `file`, sealed under the unlock key when there is one. */
  private async writeSealable(file: string, text: string): Promise<void> {
    await mkdir(join(this.dir, 'certificates'), { recursive: true, mode: 0o700 });
    const tmp = `${file}.tmp`;
    await writeFile(tmp, this.unlock ? seal(text, this.unlock) : text, { mode: 0o600 });
    await rename(tmp, file);
  }

  private get stateFile(): string {
    return join(this.dir, 'state.json');
  }

  cert(name: 'swarm-node.crt' | 'swarm-node.key' | 'swarm-root-ca.crt'): string {
    return join(this.dir, 'certificates', name);
  }

  /** The saved state, undefined when there is none (a state file that does not parse counts as none, with the reason). */
  async read(): Promise<{ state?: SwarmState; error?: string }> {
    let text: string;
    try {
      text = await readFile(this.stateFile, 'utf8');
    } catch {
      return {};
    }
    const r = SwarmState.safeParse((() => {
      try {
        return JSON.parse(text);
      } catch {
        return undefined;
      }
    })());
    return r.success ? { state: r.data } : { error: `the swarm state in ${this.stateFile} cannot be read` };
  }

  async write(state: SwarmState): Promise<void> {
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    const tmp = `${this.stateFile}.tmp`;
    await writeFile(tmp, `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600 });
    await rename(tmp, this.stateFile);
  }

  async writeCerts(rootCaPem: string, node: KeyPair): Promise<void> {
    await mkdir(join(this.dir, 'certificates'), { recursive: true, mode: 0o700 });
    await writeFile(this.cert('swarm-root-ca.crt'), rootCaPem);
    await writeFile(this.cert('swarm-node.crt'), node.certPem);
    await this.writeKey(node.keyPem);
  }

  /** The node's certificates and key (unsealed: SwarmLockedError when it is sealed and no unlock key that opens it was given). */
  async readCerts(): Promise<{ caPem: string; certPem: string; keyPem: string }> {
    const [caPem, certPem, stored] = await Promise.all([readFile(this.cert('swarm-root-ca.crt'), 'utf8'), readFile(this.cert('swarm-node.crt'), 'utf8'), readFile(this.cert('swarm-node.key'), 'utf8')]);
    if (!isSealed(stored)) return { caPem, certPem, keyPem: stored };
    const keyPem = this.unlock ? unseal(stored, this.unlock) : undefined;
    if (!keyPem) throw new SwarmLockedError('the node key is sealed by the swarm\'s unlock key');
    return { caPem, certPem, keyPem };
  }

  /** Everything of the swarm this node kept (leaving it, or a failed init's leftovers). */
  async removeAll(): Promise<void> {
    this.unlock = undefined;
    await rm(this.dir, { recursive: true, force: true });
    await this.removeLiveKey();
  }
}

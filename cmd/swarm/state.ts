// What a node keeps of the swarm it is in, under <data-root>/swarm/ (the reference's layout):
// state.json (its id, the cluster's, its role and addresses, where the swarm's etcd is: the managed
// member's ports, or --cluster-store's), the
// certificates (certificates/swarm-node.crt, swarm-node.key, swarm-root-ca.crt) and the member's
// data (etcd/, drivers/swarm/etcd-member.ts). No state file: the node is in no swarm.
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import * as z from 'zod';
import type { KeyPair } from '../../drivers/swarm/ca.ts';

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

export class SwarmFiles {
  readonly dir: string;
  constructor(dataRoot: string) {
    this.dir = join(dataRoot, 'swarm');
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
    await writeFile(this.cert('swarm-node.key'), node.keyPem, { mode: 0o600 });
  }

  async readCerts(): Promise<{ caPem: string; certPem: string; keyPem: string }> {
    const [caPem, certPem, keyPem] = await Promise.all([readFile(this.cert('swarm-root-ca.crt'), 'utf8'), readFile(this.cert('swarm-node.crt'), 'utf8'), readFile(this.cert('swarm-node.key'), 'utf8')]);
    return { caPem, certPem, keyPem };
  }

  /** Everything of the swarm this node kept (leaving it, or a failed init's leftovers). */
  async removeAll(): Promise<void> {
    await rm(this.dir, { recursive: true, force: true });
  }
}

// A swarm of test daemons through the Engine API, as the docker CLI makes one: `swarm init` on the
// first, `swarm join` with the manager token on the others (on --cluster-store's etcd the join goes
// through the store). Each manager listens on a free port of its address (daemons on one host
// would all want 2377). Each call fails the test with the daemon's answer when it is not a 200.
import { apiRequest, docker } from './clients.ts';
import type { DaemonHandle } from './daemon.ts';
import { freePort } from './free-port.ts';

export interface SwarmTokens {
  nodeId: string;
  manager: string;
  worker: string;
}

const addrBody = async (addr: string | undefined) => ({ ListenAddr: `${addr || '127.0.0.1'}:${await freePort()}`, ...(addr ? { AdvertiseAddr: addr } : {}) });

/** `swarm init` on `d`, advertising `addr` (default 127.0.0.1; '' for the daemon's default advertise address). */
export async function swarmInit(d: DaemonHandle, addr: string | undefined = '127.0.0.1'): Promise<SwarmTokens> {
  const r = await apiRequest(d, 'POST', '/swarm/init', JSON.stringify(await addrBody(addr || undefined)));
  if (r.status !== 200) throw new Error(`swarm init: ${r.status} ${r.text}\ndaemon log tail:\n${d.logs().split('\n').slice(-20).join('\n')}`);
  const sw = await apiRequest(d, 'GET', '/swarm');
  if (sw.status !== 200) throw new Error(`GET /swarm: ${sw.status} ${sw.text}`);
  return { nodeId: r.body as string, manager: sw.body.JoinTokens.Manager, worker: sw.body.JoinTokens.Worker };
}

/** `swarm join` of `d` with `token`, advertising `addr` (default 127.0.0.1; '' for the default advertise address). */
export async function swarmJoin(d: DaemonHandle, token: string, addr: string | undefined = '127.0.0.1'): Promise<void> {
  const r = await apiRequest(d, 'POST', '/swarm/join', JSON.stringify({ ...(await addrBody(addr || undefined)), RemoteAddrs: ['127.0.0.1:2377'], JoinToken: token }));
  if (r.status !== 200) throw new Error(`swarm join: ${r.status} ${r.text}\ndaemon log tail:\n${d.logs().split('\n').slice(-20).join('\n')}`);
}

/** The daemons as one swarm, every one a manager: init on the first, the rest join (addrs[i] each advertises). */
export async function formSwarm(ds: readonly DaemonHandle[], addrs?: readonly string[]): Promise<SwarmTokens> {
  const tokens = await swarmInit(ds[0]!, addrs?.[0]);
  for (let i = 1; i < ds.length; i++) await swarmJoin(ds[i]!, tokens.manager, addrs?.[i]);
  return tokens;
}

/** A swarm task as GET /tasks answers it (the parts tests read). */
export interface SwarmTask {
  ID: string;
  Slot?: number;
  NodeID?: string;
  ServiceID: string;
  DesiredState: string;
  Spec: { ContainerSpec?: { Image?: string } };
  Status: { Timestamp: string; State: string; Message: string; Err?: string; ContainerStatus?: { ContainerID: string; PID: number; ExitCode: number } };
}

/** GET /tasks with these filters (the test fails on anything but a 200). */
export async function swarmTasks(d: DaemonHandle, filters: Record<string, string[]>): Promise<SwarmTask[]> {
  const r = await apiRequest(d, 'GET', `/tasks?filters=${encodeURIComponent(JSON.stringify(filters))}`);
  if (r.status !== 200) throw new Error(`GET /tasks: ${r.status} ${r.text}`);
  return r.body as SwarmTask[];
}

/**
 * `docker ARGS` on node i of a multi-node swarm, its stdout; a failure fails the test with the
 * command, its stderr and the node's last log lines.
 */
export function nodeDocker(ds: readonly DaemonHandle[]): (i: number, ...args: string[]) => Promise<string> {
  return async (i, ...args) => {
    const r = await docker(ds[i]!, args);
    if (r.code !== 0) throw new Error(`docker ${args.join(' ')} on ${i}: ${r.stderr}\n${ds[i]!.logs().split('\n').slice(-20).join('\n')}`);
    return r.stdout;
  };
}

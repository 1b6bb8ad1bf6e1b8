// A joining node's side of `swarm join` through a manager's address (its listener,
// drivers/swarm/listener.ts): it reads the manager's root CA and checks it against the digest in
// its token (a manager of another swarm, or a man in the middle, is refused before the token is
// sent), then sends the token and its public key over TLS checked against that root, and gets its
// node id, certificate and the swarm's etcd members back (./admission.ts). RemoteAddrs are tried
// in order; one that does not answer in time is the next one's turn. Also: asking a manager to
// forget this node (a join given up halfway).
import { request } from 'node:https';
import { EngineError, invalidArgument, unavailable, type ErrorCode } from '../../lib/errors.ts';
import { caDigest, digestHex, type ParsedJoinToken } from '../../lib/swarm/join-token.ts';
import type { JoinAnswer, JoinBody, PromoteBody } from './admission.ts';
import { newNodeKey } from '../../drivers/swarm/ca.ts';
import { SWARM_ETCD_CLIENT_PORT, SWARM_ETCD_PEER_PORT } from '../../drivers/swarm/etcd-member.ts';
import type { SwarmJoinRequest } from '../../api/swarm/port.ts';
import type { NodeAvailability } from '../../lib/swarm/node-spec.ts';
import { certHosts, type NodeAddresses } from './requests.ts';
import type { SwarmState } from './state.ts';
import { bracketHost, joinHostPort } from '../../lib/host-port.ts';

const CALL_TIMEOUT_MS = 20_000;
const DEFAULT_PORT = '2377';

interface Reply {
  status: number;
  body: Record<string, unknown>;
}

/** "host", "host:port", "[v6]:port" → host and port (2377 when none is given), as the reference reads RemoteAddrs. */
export function remoteEndpoint(addr: string): { host: string; port: number } {
  const a = addr.trim();
  const v6 = /^\[([^\]]+)\](?::(\d+))?$/.exec(a);
  if (v6) return { host: v6[1]!, port: Number(v6[2] ?? DEFAULT_PORT) };
  const m = /^([^:]+)(?::(\d+))?$/.exec(a);
  if (!m) throw invalidArgument(`invalid remote address ${JSON.stringify(addr)}`);
  return { host: m[1]!, port: Number(m[2] ?? DEFAULT_PORT) };
}

function call(addr: string, method: 'GET' | 'POST', path: string, tls: { ca?: string; cert?: string; key?: string }, body?: unknown): Promise<Reply> {
  const { host, port } = remoteEndpoint(addr);
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host,
        port,
        method,
        path,
        timeout: CALL_TIMEOUT_MS,
        // Without a root yet, nothing to check the manager against: the digest in the token checks the root it sends.
        ...(tls.ca ? { ca: tls.ca, checkServerIdentity: () => undefined } : { rejectUnauthorized: false }),
        ...(tls.cert ? { cert: tls.cert, key: tls.key } : {}),
        headers: payload ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) } : {},
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => {
          try {
            resolve({ status: res.statusCode ?? 0, body: JSON.parse(text || '{}') as Record<string, unknown> });
          } catch {
            reject(new Error(`${addr} answered ${res.statusCode} with no JSON`));
          }
        });
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`${addr} did not answer in time`)));
    req.on('error', reject);
    req.end(payload);
  });
}

/** A manager that cannot be reached, in the reference's (gRPC's) words. */
function unreachable(remote: string, err: unknown): Error {
  const code = (err as NodeJS.ErrnoException).code;
  const { host, port } = remoteEndpoint(remote);
  const addr = joinHostPort(host, port);
  const why = code === 'ECONNREFUSED' ? 'connect: connection refused' : code === 'EHOSTUNREACH' ? 'connect: no route to host' : code === 'ENETUNREACH' ? 'connect: network is unreachable' : undefined;
  if (why) return unavailable(`rpc error: code = Unavailable desc = connection error: desc = "transport: Error while dialing dial tcp ${addr}: ${why}"`, err);
  return unavailable('rpc error: code = DeadlineExceeded desc = context deadline exceeded', err);
}

const refusal = (r: Reply) => new EngineError((r.body.code as ErrorCode) ?? 'Internal', String(r.body.message ?? `the manager answered ${r.status}`));

/**
 * Asks the managers at `remotes` (in order) to let this node in. A refusal of the token is final;
 * a manager that cannot be reached passes the turn to the next.
 */
export async function requestJoin(remotes: readonly string[], token: ParsedJoinToken, body: JoinBody): Promise<{ answer: JoinAnswer; remote: string }> {
  let lastError: Error = unavailable('no manager address to join through');
  for (const remote of remotes) {
    let rootCa: string;
    try {
      const r = await call(remote, 'GET', '/v1/ca', {});
      rootCa = String(r.body.RootCA ?? '');
    } catch (err) {
      lastError = unreachable(remote, err);
      continue;
    }
    if (caDigest(rootCa) !== token.digest) throw invalidArgument(`remote CA does not match fingerprint. Expected: ${digestHex(token.digest)}`);
    let r: Reply;
    try {
      r = await call(remote, 'POST', '/v1/join', { ca: rootCa }, body);
    } catch (err) {
      lastError = unreachable(remote, err);
      continue;
    }
    if (r.status !== 200) throw refusal(r);
    return { answer: r.body as unknown as JoinAnswer, remote };
  }
  throw lastError;
}

/** Asks the manager that admitted this node to forget it (a join given up after the admission). */
export async function requestForget(remote: string, tls: { ca: string; cert: string; key: string }): Promise<void> {
  const r = await call(remote, 'POST', '/v1/forget', tls, {});
  if (r.status !== 200) throw refusal(r);
}

/** Asks the managers at `remotes` (in order) for this node's place as a manager (its spec says so). */
export async function requestPromotion(remotes: readonly string[], tls: { ca: string; cert: string; key: string }, body: PromoteBody): Promise<JoinAnswer> {
  let lastError: Error = unavailable('no manager to ask for the promotion');
  for (const remote of remotes) {
    let r: Reply;
    try {
      r = await call(remote, 'POST', '/v1/promote', tls, body);
    } catch (err) {
      lastError = unreachable(remote, err);
      continue;
    }
    if (r.status !== 200) throw refusal(r);
    return r.body as unknown as JoinAnswer;
  }
  throw lastError;
}

/**
 * A node's join through a manager (RemoteAddrs): its new key, the manager's answer, and the state it
 * enters the swarm in (a manager's member joining as the learner the answer names).
 */
export async function admitted(req: SwarmJoinRequest, token: ParsedJoinToken, addrs: NodeAddresses) {
  const remotes = req.RemoteAddrs ?? [];
  if (!remotes.length) throw invalidArgument('at least 1 RemoteAddr is required to join');
  const key = newNodeKey();
  const host = bracketHost(addrs.advertiseHost);
  const { answer, remote } = await requestJoin(remotes, token, {
    JoinToken: req.JoinToken!,
    PublicKey: key.publicKeyPem,
    AdvertiseHost: addrs.advertiseHost,
    Hosts: certHosts(addrs),
    Availability: (req.Availability || 'active') as NodeAvailability,
    PeerURL: `https://${host}:${SWARM_ETCD_PEER_PORT}`,
  });
  const manager = answer.Role === 'manager';
  const state: SwarmState = {
    nodeId: answer.NodeID,
    clusterId: answer.ClusterID,
    role: answer.Role,
    ...addrs,
    store: 'managed',
    managers: answer.Managers,
    joinedThrough: remote,
    heartbeatNs: answer.HeartbeatPeriod,
    ...(manager ? { member: { clientPort: SWARM_ETCD_CLIENT_PORT, peerPort: SWARM_ETCD_PEER_PORT } } : {}),
  };
  const join = manager && answer.InitialCluster && answer.MemberID ? { initialCluster: answer.InitialCluster, memberId: answer.MemberID } : undefined;
  return { state, answer, keyPem: key.keyPem, join };
}

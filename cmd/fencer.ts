// The cluster fencer: a small process beside the daemon (started by it with the cluster, in its
// own session, so it outlives the daemon as the supervisor does) that keeps the self-fence's
// promise when the daemon itself dies — kill -9, a crash, the OOM killer. A dead daemon renews no
// lease: its lease expires at etcd and the leader re-places its replicas elsewhere, while the
// containers, which outlive the daemon by design, would go on running here. So the daemon tells
// the fencer, whenever it changes, the deadline its lease could expire by (less the margin) and the
// init processes of its cluster-placed containers (lib/cluster/fencer-protocol.ts). Unless a newer
// order moves the deadline first (a renewal does, every TTL/3), the fencer SIGKILLs those
// processes at that deadline (a container's other processes die with its init, the PID
// namespace's) — whether the daemon's connection closed (it died) or not (it is frozen: SIGSTOP, a
// stalled host; or it is alive and fenced, and kills them itself by the same deadline). A daemon
// that comes back connects anew and guards its own; what the old connection guarded is killed at
// the old deadline all the same: the old lease cannot be renewed, so its replicas may already run
// elsewhere by then. With no daemon connected and nothing left to kill, the fencer exits.
//
// Usage: fencer <socket path>. It logs a line per kill to stderr (the daemon points it at a file).
import { createServer, type Socket } from 'node:net';
import { rmSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { type FenceOrder, monotonicNs, procStartTime } from '../lib/cluster/fencer-protocol.ts';

const socketPath = process.argv[2];
if (!socketPath) {
  process.stderr.write('usage: fencer <socket path>\n');
  process.exit(2);
}

let connections = 0;
let armed = 0;
const say = (msg: string) => process.stderr.write(`${new Date().toISOString()} fencer[${process.pid}]: ${msg}\n`);

function killAll(order: FenceOrder): void {
  for (const [pid, start] of order.pids) {
    if (!start || procStartTime(pid) !== start) continue; // gone, or the PID is another process's now
    try {
      process.kill(pid, 'SIGKILL');
      say(`killed ${pid}: the deadline passed without a renewal; the lease could expire now`);
    } catch {
      // gone meanwhile
    }
  }
}

function maybeExit(): void {
  if (connections > 0 || armed > 0) return;
  server.close();
  rmSync(socketPath!, { force: true });
  process.exit(0);
}

function guard(conn: Socket): void {
  connections++;
  let timer: NodeJS.Timeout | null = null;
  // Each order replaces the last: its processes die at its deadline unless a newer one comes first.
  const arm = (order: FenceOrder) => {
    if (timer) {
      clearTimeout(timer);
      armed--;
    }
    timer = null;
    if (order.pids.length === 0) return;
    const waitMs = Number((BigInt(order.deadline) - monotonicNs()) / 1_000_000n);
    armed++;
    timer = setTimeout(() => {
      timer = null;
      armed--;
      killAll(order);
      maybeExit();
    }, Math.max(0, waitMs));
  };
  const lines = createInterface({ input: conn });
  lines.on('line', (line) => {
    try {
      const o = JSON.parse(line) as FenceOrder;
      if (typeof o.deadline === 'string' && /^\d+$/.test(o.deadline) && Array.isArray(o.pids)) arm(o);
    } catch {
      // not an order: ignored
    }
  });
  conn.on('error', () => {});
  conn.on('close', () => {
    connections--;
    if (timer) say('the daemon\'s connection closed: its cluster containers are killed at the deadline it last sent');
    maybeExit();
  });
}

const server = createServer(guard);
server.on('error', (err) => {
  say(`cannot listen on ${socketPath}: ${err.message}`);
  process.exit(1);
});
rmSync(socketPath, { force: true });
server.listen(socketPath, () => say(`listening on ${socketPath}`));
// Started and never connected to (the daemon died first): nothing to guard.
setTimeout(maybeExit, 30_000).unref();

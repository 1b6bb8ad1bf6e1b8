// systemd's readiness protocol (Type=notify): with NOTIFY_SOCKET set (systemd starts the daemon so),
// state changes go to the service manager as datagrams: READY=1 once the API serves, RELOADING=1
// and READY=1 around a SIGHUP reload, STOPPING=1 at shutdown, STATUS= lines between. Node has no
// unix datagram sockets, so systemd's own systemd-notify sends them (the unit says
// NotifyAccess=all: the datagram comes from its process, not the daemon's). Without NOTIFY_SOCKET,
// nothing is sent.
import { execa } from 'execa';
import type { Logger } from 'pino';
import { EXECA_DEFAULTS } from './exec.ts';

export interface Notifier {
  /** Sends `KEY=value` assignments in one datagram; never throws (a lost notice is logged). */
  notify(assignments: Record<string, string>): Promise<void>;
}

export function systemdNotifier(log: Logger, env: NodeJS.ProcessEnv = process.env, binary = 'systemd-notify'): Notifier | undefined {
  const socket = env.NOTIFY_SOCKET;
  if (!socket) return undefined;
  let queue = Promise.resolve();
  return {
    notify(assignments) {
      // In order: READY=1 never overtakes the RELOADING=1 before it.
      const args = Object.entries(assignments).map(([k, v]) => `${k}=${v}`);
      queue = queue.then(async () => {
        try {
          await execa(binary, args, { ...EXECA_DEFAULTS, env: { NOTIFY_SOCKET: socket }, extendEnv: true, timeout: 5_000 });
        } catch (err) {
          log.warn({ err, assignments }, 'could not notify the service manager');
        }
      });
      return queue;
    },
  };
}

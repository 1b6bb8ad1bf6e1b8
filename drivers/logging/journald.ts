// The journald driver: options validated as the reference's; the start is refused where there is
// no journal socket (the reference: "journald is not enabled on this host"). Sending to a journal
// needs a unix datagram socket, which Node does not have, so a start is refused there too.
import { statSync } from 'node:fs';
import type { ContainerLogInfo } from './info.ts';
import { parseLogTag, extraAttributes } from './info.ts';
import type { RemoteDriver } from './remote.ts';

export const JOURNAL_SOCKET = '/run/systemd/journal/socket';
const ATTRS = new Set(['env', 'env-regex', 'labels', 'labels-regex', 'tag']);

export function validateJournald(cfg: Record<string, string>): void {
  for (const k of Object.keys(cfg)) if (!ATTRS.has(k)) throw new Error(`unknown log opt '${k}' for journald log driver`);
}

export async function newJournald(info: ContainerLogInfo, config: Record<string, string>, socket = JOURNAL_SOCKET): Promise<RemoteDriver> {
  try {
    if (!statSync(socket).isSocket()) throw new Error('not a socket');
  } catch {
    throw new Error('journald is not enabled on this host');
  }
  parseLogTag(info, config);
  extraAttributes(info, config);
  throw new Error('journald: sending to the journal (a unix datagram socket) is not supported by this daemon');
}

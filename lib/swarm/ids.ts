// Swarm object ids (nodes, the cluster, services, tasks): 25 characters of [a-z0-9], as swarmkit's
// identity.NewID.
import { randomBytes } from 'node:crypto';

export function newSwarmId(): string {
  const alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789';
  return [...randomBytes(25)].map((b) => alphabet[b % alphabet.length]).join('');
}

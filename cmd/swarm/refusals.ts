// The swarm's refusals in the reference's words (dockerd 20.10, docs/reference-swarm.md), where more
// than one part of cmd/swarm gives them.
export const ALREADY_IN_SWARM = 'This node is already part of a swarm. Use "docker swarm leave" to leave this swarm and join another one.';
export const NOT_IN_SWARM = 'This node is not part of a swarm';
export const LAST_MANAGER =
  'You are attempting to leave the swarm on a node that is participating as a manager. Removing the last manager erases all current state of the swarm. Use `--force` to ignore this message. ';
/** The reference's refusal of a manager's leave without force (moby's cluster Leave), by the managers it counts. */
export function managerLeaving(reachable: number, unreachable: number): string {
  let msg = 'You are attempting to leave the swarm on a node that is participating as a manager. ';
  if (reachable - 2 <= unreachable) {
    if (reachable + unreachable <= 1) return LAST_MANAGER;
    msg += `Removing this node leaves ${reachable - 1} managers out of ${reachable + unreachable}. Without a Raft quorum your swarm will be inaccessible. `;
  }
  return `${msg}The only way to restore a swarm that has lost consensus is to reinitialize it with \`--force-new-cluster\`. Use \`--force\` to suppress this message.`;
}
export const NO_SWARM_IN_STORE = 'the cluster store holds no swarm: run "docker swarm init" on a node first';
export const NO_LEADER = "rpc error: code = Unknown desc = The swarm does not have a leader. It's possible that too few managers are online. Make sure more than half of the managers are online.";
export const NOT_A_MANAGER = 'This node is not a swarm manager. Use "docker swarm init" or "docker swarm join" to connect this node to swarm and try again.';
export const A_WORKER = "This node is not a swarm manager. Worker nodes can't be used to view or modify cluster state. Please run this command on a manager node or promote the current node to a manager.";
export const SWARM_LOCKED = 'Swarm is encrypted and needs to be unlocked before it can be used. Please use "docker swarm unlock" to unlock it.';

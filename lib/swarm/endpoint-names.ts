// What an overlay network's endpoints (lib/swarm/endpoints.ts) answer, as the reference's embedded
// DNS and load balancing do: a service's name (or a task's network alias) resolves to its virtual
// IP, or in dnsrr mode to its tasks' addresses; `tasks.NAME` to its tasks' addresses; only tasks
// that are up count. A virtual IP sends to the service's tasks that are up.
import type { VipRule } from '../ports/network.ts';
import type { SwarmEndpoint } from './endpoints.ts';

/** The addresses `asked` resolves to on a network with these endpoints; null: not a swarm name. */
export function lookupName(eps: readonly SwarmEndpoint[], asked: string): string[] | null {
  const name = asked.toLowerCase().replace(/\.$/, '');
  const tasksOf = (svc: string) => eps.filter((e) => !e.Vip && e.Up && e.ServiceName?.toLowerCase() === svc).map((e) => e.IP);
  if (name.startsWith('tasks.')) {
    const svc = name.slice('tasks.'.length);
    return eps.some((e) => e.ServiceName?.toLowerCase() === svc) ? tasksOf(svc) : null;
  }
  const named = eps.filter((e) => e.ServiceName?.toLowerCase() === name || (e.Aliases ?? []).some((a) => a.toLowerCase() === name));
  if (!named.length) return null;
  const vip = eps.find((e) => e.Vip && named.some((x) => x.ServiceID === e.ServiceID));
  if (vip) return [vip.IP];
  const out = named.filter((e) => !e.Vip && e.Up).map((e) => e.IP);
  for (const s of new Set(named.filter((e) => e.ServiceName?.toLowerCase() === name).map((e) => e.ServiceName!.toLowerCase()))) {
    for (const ip of tasksOf(s)) if (!out.includes(ip)) out.push(ip);
  }
  return out;
}

/** Each virtual IP on the network with the addresses of its service's tasks that are up. */
export function vipRules(eps: readonly SwarmEndpoint[]): VipRule[] {
  return eps
    .filter((e) => e.Vip)
    .map((v) => ({ vip: v.IP, backends: eps.filter((e) => !e.Vip && e.Up && e.ServiceID === v.ServiceID).map((e) => e.IP).sort() }))
    .sort((a, b) => (a.vip < b.vip ? -1 : a.vip > b.vip ? 1 : 0));
}

// A service's deploy.placement constraints and deploy.resources.reservations against a node:
// what this node does not meet, in words, or undefined. Constraints as swarm writes them:
// `node.hostname`, `node.id`, `node.role`, `node.platform.os`, `node.platform.arch`,
// `node.labels.KEY` and `engine.labels.KEY`, compared with `==` or `!=`.
import type { ComposeService } from './schema.ts';
import { sizeBytes } from './normalize.ts';

export interface NodeFacts {
  id: string;
  hostname: string;
  /** manager or worker (a single daemon is its own manager). */
  role: string;
  os: string;
  arch: string;
  /** The daemon's labels (`--label`), as KEY → VALUE. */
  labels: Record<string, string>;
  /** A swarm node's own labels (`docker node update --label-add`); absent: node.labels are the daemon's. */
  nodeLabels?: Record<string, string>;
  cpus: number;
  memoryBytes: number;
}

/** The value a constraint's left side names on `node`; undefined for a key it does not know. */
function field(key: string, node: NodeFacts): string | undefined {
  switch (key) {
    case 'node.id':
      return node.id;
    case 'node.hostname':
      return node.hostname;
    case 'node.role':
      return node.role;
    case 'node.platform.os':
      return node.os;
    case 'node.platform.arch':
      return node.arch;
  }
  if (key.startsWith('node.labels.')) return (node.nodeLabels ?? node.labels)[key.slice('node.labels.'.length)] ?? '';
  if (key.startsWith('engine.labels.')) return node.labels[key.slice('engine.labels.'.length)] ?? '';
  return undefined;
}

/** The first of `constraints` that `node` does not meet, in words; undefined when it meets them all. */
export function unmetConstraint(constraints: readonly string[], node: NodeFacts): string | undefined {
  for (const c of constraints) {
    const m = /^\s*([^=!\s]+)\s*(==|!=)\s*(.*?)\s*$/.exec(c);
    if (!m) return `invalid constraint ${JSON.stringify(c)}: expected KEY==VALUE or KEY!=VALUE`;
    const have = field(m[1]!, node);
    if (have === undefined) return `constraint ${JSON.stringify(c)}: unknown key ${m[1]}`;
    const equal = have === m[3];
    if ((m[2] === '==') !== equal) return `constraint ${JSON.stringify(c)} is not met by this node (${m[1]} is ${JSON.stringify(have)})`;
  }
  return undefined;
}

/** Why `svc` cannot be placed on `node`, or undefined when it can. */
export function unmetPlacement(svc: ComposeService, node: NodeFacts): string | undefined {
  const unmet = unmetConstraint(svc.deploy?.placement?.constraints ?? [], node);
  if (unmet) return unmet;
  const r = svc.deploy?.resources?.reservations;
  if (r?.cpus !== undefined && Number(r.cpus) > node.cpus) return `reservation of ${Number(r.cpus)} CPUs exceeds this node's ${node.cpus}`;
  const mem = sizeBytes(r?.memory);
  if (mem !== undefined && mem > node.memoryBytes) return `reservation of ${mem} bytes of memory exceeds this node's ${node.memoryBytes}`;
  return undefined;
}

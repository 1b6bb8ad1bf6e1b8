// Where a swarm's objects live in its etcd (managers only; a worker's etcd user reads none of them).
export const SWARM_PREFIX = '/engine/swarm/';
/** `/engine/swarm/services/<id>`: a service's record (cmd/swarm/services.ts). */
export const SERVICES_PREFIX = `${SWARM_PREFIX}services/`;
/** `/engine/swarm/service-names/<name>`: the id a service name belongs to. */
export const SERVICE_NAMES_PREFIX = `${SWARM_PREFIX}service-names/`;
/** `/engine/swarm/cluster`: the cluster object (its spec: the task history retention). */
export const CLUSTER_KEY = `${SWARM_PREFIX}cluster`;

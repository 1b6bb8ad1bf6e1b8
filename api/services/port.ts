// What the service routes ask of the swarm (cmd/swarm/services.ts answers, on a manager).
import type { ServiceSpec } from '../../lib/swarm/service-spec.ts';
import type { TaskRecord } from '../../lib/swarm/task.ts';
import type { UpdateStatus } from '../../lib/swarm/update.ts';
import type { JobStatus } from '../../lib/swarm/task.ts';
import type { LogEntry, LogReadOptions } from '../../lib/ports/logs.ts';

/** A service as stored: its spec, the one before the last update, and when. */
export interface ServiceRecord {
  ID: string;
  /** etcd's mod revision of the record (Version.Index). */
  version: number;
  CreatedAt: string;
  UpdatedAt: string;
  Spec: ServiceSpec;
  PreviousSpec?: ServiceSpec;
  /** Where the last update is (the orchestrator's; none until one replaced tasks). */
  UpdateStatus?: UpdateStatus;
  /** A job's: the iteration its tasks belong to (bumped by each update) and when it began. */
  JobStatus?: JobStatus;
  /** Its virtual IP on each overlay network it joins (endpoint mode vip), the ingress network's with ingress ports. */
  VirtualIPs?: VirtualIP[];
  /** Its ports as Endpoint.Ports shows them (an ingress port's published port given when the spec has none). */
  EndpointPorts?: EndpointPort[];
}

export interface EndpointPort {
  Protocol: string;
  TargetPort?: number;
  PublishedPort?: number;
  PublishMode: string;
}

/** A service's address on a network, "10.0.1.2/24" (Endpoint.VirtualIPs). */
export interface VirtualIP {
  NetworkID: string;
  Addr: string;
}

export interface ServicesPort {
  /** Every task of the swarm, with its version (the key's mod revision). */
  tasks(): Promise<Array<{ task: TaskRecord; version: number }>>;
  list(): Promise<ServiceRecord[]>;
  /** By full ID, exact name, or unique ID prefix (the reference's 404 otherwise). */
  find(ref: string): Promise<ServiceRecord>;
  /** Creates the service from a raw spec (checked here), its tasks pulling with `auth` (X-Registry-Auth); its ID. */
  create(raw: unknown, auth?: string): Promise<string>;
  /**
   * Updates to a raw spec at `version`; the tasks pull with `auth` when given, else with the
   * credentials of the current spec (`from` "spec", the default) or of the previous one ("previous-spec").
   * `rollback`: back to the previous spec (the raw spec is checked, not used), as `docker service rollback`.
   */
  update(ref: string, version: bigint, raw: unknown, o?: { auth?: string; from?: 'spec' | 'previous-spec'; rollback?: boolean }): Promise<void>;
  remove(ref: string): Promise<void>;
  /** A task's log, read where the task runs (this node, or the node it is on over the swarm's mTLS). */
  logs(t: TaskRecord, o: LogReadOptions, signal: AbortSignal): AsyncIterable<LogEntry>;
}

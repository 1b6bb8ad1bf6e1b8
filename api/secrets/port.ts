// What the secret and config routes ask of the swarm (cmd/swarm/secrets.ts answers, on a manager).
import type { StoredObject } from '../../lib/swarm/swarm-object.ts';

export interface VersionedObject {
  object: StoredObject;
  /** etcd's mod revision of the record (Version.Index). */
  version: number;
}

export interface SwarmObjectsPort {
  list(): Promise<VersionedObject[]>;
  /** By full id, exact name, or unique id prefix (the reference's 404 otherwise). */
  find(ref: string): Promise<VersionedObject>;
  /** Creates one from a raw spec (checked here); its id. */
  create(raw: unknown): Promise<string>;
  /** Its labels from a raw spec at `version` (nothing else may change). */
  update(ref: string, version: bigint, raw: unknown): Promise<void>;
  remove(ref: string): Promise<void>;
}

// Every kind the daemon stores: the table cmd hands to the store (writes are checked against each
// kind's schema, loaded records migrated to its version).
import type { ScopeRules } from '../scope.ts';
import { kindTable, type KindTable } from '../kind.ts';
import { Containers } from './container.ts';
import { DaemonConfigs } from './daemon-config.ts';
import { Endpoints } from './endpoint.ts';
import { Execs } from './exec.ts';
import { Images } from './image.ts';
import { IpamAllocations } from './ipam-allocation.ts';
import { Migrations } from './migration.ts';
import { Networks } from './network.ts';
import { PortAllocations } from './port-allocation.ts';
import { Pulls } from './pull.ts';
import { References } from './reference.ts';
import { Runtimes } from './runtime.ts';
import { Stacks } from './stack.ts';
import { Volumes } from './volume.ts';

export const STORE_KINDS: KindTable = kindTable([
  Containers,
  Images,
  References,
  Networks,
  IpamAllocations,
  PortAllocations,
  Endpoints,
  Volumes,
  Migrations,
  Pulls,
  Runtimes,
  DaemonConfigs,
  Stacks,
  Execs,
]);

/**
 * The records that belong to one storage driver (store/scope.ts): images, tags, pulls and
 * containers, and the endpoints and execs of those containers. Another driver hides them.
 */
export const driverScope = (driver: string): ScopeRules => ({
  name: driver,
  kinds: [Images.name, References.name, Pulls.name, Containers.name],
  followers: [Endpoints.name, Execs.name],
  owner: Containers.name,
});

// Network admission: a create body checked (the reference's refusals, before anything is written)
// and the network's desired state written. POST /networks/create and a stack's networks go
// through it; waiting for the network reconciler to set the network up is the caller's.
import * as z from 'zod';
import { conflict, invalidArgument, permissionDenied } from '../../lib/errors.ts';
import { goStructBody } from '../../lib/go-json.ts';
import { newId, rfc3339Nano } from '../../lib/ids.ts';
import { isPredefinedName, liveNetworks, liveNetworksNamed, type NetworkResource, Networks, type NetworkStatus } from '../../store/kinds/network.ts';
import type { OwnerRef } from '../../store/owner.ts';
import type { AdmissionStore } from '../store.ts';
import { buildNetworkSpec, type NetworkDefaults } from './network-spec.ts';

export const USER_DEFINED_UNSUPPORTED = 'user-defined networks are not supported by this daemon yet';

/** POST /networks/create's body (Go's struct decoding: keys case-insensitive). */
export const NetworkCreateBody = goStructBody(z
  .object({
    Name: z.string().nullish(),
    Driver: z.string().nullish(),
    Scope: z.string().nullish(),
    Internal: z.boolean().nullish(),
    Attachable: z.boolean().nullish(),
    Ingress: z.boolean().nullish(),
    ConfigOnly: z.boolean().nullish(),
    ConfigFrom: z.object({ Network: z.string().nullish() }).passthrough().nullish(),
    IPAM: z
      .object({
        Driver: z.string().nullish(),
        Options: z.record(z.string(), z.string()).nullish(),
        Config: z
          .array(
            z
              .object({
                Subnet: z.string().nullish(),
                IPRange: z.string().nullish(),
                Gateway: z.string().nullish(),
                AuxiliaryAddresses: z.record(z.string(), z.string()).nullish(),
              })
              .passthrough(),
          )
          .nullish(),
      })
      .passthrough()
      .nullish(),
    EnableIPv4: z.boolean().nullish(),
    EnableIPv6: z.boolean().nullish(),
    CheckDuplicate: z.boolean().nullish(),
    Options: z.record(z.string(), z.string()).nullish(),
    Labels: z.record(z.string(), z.string()).nullish(),
  })
  .passthrough());

export type NetworkCreateInput = z.infer<typeof NetworkCreateBody>;

export interface NetworkAdmissionDeps {
  store: Pick<AdmissionStore, 'list' | 'byIndex' | 'create'>;
  /** What the daemon's options say about the networks it creates; without it a create is refused. */
  defaults?: NetworkDefaults;
}

/** A network create admitted: checked, then its record written (phase pending). Answers the record. */
export function admitNetwork(deps: NetworkAdmissionDeps, body: NetworkCreateInput, opts: { ownerRef?: OwnerRef } = {}): NetworkResource {
  const { store } = deps;
  const name = body.Name ?? '';
  // The reference daemon's text, trailing space included.
  if (isPredefinedName(name)) throw permissionDenied(`operation is not permitted on predefined ${name} network `);
  if (!name) throw invalidArgument('network name must not be empty');
  if (liveNetworksNamed(store, name).length) throw conflict(`network with name ${name} already exists`);
  if (!deps.defaults) throw invalidArgument(USER_DEFINED_UNSUPPORTED);
  const id = newId();
  const spec = buildNetworkSpec(id, rfc3339Nano(), { ...body, Name: name }, liveNetworks(store), deps.defaults);
  if (opts.ownerRef) spec.ownerRef = opts.ownerRef;
  const status: NetworkStatus = { observedGeneration: 0, phase: 'pending', error: '', lastRepair: '', lastRepairAt: '' };
  return store.create(Networks, id, spec, status);
}

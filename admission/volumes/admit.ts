// Volume admission: a create body checked (the reference's refusals, before anything is written)
// and the volume's desired state written; a create of a name that exists answers that volume, as
// the reference. POST /volumes/create and a stack's volumes go through it; waiting for the volume
// reconciler is the caller's.
import { conflict, invalidArgument, notFound } from '../../lib/errors.ts';
import { newId } from '../../lib/ids.ts';
import { validateLocalOptions, volumeNameError } from '../../lib/volume-options.ts';
import { type VolumeResource, Volumes, type VolumeStatus } from '../../store/kinds/volume.ts';
import type { OwnerRef } from '../../store/owner.ts';
import type { AdmissionStore } from '../store.ts';
import { volumeSpec } from './container-mounts.ts';
import type { VolumeCreateBody } from './create-schema.ts';

/** Answers the volume (the one that existed, or the record written, phase pending) and whether it was made now. */
export function admitVolume(
  store: Pick<AdmissionStore, 'get' | 'create'>, body: VolumeCreateBody, opts: { ownerRef?: OwnerRef } = {},
): { volume: VolumeResource; created: boolean } {
  const rawName = body.Name;
  const driver = body.Driver || 'local';
  const options = body.DriverOpts ?? {};
  const labels = body.Labels ?? {};
  const name = rawName || newId();
  const nameErr = volumeNameError(name);
  if (nameErr) throw invalidArgument(`create ${name}: ${nameErr}`);
  if (driver !== 'local') throw notFound(`create ${name}: error looking up volume plugin ${driver}: plugin "${driver}" not found`);
  try {
    validateLocalOptions(options);
  } catch (err) {
    throw invalidArgument(`create ${name}: ${(err as Error).message}`);
  }
  const existing = store.get(Volumes, name);
  if (existing?.spec.desired === 'removed') throw conflict(`create ${name}: volume is being removed`);
  if (existing) return { volume: existing, created: false };
  // A volume made without a name is anonymous, as the reference labels it (prune takes it by default).
  const spec = volumeSpec(name, { anonymous: !rawName, labels, options });
  if (opts.ownerRef) spec.ownerRef = opts.ownerRef;
  const status: VolumeStatus = { observedGeneration: 0, phase: 'pending', error: '', mountpoint: '' };
  return { volume: store.create(Volumes, name, spec, status), created: true };
}

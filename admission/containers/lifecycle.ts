// A container's lifecycle requests admitted: the reference's refusals for a start, a rename and a
// remove, and the spec level each writes. The lifecycle routes write that level and wait for the
// container reconciler; a reconciler acting for an owner (a stack) writes it and looks again later.
import { conflict, invalidArgument, notModified } from '../../lib/errors.ts';
import { type ContainerResource, type ContainerSpec, containerByName, isRunning } from '../../store/kinds/container.ts';
import { normalizeName } from './names.ts';

/** Start: refused for a paused container or one being removed; 304 for a running one. */
export function checkStartable(c: ContainerResource): void {
  const s = c.status;
  if (s.phase === 'paused') throw conflict('cannot start a paused container, try unpause instead');
  if (s.phase === 'running') throw notModified();
  if (c.spec.desired === 'removed' || s.phase === 'removing') throw conflict(`container is marked for removal and cannot be started`);
}

/** The level a start writes: a new run asked for. */
export const startLevel = (sp: ContainerSpec): ContainerSpec => ({ ...sp, desired: 'running', runGeneration: sp.runGeneration + 1, manuallyStopped: false });

/** Remove: refused while a removal is under way, and (without force) while it has a task. `ref` is the name the request used. */
export function checkRemovable(c: ContainerResource, ref: string, force: boolean): void {
  if (c.spec.desired === 'removed') throw conflict(`removal of container ${ref} is already in progress`);
  // The reference's words (20.10): a container with a task, or one its policy restarts, needs force.
  if (!force && isRunning(c.status)) {
    const state = c.status.phase;
    const procedure = state === 'paused' ? 'Unpause and then stop the container before attempting removal or force remove' : 'Stop the container before attempting removal or force remove';
    throw conflict(`You cannot remove a ${state} container ${c.name}. ${procedure}`);
  }
}

/** The level a remove writes. */
export const removeLevel = (o: { force: boolean; volumes: boolean }) => (sp: ContainerSpec): ContainerSpec => ({ ...sp, desired: 'removed', remove: o });

/** Rename: the new name normalised ("/web"), refused when empty, unchanged or taken. */
export function admitRename(store: Parameters<typeof containerByName>[0], c: ContainerResource, raw: string | undefined): string {
  if (!raw) throw invalidArgument('Neither old nor new names may be empty');
  const name = normalizeName(raw);
  if (name === c.spec.name) throw invalidArgument(`Renaming a container with the same name as its current name`);
  const other = containerByName(store, name);
  if (other) throw conflict(`Error when allocating new name: Conflict. The container name "${name}" is already in use by container "${other.name}". You have to remove (or rename) that container to be able to reuse that name.`);
  return name;
}

// Legacy links (`--link name:alias`, HostConfig.Links): checked at create and stored in the
// reference's form "/child:/parent/alias"; `DELETE /containers/<parent>/<alias>?link=1` takes one
// away from the parent's spec. What a link does at start (hosts entry, variables, the icc
// exception) is the container reconciler's.
import { conflict, invalidArgument, isCode, notFound } from '../../lib/errors.ts';
import { type HostConfig, Containers, type ContainerResource as CR } from '../../store/kinds/container.ts';

import type { AdmissionStore } from '../store.ts';


/** The reference's ParseLink: "name:alias", "name" (alias = name), or the stored "/name:/parent/alias". */
export function parseLink(val: string): { name: string; alias: string } {
  if (val === '') throw invalidArgument('empty string specified for links');
  const arr = val.split(':');
  if (arr.length > 2) throw invalidArgument(`bad format for links: ${val}`);
  if (arr.length === 1) return { name: val, alias: val };
  if (arr[0]!.startsWith('/')) return { name: arr[0]!.slice(1), alias: arr[1]!.split('/').pop()! };
  return { name: arr[0]!, alias: arr[1]! };
}

/**
 * HostConfig.Links as stored: each target must exist (400 when not, so the CLI does not take it
 * for a missing image), must not be on the host network; a container joining another's network
 * namespace cannot have links. On user-defined networks links are kept as given (aliases).
 */
export function normalizeLinks(h: HostConfig, parentName: string, find: (ref: string) => CR): string[] | null {
  const raw = h.Links;
  if (raw === undefined || raw === null) return null;
  if (!Array.isArray(raw) || raw.some((l) => typeof l !== 'string')) throw invalidArgument('invalid JSON: HostConfig.Links: expected an array of strings');
  if (raw.length === 0) return [];
  const mode = h.NetworkMode || 'default';
  if (mode.startsWith('container:')) throw invalidArgument(`conflicting options: container type network can't be used with links. This would result in undefined behavior`);
  // On a user-defined network a link is an alias its DNS answers to this container only: kept as given.
  if (!['default', 'bridge', 'host', 'none'].includes(mode)) {
    for (const l of raw as string[]) parseLink(l);
    return raw as string[];
  }
  const out: string[] = [];
  for (const l of raw as string[]) {
    const { name, alias } = parseLink(l);
    let child: CR;
    try {
      child = find(name);
    } catch (err) {
      if (isCode(err, 'NotFound')) throw invalidArgument(`could not get container for ${name}: ${(err as Error).message}`);
      throw err;
    }
    if (child.spec.hostConfig.NetworkMode === 'host') throw invalidArgument(`conflicting options: host type networking can't be used with links. This would result in undefined behavior`);
    out.push(`${child.spec.name}:${parentName}/${alias}`);
  }
  return out;
}

/** `DELETE /containers/<parent>/<alias>?link=1`: the link leaves the parent's HostConfig.Links. */
export function removeLink(store: AdmissionStore, linkName: string, find: (ref: string) => CR): void {
  const name = linkName.startsWith('/') ? linkName : `/${linkName}`;
  const cut = name.lastIndexOf('/');
  const parentName = name.slice(0, cut);
  if (parentName === '') throw invalidArgument('Conflict, cannot remove the default link name of the container');
  let parent: CR;
  try {
    parent = find(parentName);
  } catch {
    throw notFound(`Cannot get parent ${parentName} for link name ${name}`);
  }
  const links = (parent.spec.hostConfig.Links as string[] | null | undefined) ?? [];
  const keep = links.filter((l) => {
    const { alias } = parseLink(l);
    return `${parent.spec.name}/${alias}` !== name;
  });
  if (keep.length === links.length) throw notFound(`No such container: ${linkName}`);
  if (parent.spec.desired === 'removed') throw conflict(`removal of container ${parentName} is already in progress`);
  store.updateSpec(Containers, parent.name, (s) => ({ ...s, hostConfig: { ...s.hostConfig, Links: keep } }));
}

/** Link names under which other containers know `c` ("/parent/alias"), for the Names of `docker ps`. */
export function linkNamesOf(all: readonly CR[], c: CR): string[] {
  const out: string[] = [];
  for (const p of all) {
    for (const l of (p.spec.hostConfig.Links as string[] | null | undefined) ?? []) {
      if (!l.startsWith('/')) continue;
      const { name, alias } = parseLink(l);
      if (`/${name}` === c.spec.name) out.push(`${p.spec.name}/${alias}`);
    }
  }
  return out;
}

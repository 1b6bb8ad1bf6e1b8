// The body of POST /volumes/create, a volume.VolumeCreateBody checked as the reference's decoder
// checks it (see go-json.ts). A cluster volume spec is decoded only to be refused: this node is
// never a swarm manager.
import * as z from 'zod';
import { at, body, goBody, parseWith, str, strMap, struct, unmarshal } from '../../lib/go-json.ts';

const co = at('VolumeCreateBody', '');

const createOptions = struct(body('VolumeCreateBody'), 'volume.VolumeCreateBody', {
  Name: str(co('Name')),
  Driver: str(co('Driver')),
  DriverOpts: strMap(co('DriverOpts')),
  Labels: strMap(co('Labels')),
  ClusterVolumeSpec: z.looseObject({}, { error: unmarshal('VolumeCreateBody', 'ClusterVolumeSpec', 'volume.ClusterVolumeSpec') }).nullish(),
});

export type VolumeCreateBody = NonNullable<z.output<typeof createOptions>>;

/** The route's body schema. */
export const volumeCreateBody = goBody(createOptions);

export function parseVolumeCreate(input: unknown): VolumeCreateBody {
  return parseWith(createOptions, input);
}

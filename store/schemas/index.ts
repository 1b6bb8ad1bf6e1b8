// Every kind the daemon stores, with its schema: the table cmd hands to the store.
import { schemaTable, type StoreSchemas } from '../schema.ts';
import { containerSchema } from './container.ts';
import { imageSchema, referenceSchema } from './image.ts';
import { endpointSchema, ipamAllocationSchema, networkSchema, portAllocationSchema } from './network.ts';
import { pullSchema } from './pull.ts';
import { migrationSchema, volumeSchema } from './volume.ts';

export const STORE_SCHEMAS: StoreSchemas = schemaTable([
  containerSchema,
  imageSchema,
  referenceSchema,
  networkSchema,
  ipamAllocationSchema,
  portAllocationSchema,
  endpointSchema,
  volumeSchema,
  migrationSchema,
  pullSchema,
]);

// The migration kind: a one-time rewrite of the store has run (name: which one; spec.at: when).
import * as z from 'zod';
import { defineKind } from '../kind.ts';
import type { Resource } from '../types.ts';

export interface MigrationSpec {
  at: string;
}
export type MigrationStatus = Record<string, never>;

export type MigrationResource = Resource<MigrationSpec, MigrationStatus>;

export const Migrations = defineKind<MigrationSpec, MigrationStatus>({
  name: 'migration',
  version: 1,
  schema: { spec: z.object({ at: z.string() }), status: z.object({}) as z.ZodType<MigrationStatus> },
});

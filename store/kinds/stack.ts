// The stack kind: name = the Compose project name. Its spec is a Compose application (the subset
// lib/compose/schema.ts accepts, already validated by the API); the stack reconciler creates and
// owns the project's networks, volumes and containers, keeps them converged, and reports per
// service and for the stack the conditions a tool watches (Ready, Progressing, Degraded).

import * as z from 'zod';
import { composeApp, type ComposeApp } from '../../lib/compose/schema.ts';
import { defineKind } from '../kind.ts';
import type { Resource } from '../types.ts';

export interface StackSpec {
  document: ComposeApp;
  desired: 'present' | 'removed';
  /** DELETE ?volumes=1: the project's named volumes go with it. */
  removeVolumes: boolean;
  /** RFC 3339 time of the last PUT. */
  appliedAt: string;
}

export type StackConditionType = 'Ready' | 'Progressing' | 'Degraded';

export interface StackCondition {
  type: StackConditionType;
  status: 'True' | 'False';
  reason: string;
  message: string;
  lastTransitionTime: string;
  observedGeneration: number;
}

export interface ServiceStatus {
  /** Replicas the document asks for. */
  desired: number;
  /** Containers of the service running now (healthy, where it has a healthcheck). */
  ready: number;
  conditions: StackCondition[];
}

export interface StackStatus {
  observedGeneration: number;
  conditions: StackCondition[];
  services: Record<string, ServiceStatus>;
}

const condition = z.object({
  type: z.enum(['Ready', 'Progressing', 'Degraded']),
  status: z.enum(['True', 'False']),
  reason: z.string(),
  message: z.string(),
  lastTransitionTime: z.string(),
  observedGeneration: z.number().int().nonnegative(),
}) satisfies z.ZodType<StackCondition>;

const specSchema = z.object({
  document: composeApp,
  desired: z.enum(['present', 'removed']),
  removeVolumes: z.boolean(),
  appliedAt: z.string(),
}) satisfies z.ZodType<StackSpec>;

const statusSchema = z.object({
  observedGeneration: z.number().int().nonnegative(),
  conditions: z.array(condition),
  services: z.record(z.string(), z.object({ desired: z.number().int().nonnegative(), ready: z.number().int().nonnegative(), conditions: z.array(condition) })),
}) satisfies z.ZodType<StackStatus>;

export type StackResource = Resource<StackSpec, StackStatus>;

export const Stacks = defineKind<StackSpec, StackStatus>({ name: 'stack', version: 1, schema: { spec: specSchema, status: statusSchema } });

export const INITIAL_STACK_STATUS: StackStatus = { observedGeneration: 0, conditions: [], services: {} };

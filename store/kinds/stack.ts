// The stack kind: name = the Compose project name. Its spec is a Compose application (the subset
// lib/compose/schema.ts accepts, already validated by the API); the stack reconciler creates and
// owns the project's networks, volumes and containers, keeps them converged, and reports per
// service and for the stack the conditions a tool watches (Ready, Progressing, Degraded).

import * as z from 'zod';
import { composeApp, type ComposeApp } from '../../lib/compose/schema.ts';
import { LABEL } from '../../lib/compose/normalize.ts';
import { defineKind } from '../kind.ts';
import { ownerKey, type OwnerRef } from '../owner.ts';
import type { Store } from '../store.ts';
import type { Resource } from '../types.ts';
import { type ContainerResource, Containers } from './container.ts';
import { type NetworkResource, Networks } from './network.ts';
import { type VolumeResource, Volumes } from './volume.ts';

export interface StackSpec {
  document: ComposeApp;
  desired: 'present' | 'removed';
  /** DELETE ?volumes=1: the project's named volumes go with it. */
  removeVolumes: boolean;
  /** RFC 3339 time of the last PUT. */
  appliedAt: string;
  /**
   * Set by an earlier version on this node's part of a cluster stack (its own orchestration,
   * gone: cluster stacks are the swarm's services now). Such a stack is removed by its reconciler.
   */
  placed?: unknown;
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

export type RolloutState = 'RollingOut' | 'Paused' | 'RollingBack' | 'RolledBack' | 'Completed';

/** A service's last rollout: from one config hash to another, replica slot by slot. */
export interface Rollout {
  /** The config hash rolled from ('' when there was no stable version) and to. */
  from: string;
  to: string;
  /** The stack's generation that asked for `to`. */
  generation: number;
  state: RolloutState;
  /** Why it paused or rolled back ('' otherwise). */
  reason: string;
  startedAt: string;
  finishedAt?: string;
  /** Replica slots whose new container is up. */
  updated: number;
  /** Slots whose new container was started and is not up yet. */
  inFlight: number[];
  /** When a slot last came up (update_config.delay counts from it). */
  lastStepAt?: string;
}

/** The version of a service last seen fully Ready: what a rollback returns to. */
export interface StableVersion {
  configHash: string;
  /** Its document is status.documents[generation]. */
  generation: number;
}

export interface ServiceStatus {
  /** Replicas the document asks for. */
  desired: number;
  /** Containers of the service serving now (running; healthy, where it has a healthcheck). */
  ready: number;
  conditions: StackCondition[];
  /** What the service waits for before its containers are created (depends_on), '' when nothing. */
  waitingOn?: string;
  lastRollout?: Rollout;
  stable?: StableVersion;
  /** Unhealthy replicas replaced so far, and the last one. */
  replaced?: number;
  lastReplaced?: { container: string; id: string; at: string; reason: string };
  /** Container id → when it was first seen unhealthy (it is replaced once it stays so). */
  unhealthySince?: Record<string, string>;
}

export interface StackStatus {
  observedGeneration: number;
  conditions: StackCondition[];
  services: Record<string, ServiceStatus>;
  /** Documents of earlier generations a service's stable version still refers to (by generation). */
  documents?: Record<string, ComposeApp>;
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
  placed: z.unknown().optional(),
}) satisfies z.ZodType<StackSpec>;

const statusSchema = z.object({
  observedGeneration: z.number().int().nonnegative(),
  conditions: z.array(condition),
  services: z.record(z.string(), z.object({
    desired: z.number().int().nonnegative(),
    ready: z.number().int().nonnegative(),
    conditions: z.array(condition),
    waitingOn: z.string().optional(),
    lastRollout: z.object({
      from: z.string(),
      to: z.string(),
      generation: z.number().int().nonnegative(),
      state: z.enum(['RollingOut', 'Paused', 'RollingBack', 'RolledBack', 'Completed']),
      reason: z.string(),
      startedAt: z.string(),
      finishedAt: z.string().optional(),
      updated: z.number().int().nonnegative(),
      inFlight: z.array(z.number().int()),
      lastStepAt: z.string().optional(),
    }).optional(),
    stable: z.object({ configHash: z.string(), generation: z.number().int().nonnegative() }).optional(),
    replaced: z.number().int().nonnegative().optional(),
    lastReplaced: z.object({ container: z.string(), id: z.string(), at: z.string(), reason: z.string() }).optional(),
    unhealthySince: z.record(z.string(), z.string()).optional(),
  })),
  documents: z.record(z.string(), composeApp).optional(),
}) satisfies z.ZodType<StackStatus>;

export type StackResource = Resource<StackSpec, StackStatus>;

export const Stacks = defineKind<StackSpec, StackStatus>({ name: 'stack', version: 1, schema: { spec: specSchema, status: statusSchema } });

export const INITIAL_STACK_STATUS: StackStatus = { observedGeneration: 0, conditions: [], services: {} };

// What a stack owns: its containers, networks and volumes name it in their owner reference.
export const stackOwner = (stack: string): OwnerRef => ({ kind: 'stack', name: stack });

type StackStore = Pick<Store, 'list' | 'byIndex'>;

/**
 * The stack that owns an object: its owner reference, or for one an earlier version made through
 * the API, its owner label (no reference). Undefined for anything else: never adopted.
 */
export function stackOf(spec: { ownerRef?: OwnerRef }, labels: Record<string, string> | null | undefined): string | undefined {
  if (spec.ownerRef) return spec.ownerRef.kind === 'stack' ? spec.ownerRef.name : undefined;
  return labels?.[LABEL.owner];
}

/** What a stack owns of a kind, being removed or not: by the kind's owner index, and the unreferenced ones by label. */
function owned<R extends { spec: { ownerRef?: OwnerRef } }>(all: R[], byOwner: R[], labels: (r: R) => Record<string, string> | null | undefined, stack: string): R[] {
  return [...byOwner, ...all.filter((r) => !r.spec.ownerRef && stackOf(r.spec, labels(r)) === stack)];
}

export function ownedContainers(store: StackStore, stack: string): ContainerResource[] {
  return owned(store.list(Containers), store.byIndex(Containers.indexes.owner!, ownerKey(stackOwner(stack))), (c) => c.spec.config.Labels, stack);
}

export function ownedNetworks(store: StackStore, stack: string): NetworkResource[] {
  return owned(store.list(Networks), store.byIndex(Networks.indexes.owner!, ownerKey(stackOwner(stack))), (n) => n.spec.labels, stack);
}

export function ownedVolumes(store: StackStore, stack: string): VolumeResource[] {
  return owned(store.list(Volumes), store.byIndex(Volumes.indexes.owner!, ownerKey(stackOwner(stack))), (v) => v.spec.labels, stack);
}

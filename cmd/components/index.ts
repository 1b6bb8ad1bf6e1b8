// The daemon, as the list of its components. The list is written in the order they start (each
// after what it requires); they close in reverse, so the API closes first and the store last.
import type { Component } from '../components.ts';
import type { DaemonEnv } from './env.ts';
import type { ComponentValues } from './registry.ts';
import { admissionComponent } from './admission.ts';
import { apiComponent, serviceComponents } from './api.ts';
import { clusterComponent } from './cluster.ts';
import { containerComponents, runningComponent } from './containers.ts';
import { coreComponents } from './core.ts';
import { metricsComponent } from './metrics.ts';
import { networkComponents } from './network.ts';
import { pullComponent } from './pulls.ts';
import { reloadComponent } from './reload.ts';
import { stacksComponent } from './stacks.ts';
import { swarmComponent } from './swarm.ts';

export type { DaemonEnv } from './env.ts';

export function daemonComponents(env: DaemonEnv): Component<unknown, ComponentValues>[] {
  return [
    metricsComponent(env),
    ...coreComponents(env),
    ...networkComponents(env),
    ...containerComponents(env),
    ...serviceComponents(env),
    pullComponent(env),
    // After what the routes use, so at shutdown the controllers and the containers stop before
    // any of it closes.
    runningComponent(env),
    clusterComponent(env),
    swarmComponent(env),
    admissionComponent(env),
    apiComponent(env),
    stacksComponent(env),
    reloadComponent(env),
  ];
}

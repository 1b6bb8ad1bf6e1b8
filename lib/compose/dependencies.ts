// A Compose application's depends_on: what each service waits for (a service and the condition
// it must meet), the order services are reconciled in (dependencies first), and what makes a
// document's dependencies wrong (an undeclared service, service_healthy on a service without a
// healthcheck, service_completed_successfully on one that is not a one-shot, a cycle).
import type { ComposeApp, ComposeService } from './schema.ts';

export type DependencyCondition = 'service_started' | 'service_healthy' | 'service_completed_successfully';

export interface Dependency {
  service: string;
  condition: DependencyCondition;
}

/** What `svc` depends on; the list form means service_started. */
export function dependenciesOf(svc: ComposeService | null | undefined): Dependency[] {
  const d = svc?.depends_on;
  if (!d) return [];
  if (Array.isArray(d)) return d.map((service) => ({ service, condition: 'service_started' }));
  return Object.entries(d).map(([service, v]) => ({ service, condition: v.condition ?? 'service_started' }));
}

const hasHealthcheck = (svc: ComposeService | null | undefined) => !!svc?.healthcheck && !svc.healthcheck.disable && (svc.healthcheck.test === undefined || svc.healthcheck.test.length > 0);

/** The first thing wrong with the document's dependencies, as a 400's words; undefined when none. */
export function dependencyProblem(app: ComposeApp): string | undefined {
  for (const [name, def] of Object.entries(app.services)) {
    for (const dep of dependenciesOf(def)) {
      const at = `services.${name}.depends_on.${dep.service}`;
      if (!(dep.service in app.services)) return `${at}: service "${name}" depends on undefined service ${dep.service}`;
      if (dep.service === name) return `${at}: service "${name}" depends on itself`;
      const target = app.services[dep.service];
      if (dep.condition === 'service_healthy' && !hasHealthcheck(target)) return `${at}: service_healthy needs a healthcheck on service ${dep.service}`;
      if (dep.condition === 'service_completed_successfully' && target?.restart !== 'no') return `${at}: service_completed_successfully needs service ${dep.service} to be a one-shot (restart: "no")`;
    }
  }
  try {
    serviceOrder(app);
  } catch (err) {
    return (err as Error).message;
  }
  return undefined;
}

/** Service names, each after what it depends on (document order otherwise); throws on a cycle. */
export function serviceOrder(app: ComposeApp): string[] {
  const out: string[] = [];
  const state = new Map<string, 'visiting' | 'done'>();
  const visit = (name: string, path: string[]) => {
    const s = state.get(name);
    if (s === 'done') return;
    if (s === 'visiting') throw new Error(`services.${name}.depends_on: dependency cycle ${[...path.slice(path.indexOf(name)), name].join(' -> ')}`);
    state.set(name, 'visiting');
    for (const dep of dependenciesOf(app.services[name])) if (dep.service in app.services) visit(dep.service, [...path, name]);
    state.set(name, 'done');
    out.push(name);
  };
  for (const name of Object.keys(app.services)) visit(name, []);
  return out;
}

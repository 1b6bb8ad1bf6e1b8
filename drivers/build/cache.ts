// The classic builder's local cache: a step is skipped when an image exists whose parent is the
// current image and whose container config matches the step's (the reference's compare()).
import type { BuildBackend, BuildImage } from '../../lib/build-ports.ts';
import { containerConfigOf, createdOf } from './image.ts';
import type { Config } from './state.ts';

const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const keys = (v: unknown): string[] => (v && typeof v === 'object' ? Object.keys(v).sort() : []);

function sameList(a: unknown, b: unknown): boolean {
  const x = list(a);
  const y = list(b);
  return x.length === y.length && x.every((v, i) => v === y[i]);
}

/** Whether two container configs describe the same step. */
export function sameStep(a: Config, b: Config): boolean {
  if (a.OpenStdin || b.OpenStdin) return false;
  if ((a.User ?? '') !== (b.User ?? '') || !!a.Tty !== !!b.Tty) return false;
  if (!!a.AttachStdout !== !!b.AttachStdout || !!a.AttachStderr !== !!b.AttachStderr) return false;
  if (!sameList(a.Cmd, b.Cmd) || !sameList(a.Env, b.Env) || !sameList(a.Entrypoint, b.Entrypoint)) return false;
  const la = (a.Labels ?? {}) as Record<string, string>;
  const lb = (b.Labels ?? {}) as Record<string, string>;
  if (!sameList(keys(la), keys(lb)) || keys(la).some((k) => la[k] !== lb[k])) return false;
  return sameList(keys(a.ExposedPorts), keys(b.ExposedPorts)) && sameList(keys(a.Volumes), keys(b.Volumes));
}

/** Looks steps up until the first miss of a stage (everything after a miss is built anew). */
export class StepCache {
  private busted: boolean;
  private readonly backend: BuildBackend;
  private readonly disabled: boolean;
  constructor(backend: BuildBackend, disabled: boolean) {
    this.backend = backend;
    this.disabled = disabled;
    this.busted = disabled;
  }

  /** A new stage looks again. */
  reset(): void {
    this.busted = this.disabled;
  }

  probe(parentId: string, containerConfig: Config): BuildImage | undefined {
    if (this.busted) return undefined;
    let best: BuildImage | undefined;
    let bestCreated = '';
    for (const img of this.backend.children(parentId)) {
      const cc = containerConfigOf(img);
      if (!cc || !sameStep(cc, containerConfig)) continue;
      const created = createdOf(img);
      if (!best || created > bestCreated) {
        best = img;
        bestCreated = created;
      }
    }
    if (!best) this.busted = true;
    return best;
  }
}

// An outside source of keys for a controller (controller-runtime's channel source): the supervisor's
// exit events, a pull job's end, a probe's end. Whoever has the events emits keys; the controller
// that declared `.source(src)` subscribes while it runs. Nothing is set from outside: a source
// emitting with nobody subscribed drops the key, and the controller's resync at start covers it.

export interface Source<T = string> {
  subscribe(fn: (value: T) => void): () => void;
}

export class KeySource<T = string> implements Source<T> {
  private readonly fns = new Set<(value: T) => void>();

  emit(value: T): void {
    for (const fn of this.fns) fn(value);
  }

  subscribe(fn: (value: T) => void): () => void {
    this.fns.add(fn);
    return () => {
      this.fns.delete(fn);
    };
  }
}

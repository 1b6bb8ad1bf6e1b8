// The progress lines of the pulls under way, for the requests that wait on them. A request that
// joins late first gets the latest line of each layer (what the CLI would show at that moment).
import type { JsonMessage } from '../../drivers/distribution/types.ts';

type Listener = (msg: JsonMessage) => void;

export class PullProgress {
  private readonly listeners = new Map<string, Set<Listener>>();
  /** Per pull: the latest line per layer id ('' for lines without one), in first-seen order. */
  private readonly latest = new Map<string, Map<string, JsonMessage>>();

  /** Calls `fn` with each line of pull `name` from now on (after the latest ones so far); answers the unsubscribe. */
  subscribe(name: string, fn: Listener): () => void {
    for (const m of this.latest.get(name)?.values() ?? []) fn(m);
    let set = this.listeners.get(name);
    if (!set) this.listeners.set(name, (set = new Set()));
    set.add(fn);
    return () => {
      set.delete(fn);
      if (set.size === 0 && this.listeners.get(name) === set) this.listeners.delete(name);
    };
  }

  publish(name: string, msg: JsonMessage): void {
    let latest = this.latest.get(name);
    if (!latest) this.latest.set(name, (latest = new Map()));
    latest.set(msg.id ?? '', msg);
    for (const fn of [...(this.listeners.get(name) ?? [])]) fn(msg);
  }

  /** The pull ended: late joiners start from nothing. */
  clear(name: string): void {
    this.latest.delete(name);
  }
}

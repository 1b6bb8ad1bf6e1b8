// Polling for a condition in end-to-end tests: `until` answers the first truthy value of `fn`
// (errors count as "not yet"), or fails naming what did not happen and the last error.
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function until<T>(what: string, fn: () => Promise<T | undefined | false | null>, timeoutMs = 30_000, everyMs = 200): Promise<T> {
  const end = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < end) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (err) {
      last = err;
    }
    await sleep(everyMs);
  }
  throw new Error(`${what}: not within ${timeoutMs} ms${last ? ` (${(last as Error).message})` : ''}`);
}

// Reading Prometheus' text exposition in tests: one sample's value by name and label subset.

/** One sample's value from a text exposition, by metric name and label subset. */
export function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    const want = Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`));
    if (want) return Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return undefined;
}

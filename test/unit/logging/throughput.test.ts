// Prints json-file write and read throughput for 50 MB (measured in a child process; see
// throughput-bench.ts). Only the round trip is checked, never the speed.
import { test } from 'node:test';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

test('throughput: 50 MB written and read back (printed)', () => {
  const script = fileURLToPath(new URL('./throughput-bench.ts', import.meta.url));
  const out = execFileSync(process.execPath, [script], { encoding: 'utf8', timeout: 120_000 });
  process.stdout.write(out);
});

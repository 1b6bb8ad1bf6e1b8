// hack/partition.ts with two rounds (issue 60, 3): a partition round and a kill -9 round over
// three daemons in network namespaces; no replica ever runs on two nodes at once (counted by the
// processes on the host), and every replica of the node hit runs again elsewhere within TTL + 5 s.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { runProcess } from './harness/clients.ts';

const REPO = fileURLToPath(new URL('../../', import.meta.url));
const canRun = existsSync('/usr/bin/etcd') && process.getuid?.() === 0;

test('hack/partition.ts --rounds 2: no double-run; failover within TTL + 5 s', { skip: !canRun && 'needs root and etcd-server (hack/install.sh installs it)', timeout: 290_000 }, async () => {
  const r = await runProcess(join(REPO, 'node_modules/.bin/node'), [join(REPO, 'hack/partition.ts'), '--rounds', '2', '--cut-seconds', '30'], { timeoutMs: 280_000 });
  console.log(r.stdout);
  assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
  const summary = JSON.parse(r.stdout.trim().split('\n').pop()!) as { rounds: number; doubleRuns: number; failed: number };
  assert.deepEqual([summary.rounds, summary.doubleRuns, summary.failed], [2, 0, 0]);
});

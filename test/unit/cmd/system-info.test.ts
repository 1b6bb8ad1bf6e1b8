import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { createSystemInfo } from '../../../cmd/system-info.ts';
import type { DaemonConfig } from '../../../config/load.ts';

function deps(dataRoot: string, version: () => Promise<{ version: string; revision: string }>) {
  return {
    config: { dataRoot } as DaemonConfig,
    layers: { driverName: 'overlay2', driverStatus: (): Array<[string, string]> => [] },
    supervisor: { version },
    runtimes: { names: () => ['stdrt'], default: 'stdrt' },
  };
}

test('the supervisor version is asked once, at creation, and reused', async () => {
  const root = mkdtempSync(join(tmpdir(), 'sysinfo-'));
  try {
    let asked = 0;
    const info = createSystemInfo(deps(root, async () => {
      asked++;
      return { version: '1.6.20', revision: 'abc' };
    }));
    assert.equal(asked, 1, 'asked at creation');
    assert.deepEqual((await info.components())[0], { Name: 'supervisor', Version: '1.6.20', Details: { GitCommit: 'abc' } });
    assert.equal(((await info.info()) as { ContainerdCommit: { ID: string } }).ContainerdCommit.ID, 'abc');
    assert.equal(asked, 1);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('a supervisor that never answers does not hold /info and /version: they answer with empty versions', async () => {
  const root = mkdtempSync(join(tmpdir(), 'sysinfo-'));
  try {
    const info = createSystemInfo(deps(root, () => new Promise(() => {})));
    const [components, full] = await Promise.all([info.components(), info.info()]);
    assert.equal(components[0]!.Version, '');
    assert.equal((full as { ContainerdCommit: { ID: string } }).ContainerdCommit.ID, '');
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

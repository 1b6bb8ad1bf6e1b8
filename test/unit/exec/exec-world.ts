// The exec kind run for real over fakes: a store with one container record (c1), the exec
// controller and reconciler over the given supervisor and stdio, and the port the API uses.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { StdioPort, SupervisorPort } from '../../../reconcilers/container/deps.ts';
import { execController } from '../../../reconcilers/exec/controller.ts';
import { execPort } from '../../../reconcilers/exec/port.ts';
import { ExecProcesses } from '../../../reconcilers/exec/processes.ts';
import { ExecReconciler } from '../../../reconcilers/exec/reconciler.ts';
import { Containers } from '../../../store/kinds/container.ts';
import { openStore } from '../../../store/store.ts';
import { fakeLog } from '../controllers/fake-log.ts';
import { loose } from '../store/test-kind.ts';

export async function execWorld(supervisor: SupervisorPort, stdio: StdioPort, containerUp: () => boolean = () => true) {
  const log = fakeLog();
  const dir = mkdtempSync(join(tmpdir(), 'engine-exec-'));
  const store = openStore(join(dir, 'engine.db'));
  store.create(loose(Containers), 'c1', {}, { phase: 'running' });
  const host = { runInfo: (id: string) => (id === 'c1' && containerUp() ? { pid: 1, oci: { process: { env: ['PATH=/bin'], cwd: '/' } }, rootfs: '/nonexistent' } : undefined) };
  const processes = new ExecProcesses();
  const reconciler = new ExecReconciler(store, { supervisor, stdio, host, processes, execRoot: '/nonexistent', log: fakeLog(), resolveUser: async () => ({ uid: 0, gid: 0 }) });
  const ctl = execController(processes.exits).build({ store, reconciler, log, baseDelayMs: 10 });
  await ctl.start();
  const execs = execPort({ store, processes, host, supervisor });
  const close = async () => {
    await ctl.stop();
    store.close();
    rmSync(dir, { recursive: true, force: true });
  };
  return { execs, store, log, close };
}

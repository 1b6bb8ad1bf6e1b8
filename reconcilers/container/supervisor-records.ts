// What the supervisor holds for a container (its record and task) as the run steps see it: the
// record made (a leftover of a crash cleared first), deleted, or everything under an id cleared,
// and the ids known to hold nothing, so a removal skips the probe for leftovers.
import { isCode } from '../../lib/errors.ts';
import type { ContainerReconcilerDeps } from './deps.ts';

type Supervisor = ContainerReconcilerDeps['supervisor'];

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms).unref());

export class SupervisorRecords {
  private readonly sup: Supervisor;

  constructor(sup: Supervisor) {
    this.sup = sup;
  }

  /**
   * The supervisor's container record. One left behind by a crash between steps (the id is
   * ours, so it is recognised) is cleared with its task and created anew.
   */
  async create(id: string, req: Parameters<Supervisor['createContainer']>[0]): Promise<void> {
    try {
      await this.sup.createContainer(req);
    } catch (err) {
      if (!isCode(err, 'AlreadyExists')) throw err;
      await this.clear(id);
      await this.sup.createContainer(req);
    }
  }

  /**
   * Ids the supervisor holds nothing for, as far as this process knows: their task and record
   * were deleted here. A removal skips the probe for leftovers (two round trips) for them.
   */
  readonly clean = new Set<string>();

  /** Remove whatever the supervisor still holds under this id (a crash between steps). */
  async clear(id: string): Promise<void> {
    const sup = this.sup;
    try {
      const t = await sup.getTask(id);
      if (t.status !== 'STOPPED' && t.status !== 'CREATED') {
        await sup.killTask(id, 9, { all: true }).catch(() => {});
        await Promise.race([sup.waitTask(id).catch(() => null), sleep(5000)]);
      }
      await sup.deleteTask(id).catch(() => {});
    } catch {
      // No task. If the supervisor still had a record, a create may have been cut off (the daemon
      // killed meanwhile) and left its shim running: look for one (unless the record was not there).
      const existed = await sup.deleteContainer(id).then(() => true, (err: unknown) => (isCode(err, 'NotFound') ? false : null));
      if (existed !== null) this.clean.add(id);
      if (existed !== false) await sup.reapShim?.(id).catch(() => false);
      return;
    }
    if (await this.delete(id)) this.clean.add(id);
  }

  /** Delete the supervisor's container record; true when it is gone (the supervisor refuses while a task exists). */
  async delete(id: string): Promise<boolean> {
    try {
      await this.sup.deleteContainer(id);
      return true;
    } catch (err) {
      return isCode(err, 'NotFound');
    }
  }
}

// The container side of volumes: what the container reconciler asks when it prepares, starts and
// removes a container. A volume's data is made ready on demand here too (the calls are
// idempotent, so racing the volume reconciler is harmless); removal stays the volume
// reconciler's, which waits until no container names the volume.
import { conflict, notFound } from '../../lib/errors.ts';
import { volumeSubpath } from '../../drivers/volume/subpath.ts';
import { type VolumeSpec, Volumes } from '../../store/kinds/volume.ts';
import type { VolumeDriverPort, VolumeStore } from './deps.ts';

export class VolumeMounter {
  private readonly store: VolumeStore;
  private readonly driver: VolumeDriverPort;
  /**
   * Runs using each volume that has mount options (type/o/device): mounted for the first, unmounted
   * after the last, as the reference's local driver does (a tmpfs volume's data lasts while in use).
   */
  private readonly users = new Map<string, Set<string>>();

  constructor(store: VolumeStore, driver: VolumeDriverPort) {
    this.store = store;
    this.driver = driver;
  }

  private record(name: string): VolumeSpec {
    const v = this.store.get(Volumes, name);
    if (!v) throw notFound(`get ${name}: no such volume`);
    if (v.spec.desired === 'removed') throw conflict(`volume ${name} is being removed`);
    return v.spec;
  }

  /** The host path to bind for a mount of the volume (its data, mounted per its options; a subpath inside it). */
  async source(containerId: string, name: string, subpath?: string): Promise<string> {
    const spec = this.record(name);
    await this.driver.ensure(name);
    if (Object.keys(spec.options).length > 0) {
      const set = this.users.get(name) ?? new Set<string>();
      set.add(containerId);
      this.users.set(name, set);
    }
    const root = await this.driver.mount(name, spec.options);
    return subpath ? volumeSubpath(root, subpath, name) : root;
  }

  async releaseRun(containerId: string): Promise<void> {
    for (const [name, set] of [...this.users]) {
      if (!set.delete(containerId) || set.size > 0) continue;
      this.users.delete(name);
      await this.driver.unmount(name);
    }
  }

  /** Copy the image's content at a mount's destination into the volume when the volume is empty. */
  async copyUp(name: string, src: string): Promise<boolean> {
    const spec = this.record(name);
    await this.driver.ensure(name);
    await this.driver.mount(name, spec.options);
    return this.driver.copyUp(src, name);
  }

  /** A container is gone: its anonymous volumes go too when asked (`rm -v`, `--rm`). */
  releaseOwned(containerId: string, removeAnonymous: boolean): void {
    if (!removeAnonymous) return;
    const owned = this.store.list(Volumes).filter((v) => v.spec.owner === containerId && v.spec.anonymous && v.spec.desired !== 'removed');
    if (owned.length === 0) return;
    this.store.transaction(() => {
      for (const v of owned) this.store.updateSpec(Volumes, v.name, (s) => ({ ...s, desired: 'removed' }));
    });
  }
}

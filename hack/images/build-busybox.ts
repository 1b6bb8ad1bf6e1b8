// Builds the test images from Debian's busybox-static, deterministically (fixed mtimes, owners and
// order, so the image id never changes for one busybox binary) and cached under
// /tmp/engine-test-images/<hash>: a `docker save` archive, an OCI image-layout tarball and the
// plain rootfs tar. Run directly to build and print the paths:
//   node hack/images/build-busybox.ts
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pack as tarPack, type Header } from 'tar-stream';

export interface TestImages {
  dockerArchive: string;
  ociArchive: string;
  rootfsTar: string;
  tag: string;
  /** sha256:<hex> of the image config. */
  id: string;
}

export const BUSYBOX_TAG = 'engine-test/busybox:latest';
const BUILDER_VERSION = '1';
const MTIME = new Date('2024-01-01T00:00:00Z');
const CREATED = MTIME.toISOString().replace('.000Z', 'Z');
const PATH_ENV = 'PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

export interface Entry {
  name: string;
  type: 'directory' | 'file' | 'symlink';
  mode: number;
  data?: Buffer;
  linkname?: string;
}

const sha256 = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');

function goArch(): string {
  const map: Record<string, string> = { x64: 'amd64', arm64: 'arm64', arm: 'arm', ia32: '386', ppc64: 'ppc64le', s390x: 's390x', riscv64: 'riscv64' };
  return map[process.arch] ?? process.arch;
}

/** A tar of `entries` in order, owned by root, every mtime `mtime` (reproducible bytes). */
export async function tarOf(entries: readonly Entry[], mtime: Date = MTIME): Promise<Buffer> {
  const p = tarPack();
  const chunks: Buffer[] = [];
  p.on('data', (c: unknown) => {
    chunks.push(c as Buffer);
  });
  const done = new Promise<void>((resolve, reject) => {
    p.on('end', () => resolve());
    p.on('error', reject);
  });
  for (const e of entries) {
    const header: Partial<Header> & { name: string } = { name: e.name, type: e.type, mode: e.mode, mtime, uid: 0, gid: 0, uname: '', gname: '' };
    if (e.type === 'symlink') header.linkname = e.linkname;
    const settle = (resolve: () => void, reject: (err: Error) => void) => (err?: Error | null) => (err ? reject(err) : resolve());
    await new Promise<void>((resolve, reject) => {
      if (e.type === 'file') p.entry(header, e.data ?? Buffer.alloc(0), settle(resolve, reject));
      else p.entry(header, settle(resolve, reject));
    });
  }
  p.finalize();
  await done;
  return Buffer.concat(chunks);
}

/** The rootfs: /bin/busybox, a symlink per applet at its usual path, users, /tmp and /root. */
function rootfsEntries(busybox: Buffer, applets: readonly string[]): Entry[] {
  const dirs = new Map<string, number>([
    ['bin', 0o755], ['dev', 0o755], ['etc', 0o755], ['home', 0o755], ['home/app', 0o755], ['proc', 0o755], ['root', 0o700],
    ['sbin', 0o755], ['sys', 0o755], ['tmp', 0o1777], ['usr', 0o755], ['usr/bin', 0o755], ['usr/sbin', 0o755],
    ['var', 0o755], ['var/tmp', 0o1777], ['var/run', 0o755],
  ]);
  const files = new Map<string, Entry>();
  const add = (e: Entry) => files.set(e.name, e);
  add({ name: 'bin/busybox', type: 'file', mode: 0o755, data: busybox });
  add({ name: 'etc/passwd', type: 'file', mode: 0o644, data: Buffer.from('root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/home:/bin/false\napp:x:1000:1000:app:/home/app:/bin/sh\n') });
  add({ name: 'etc/group', type: 'file', mode: 0o644, data: Buffer.from('root:x:0:\nnobody:x:65534:\napp:x:1000:\n') });
  add({ name: 'etc/shadow', type: 'file', mode: 0o600, data: Buffer.from('root:*:19000:0:99999:7:::\nnobody:*:19000:0:99999:7:::\napp:*:19000:0:99999:7:::\n') });
  for (const path of applets) {
    const clean = path.replace(/^\/+/, '');
    if (!clean || clean === 'bin/busybox' || files.has(clean)) continue;
    const dir = clean.includes('/') ? clean.slice(0, clean.lastIndexOf('/')) : '';
    if (dir && !dirs.has(dir)) dirs.set(dir, 0o755);
    add({ name: clean, type: 'symlink', mode: 0o777, linkname: '/bin/busybox' });
  }
  const out: Entry[] = [...dirs].map(([name, mode]) => ({ name: `${name}/`, type: 'directory' as const, mode }));
  out.push(...files.values());
  return out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

function listApplets(busyboxPath: string): string[] {
  try {
    return execFileSync(busyboxPath, ['--list-full'], { encoding: 'utf8' }).split('\n').filter(Boolean);
  } catch {
    // Older builds have only --list: put every applet in /bin.
    return execFileSync(busyboxPath, ['--list'], { encoding: 'utf8' }).split('\n').filter(Boolean).map((a) => `bin/${a}`);
  }
}

function json(v: unknown): Buffer {
  return Buffer.from(JSON.stringify(v));
}

export interface BuildOptions {
  busyboxPath?: string;
  cacheRoot?: string;
}

/** Builds (or finds in the cache) the busybox test images. */
export async function buildBusyboxImages(opts: BuildOptions = {}): Promise<TestImages> {
  const busyboxPath = opts.busyboxPath ?? '/bin/busybox';
  if (!existsSync(busyboxPath)) {
    throw new Error(`${busyboxPath} not found: install busybox-static (hack/install.sh does)`);
  }
  const busybox = readFileSync(busyboxPath);
  const key = sha256(`${BUILDER_VERSION}\n${goArch()}\n${sha256(busybox)}`).slice(0, 16);
  const dir = join(opts.cacheRoot ?? '/tmp/engine-test-images', key);
  const metaPath = join(dir, 'meta.json');
  if (existsSync(metaPath)) {
    const meta = JSON.parse(readFileSync(metaPath, 'utf8')) as TestImages;
    if ([meta.dockerArchive, meta.ociArchive, meta.rootfsTar].every((p) => existsSync(p))) return meta;
  }

  const layer = await tarOf(rootfsEntries(busybox, listApplets(busyboxPath)));
  const diffId = `sha256:${sha256(layer)}`;
  const config = json({
    architecture: goArch(),
    config: { Env: [PATH_ENV], Cmd: ['sh'], WorkingDir: '', Labels: null },
    created: CREATED,
    history: [{ created: CREATED, created_by: 'hack/images/build-busybox.ts: busybox-static rootfs' }],
    os: 'linux',
    rootfs: { type: 'layers', diff_ids: [diffId] },
  });
  const configHex = sha256(config);
  const layerHex = diffId.slice('sha256:'.length);
  const [repo, tag] = BUSYBOX_TAG.split(':');

  // docker save layout (the classic one every loader reads)
  const legacyLayerJson = json({ id: layerHex, created: CREATED, container_config: { Cmd: null }, os: 'linux' });
  const dockerArchive = await tarOf([
    { name: `${configHex}.json`, type: 'file', mode: 0o644, data: config },
    { name: `${layerHex}/`, type: 'directory', mode: 0o755 },
    { name: `${layerHex}/VERSION`, type: 'file', mode: 0o644, data: Buffer.from('1.0') },
    { name: `${layerHex}/json`, type: 'file', mode: 0o644, data: legacyLayerJson },
    { name: `${layerHex}/layer.tar`, type: 'file', mode: 0o644, data: layer },
    { name: 'manifest.json', type: 'file', mode: 0o644, data: json([{ Config: `${configHex}.json`, RepoTags: [BUSYBOX_TAG], Layers: [`${layerHex}/layer.tar`] }]) },
    { name: 'repositories', type: 'file', mode: 0o644, data: json({ [repo]: { [tag]: layerHex } }) },
  ]);

  // OCI image layout
  const manifest = json({
    schemaVersion: 2,
    mediaType: 'application/vnd.oci.image.manifest.v1+json',
    config: { mediaType: 'application/vnd.oci.image.config.v1+json', digest: `sha256:${configHex}`, size: config.length },
    layers: [{ mediaType: 'application/vnd.oci.image.layer.v1.tar', digest: diffId, size: layer.length }],
  });
  const manifestHex = sha256(manifest);
  const index = json({
    schemaVersion: 2,
    mediaType: 'application/vnd.oci.image.index.v1+json',
    manifests: [{
      mediaType: 'application/vnd.oci.image.manifest.v1+json',
      digest: `sha256:${manifestHex}`,
      size: manifest.length,
      annotations: { 'io.containerd.image.name': `docker.io/${BUSYBOX_TAG}`, 'org.opencontainers.image.ref.name': BUSYBOX_TAG },
      platform: { architecture: goArch(), os: 'linux' },
    }],
  });
  const ociArchive = await tarOf([
    { name: 'blobs/', type: 'directory', mode: 0o755 },
    { name: 'blobs/sha256/', type: 'directory', mode: 0o755 },
    ...[
      [configHex, config],
      [layerHex, layer],
      [manifestHex, manifest],
    ].sort(([a], [b]) => ((a as string) < (b as string) ? -1 : 1)).map(([hex, data]) => ({ name: `blobs/sha256/${hex as string}`, type: 'file' as const, mode: 0o644, data: data as Buffer })),
    { name: 'index.json', type: 'file', mode: 0o644, data: index },
    { name: 'oci-layout', type: 'file', mode: 0o644, data: json({ imageLayoutVersion: '1.0.0' }) },
  ]);

  // Write to a private directory, then rename it into place, so concurrent builders never see
  // half-written files.
  const tmp = `${dir}.tmp-${process.pid}-${Date.now()}`;
  mkdirSync(tmp, { recursive: true });
  const result: TestImages = {
    dockerArchive: join(dir, 'busybox.docker.tar'),
    ociArchive: join(dir, 'busybox.oci.tar'),
    rootfsTar: join(dir, 'busybox.rootfs.tar'),
    tag: BUSYBOX_TAG,
    id: `sha256:${configHex}`,
  };
  writeFileSync(join(tmp, 'busybox.docker.tar'), dockerArchive);
  writeFileSync(join(tmp, 'busybox.oci.tar'), ociArchive);
  writeFileSync(join(tmp, 'busybox.rootfs.tar'), layer);
  writeFileSync(join(tmp, 'meta.json'), JSON.stringify(result, null, 2));
  try {
    rmSync(dir, { recursive: true, force: true });
    renameSync(tmp, dir);
  } catch {
    // Another builder won the race with identical content.
    rmSync(tmp, { recursive: true, force: true });
  }
  return result;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  buildBusyboxImages().then(
    (r) => process.stdout.write(`${JSON.stringify(r, null, 2)}\n`),
    (err) => {
      process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
      process.exit(1);
    },
  );
}

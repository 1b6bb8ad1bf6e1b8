// Building layer tars and inspecting unpacked trees for the layer store tests.
import { createHash } from 'node:crypto';
import { lstat, mkdtemp, readdir, readFile, readlink, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import pino from 'pino';
import tarStream from 'tar-stream';
import type { Header as Headers } from 'tar-stream';
import { umountSync } from '../../../drivers/sys/syscalls.ts';

export type Entry = Partial<Headers> & { name: string; data?: string | Buffer };

export async function makeTar(entries: Entry[]): Promise<Buffer> {
  const pack = tarStream.pack();
  for (const e of entries) {
    const { data, ...h } = e;
    const header = { type: data !== undefined ? 'file' : 'directory', mode: h.type === 'directory' || data === undefined ? 0o755 : 0o644, mtime: new Date(1_600_000_000_000), ...h } as Headers;
    if (data !== undefined) pack.entry(header, typeof data === 'string' ? Buffer.from(data) : data);
    else pack.entry(header);
  }
  pack.finalize();
  const chunks: Buffer[] = [];
  for await (const c of pack) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

export const digest = (b: Buffer) => `sha256:${createHash('sha256').update(b).digest('hex')}`;
export const body = (b: Buffer) => Readable.from([b], { objectMode: false });
export const silentLog = () => pino({ level: 'silent' });

export async function collect(r: AsyncIterable<unknown>): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of r) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

/** A stable description of a tree: path -> type/mode/owner/content-or-target. */
export async function describe(root: string, rel = ''): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  const dir = rel ? join(root, rel) : root;
  for (const name of (await readdir(dir)).sort()) {
    const r = rel ? `${rel}/${name}` : name;
    const p = join(root, r);
    const st = await lstat(p);
    const meta = `${(st.mode & 0o7777).toString(8)} ${st.uid}:${st.gid}`;
    if (st.isDirectory()) {
      out[r] = `dir ${meta}`;
      Object.assign(out, await describe(root, r));
    } else if (st.isSymbolicLink()) out[r] = `symlink -> ${await readlink(p)}`;
    else if (st.isFile()) out[r] = `file ${meta} ${(await readFile(p)).toString()}`;
    else out[r] = `special ${st.mode.toString(8)} ${st.rdev}`;
  }
  return out;
}

export async function tempRoot(prefix: string): Promise<string> {
  return mkdtemp(join(tmpdir(), prefix));
}

/** Unmount anything still mounted under `root` (deepest first), then delete it. */
export async function removeRoot(root: string): Promise<void> {
  const info = await readFile('/proc/self/mountinfo', 'utf8');
  const mounts = info.split('\n').map((l) => l.split(' ')[4]).filter((m): m is string => !!m && m.startsWith(`${root}/`));
  for (const m of mounts.sort((a, b) => b.length - a.length)) {
    try {
      umountSync(m, 2);
    } catch {
      // best effort
    }
  }
  await rm(root, { recursive: true, force: true });
}

export async function mountsUnder(root: string): Promise<string[]> {
  const info = await readFile('/proc/self/mountinfo', 'utf8');
  return info.split('\n').map((l) => l.split(' ')[4]).filter((m): m is string => !!m && m.startsWith(`${root}/`));
}

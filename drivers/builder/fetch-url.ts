// ADD <url>: the daemon downloads each source into a scratch directory (mode 0600, the mtime the
// server's Last-Modified gives), named after the last element of the URL's path, so the copy
// that follows treats it as a plain file of the context. Archives from URLs are not extracted.
import { createWriteStream } from 'node:fs';
import { utimes } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { invalidArgument } from '../../lib/errors.ts';

export const isUrl = (s: string): boolean => /^https?:\/\//i.test(s);

/** The file name the reference gives a download: the URL path's last element. */
export function downloadName(url: string): string {
  let path: string;
  try {
    path = new URL(url).pathname;
  } catch {
    throw invalidArgument(`invalid URL: ${url}`);
  }
  const name = decodeURIComponent(path.split('/').filter(Boolean).at(-1) ?? '');
  if (name === '' || name === '.' || name === '..') throw invalidArgument(`cannot determine filename from url: ${url}`);
  return name;
}

/** Download `urls` into `dir`; answers the file names, in order. */
export async function downloadSources(urls: string[], dir: string, signal: AbortSignal): Promise<string[]> {
  const names: string[] = [];
  for (const url of urls) {
    const name = downloadName(url);
    if (names.includes(name)) throw invalidArgument(`two sources download to the same file name: ${name}`);
    let res: Response;
    try {
      res = await fetch(url, { signal, redirect: 'follow' });
    } catch (err) {
      if (signal.aborted) throw err;
      throw invalidArgument(`failed to GET ${url}: ${(err as Error).cause instanceof Error ? ((err as Error).cause as Error).message : (err as Error).message}`);
    }
    if (!res.ok || !res.body) {
      const body = (await res.text().catch(() => '')).slice(0, 200);
      throw invalidArgument(`failed to GET ${url} with status ${res.status} ${res.statusText}: ${body}`);
    }
    const path = join(dir, name);
    await pipeline(Readable.fromWeb(res.body as import('node:stream/web').ReadableStream<Uint8Array>), createWriteStream(path, { mode: 0o600 }), { signal });
    const modified = Date.parse(res.headers.get('last-modified') ?? '');
    if (!Number.isNaN(modified)) await utimes(path, new Date(modified), new Date(modified));
    names.push(name);
  }
  return names;
}

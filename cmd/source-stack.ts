// Stack traces in the daemon's log name the TypeScript sources: a frame in compiled or bundled
// JavaScript (build/, which hack/build.sh writes with source maps) is mapped through node's own
// SourceMap when an error is logged. Node's --enable-source-maps would do it for every trace, but
// it parses every map at start-up and keeps it: ~12 MiB more resident memory for the bundle's
// map, for traces that are rare. Here a map is read on the first trace that needs it and dropped
// once no trace has needed it for a while.
import { readFileSync } from 'node:fs';
import { SourceMap } from 'node:module';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** A map unused this long is let go (the next trace reads it again). */
const KEEP_MS = 60_000;

interface Cached {
  map: SourceMap | null;
  timer?: NodeJS.Timeout;
}

const maps = new Map<string, Cached>();

function mapOf(file: string): SourceMap | null {
  let c = maps.get(file);
  if (!c) {
    let map: SourceMap | null = null;
    try {
      map = new SourceMap(JSON.parse(readFileSync(`${file}.map`, 'utf8')));
    } catch {
      // no map beside it: the frame stays as it is
    }
    c = { map };
    maps.set(file, c);
  }
  clearTimeout(c.timer);
  c.timer = setTimeout(() => maps.delete(file), KEEP_MS).unref();
  return c.map;
}

// `    at name (file:///x/build/engined.bundle.mjs:12:345)` or `    at file:///x/build/a.js:1:2`
const FRAME = /((?:file:\/\/)?\/[^\s():]+\.m?js):(\d+):(\d+)/g;

/** The stack with each mappable frame's location as `<source>.ts:<line>:<column>`. */
export function sourceMappedStack(stack: string): string {
  return stack.replace(FRAME, (whole, where: string, line: string, col: string) => {
    const file = where.startsWith('file://') ? fileURLToPath(where) : where;
    const map = mapOf(file);
    const origin = map?.findOrigin(Number(line), Number(col));
    if (!origin || !('fileName' in origin) || !origin.fileName) return whole;
    return `${resolve(dirname(file), origin.fileName)}:${origin.lineNumber}:${origin.columnNumber}`;
  });
}

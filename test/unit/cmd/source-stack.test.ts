// Stack traces logged by the bundled daemon name the TypeScript sources: a frame of a bundle that
// esbuild wrote with a linked source map maps back to the .ts file and line that threw.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { sourceMappedStack } from '../../../cmd/source-stack.ts';
import { textLine } from '../../../cmd/log-format.ts';

test('a bundled frame maps to its .ts source, line and column; other frames stay as they are', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'engine-stack-'));
  try {
    writeFileSync(join(dir, 'thrower.ts'), ['// line 1', 'export function explode(): never {', "  throw new Error('boom');", '}', ''].join('\n'));
    writeFileSync(join(dir, 'main.ts'), "import { explode } from './thrower.ts';\nexport function run(): void {\n  explode();\n}\n");
    execFileSync('node_modules/.bin/esbuild', [join(dir, 'main.ts'), '--bundle', '--format=esm', '--platform=node', '--minify', '--sourcemap=linked', '--sources-content=false', `--outfile=${join(dir, 'out', 'bundle.mjs')}`]);
    const mod = (await import(pathToFileURL(join(dir, 'out', 'bundle.mjs')).href)) as { run(): void };
    let stack = '';
    try {
      mod.run();
    } catch (err) {
      stack = (err as Error).stack ?? '';
    }
    assert.match(stack, /bundle\.mjs:1:\d+/);
    const mapped = sourceMappedStack(stack);
    assert.ok(mapped.includes(`${join(dir, 'thrower.ts')}:3:`), mapped);
    assert.ok(mapped.includes(`${join(dir, 'main.ts')}:3:`), mapped);
    assert.ok(!mapped.includes('bundle.mjs'), mapped);
    // An error-level text line carries the mapped stack; a warning's does not.
    const rec = (level: number) => JSON.stringify({ time: 't', level, msg: 'failed', err: { message: 'boom', stack } });
    assert.ok(textLine(rec(50)).includes(`thrower.ts:3:`));
    assert.ok(!textLine(rec(40)).includes('stack='));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

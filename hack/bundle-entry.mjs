// engined's entry point in the bundled build (hack/build.sh copies this file to build/engined.mjs).
// Node decodes a module's UTF-8 source of over ~1 MB into an external two-byte string: twice the
// size of the file, held for the life of the process. The bundle is ASCII (esbuild --charset=ascii),
// so it is read as latin1 instead, which keeps it one byte per character.
import { readFileSync } from 'node:fs';
import { registerHooks } from 'node:module';

const bundle = new URL('./engined.bundle.mjs', import.meta.url).href;
// Only for the bundle: the hook is removed once it is loaded, so later loads take node's own path.
const hooks = registerHooks({
  load: (url, context, next) => (url === bundle ? { format: 'module', source: readFileSync(new URL(url), 'latin1'), shortCircuit: true } : next(url, context)),
});
await import(bundle);
hooks.deregister();

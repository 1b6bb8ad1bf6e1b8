// engined's entry point in the bundled build (hack/build.sh copies this file to build/engined.mjs).
// Node decodes a module's UTF-8 source of over ~1 MB into an external two-byte string: twice the
// size of the file, held for the life of the process. The bundle is ASCII (esbuild --charset=ascii),
// so it is read as latin1 instead, which keeps it one byte per character.
import { readFileSync } from 'node:fs';
import { enableCompileCache, flushCompileCache, registerHooks } from 'node:module';
import { fileURLToPath } from 'node:url';

// V8's code cache for the bundle, kept beside it (build.sh replaces the directory on a rebuild; Node
// checks each entry against the source's hash): ~50 ms less to the first ping here, +1 MiB idle
// (docs/performance.md). Node skips it quietly where the directory cannot be written;
// NODE_DISABLE_COMPILE_CACHE=1 turns it off; ENGINE_COMPILE_CACHE_DIR puts it elsewhere (an
// installed package's launcher: /var/cache/engine, not under /usr).
enableCompileCache(process.env.ENGINE_COMPILE_CACHE_DIR || fileURLToPath(new URL('./.compile-cache', import.meta.url)));

const bundle = new URL('./engined.bundle.mjs', import.meta.url).href;
// Only for the bundle: the hook is removed once it is loaded, so later loads take node's own path.
const hooks = registerHooks({
  load: (url, context, next) => (url === bundle ? { format: 'module', source: readFileSync(new URL(url), 'latin1'), shortCircuit: true } : next(url, context)),
});
await import(bundle);
hooks.deregister();
// Written now (only entries that changed), not at exit: a daemon that is killed still leaves it.
flushCompileCache();

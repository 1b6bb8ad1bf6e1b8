#!/usr/bin/env bash
# Compiles the daemon's TypeScript into build/ when any source is newer than the last build.
# Safe to run from several processes at once (one builds under a lock, the others wait); a
# running daemon keeps the modules it loaded, and the new tree replaces the old in one rename.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"
SRC=(cmd api admission store controllers reconcilers drivers config lib tsconfig.json tsconfig.build.json package-lock.json hack/build.sh hack/bundle-entry.mjs)
stale() {
  [ ! -f build/.stamp ] && return 0
  [ -n "$(find "${SRC[@]}" -newer build/.stamp -print -quit 2>/dev/null)" ]
}
stale || exit 0
exec 9>"$REPO/.build.lock"
flock 9
stale || exit 0
tmp="$(mktemp -d "$REPO/.build-XXXXXX")"
chmod 755 "$tmp"
trap 'rm -rf "$tmp"' EXIT
touch "$tmp/.started"
echo "build.sh: the sources are newer than the last build: compiling the daemon into build/" >&2
# A type error stops the build (nothing half-checked runs); its messages go to stderr.
# The output sits at the depth of build/ (its source maps name the sources as ../<dir>/<file>.ts).
if ! node_modules/.bin/tsc -p tsconfig.build.json --outDir "$tmp" >&2; then
  echo "build.sh: compile failed (the errors above); build/ is left as it was" >&2
  exit 1
fi
# The daemon and its dependencies as one minified ASCII module: ~10 MiB less V8 heap than ~850
# modules loaded one by one (their sources, module records) and a faster start. Left outside:
# koffi (a native addon) and etcd3 (it reads its .proto files beside its own modules at run time;
# loaded only with --cluster-store).
# Names are minified too (--keep-names cost ~2 MiB of heap: a property on each of ~2900
# functions); nothing compares a function's or class's name. bin/engined runs the bundle through
# build/engined.mjs when it is there.
if [ -x node_modules/.bin/esbuild ]; then
  node_modules/.bin/esbuild "$tmp/cmd/engined.js" --bundle --platform=node --format=esm --target=node24 \
    --minify --charset=ascii --legal-comments=none --external:koffi --external:etcd3 --log-level=error --sourcemap=linked --sources-content=false \
    --banner:js="import{createRequire as __engineRequire}from'node:module';const require=__engineRequire(import.meta.url);" \
    --outfile="$tmp/engined.bundle.mjs"
  # The log thread's module (drivers/logging/log-thread.ts starts it from beside the bundle).
  node_modules/.bin/esbuild "$tmp/drivers/logging/log-worker.js" --bundle --platform=node --format=esm --target=node24 \
    --minify --charset=ascii --legal-comments=none --log-level=error --sourcemap=linked --sources-content=false \
    --outfile="$tmp/log-worker.bundle.mjs"
  # The client (cmd/engine.ts) as one module too: a package carries no sources for it to run from.
  node_modules/.bin/esbuild "$tmp/cmd/engine.js" --bundle --platform=node --format=esm --target=node24 \
    --minify --charset=ascii --legal-comments=none --log-level=error --sourcemap=linked --sources-content=false \
    --banner:js="import{createRequire as __engineRequire}from'node:module';const require=__engineRequire(import.meta.url);" \
    --outfile="$tmp/engine.bundle.mjs"
  cp hack/bundle-entry.mjs "$tmp/engined.mjs"
fi
# The stamp is as old as the start of this build: a source saved during it triggers the next one.
mv "$tmp/.started" "$tmp/.stamp"
old="$REPO/.build-old-$$"
if [ -d build ]; then mv build "$old"; fi
mv "$tmp" build
rm -rf "$old"

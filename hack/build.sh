#!/usr/bin/env bash
# Compiles the daemon's TypeScript into build/ when any source is newer than the last build.
# Safe to run from several processes at once (one builds under a lock, the others wait); a
# running daemon keeps the modules it loaded, and the new tree replaces the old in one rename.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"
SRC=(cmd api store controllers reconcilers drivers config lib tsconfig.json tsconfig.build.json package-lock.json)
stale() {
  [ ! -f build/.stamp ] && return 0
  [ -n "$(find "${SRC[@]}" -newer build/.stamp -print -quit 2>/dev/null)" ]
}
stale || exit 0
exec 9>"$REPO/.build.lock"
flock 9
stale || exit 0
tmp="$(mktemp -d "$REPO/.build-XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
touch "$tmp/.started"
# Type errors do not stop the emit (the typecheck is the test suite's job), syntax errors do.
node_modules/.bin/tsc -p tsconfig.build.json --outDir "$tmp/out" >/dev/null || true
[ -f "$tmp/out/cmd/engined.js" ] || { echo "build.sh: compile failed" >&2; exit 1; }
mkdir -p "$tmp/out/drivers/supervisor"
cp -r drivers/supervisor/protos "$tmp/out/drivers/supervisor/"
# The stamp is as old as the start of this build: a source saved during it triggers the next one.
mv "$tmp/.started" "$tmp/out/.stamp"
old="$REPO/.build-old-$$"
if [ -d build ]; then mv build "$old"; fi
mv "$tmp/out" build
rm -rf "$old"

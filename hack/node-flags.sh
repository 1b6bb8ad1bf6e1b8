#!/usr/bin/env bash
# node-flags.sh NODE FLAG...: prints, one per line, the V8 flags of the list that this Node knows,
# and warns on stderr of each it does not (a later Node may drop an internal V8 flag; Node refuses
# to start with a flag it does not know, so an unknown one is left out rather than passed).
# A flag `--no-x` is known when `--x` is; `--x=v` when `--x` is. The list of a Node version is
# read once from `node --v8-options` and kept in ENGINE_FLAGS_CACHE (default: $TMPDIR), named by
# the binary's size, time and inode.
set -euo pipefail
node="$1"
shift
# The binary's size and time name its list: no Node is started when the list is known.
stamp="$(stat -Lc '%s-%Y-%i' "$node")"
cache_dir="${ENGINE_FLAGS_CACHE:-${TMPDIR:-/tmp}}"
cache="$cache_dir/engine-v8-options-$stamp-$(id -u)"
if [ ! -s "$cache" ]; then
  tmp="$(mktemp "$cache_dir/engine-v8-options.XXXXXX")"
  "$node" --v8-options | sed -n 's/^  --\([a-z0-9_-]*\) .*/\1/p' > "$tmp"
  mv -f "$tmp" "$cache"
fi
for flag in "$@"; do
  name="${flag#--}"
  name="${name%%=*}"
  name="${name#no-}"
  if grep -qx -- "$name" "$cache" || grep -qx -- "${name//-/_}" "$cache"; then
    echo "$flag"
  else
    echo "engined: this Node ($node) has no V8 flag --$name: $flag left out" >&2
  fi
done

#!/usr/bin/env bash
# One-shot check of the Debian package on this machine (not part of the suite: it installs into
# the host's /usr, /etc and /var): hack/package.sh builds it; dpkg -i installs it (its dependencies
# are Debian's, installed already: nothing is fetched); the installed engined starts from the
# package's paths with its default data root, runs a container for the docker CLI and stops; dpkg -r
# leaves the data and the configuration; dpkg -P takes both away. Refuses to run where engine is
# installed already or its data root exists (it would not be this script's to remove).
#
#   sudo hack/package-check.sh
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
[ "$(id -u)" = 0 ] || { echo "package-check: run as root" >&2; exit 1; }
if dpkg -s engine >/dev/null 2>&1 || [ -e /var/lib/engine ] || [ -e /etc/engine ]; then
  echo "package-check: engine is installed or /var/lib/engine, /etc/engine exist: not touching them" >&2
  exit 1
fi
work="$(mktemp -d "${TMPDIR:-/tmp}/engine-package-check-XXXXXX")"
sock="$work/engine.sock"
pid=""
cleanup() {
  [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
  if dpkg -s engine >/dev/null 2>&1; then dpkg -P engine >/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
step() { printf '\n== %s\n' "$*"; }

step "build"
deb="$(PACKAGE_COMPRESS="${PACKAGE_COMPRESS:-xz}" bash "$REPO/hack/package.sh" "$work" | tail -1)"
ls -l "$deb"

step "dpkg -i $(basename "$deb")"
dpkg -i "$deb"
dpkg -s engine | grep -E '^(Status|Version|Depends|Recommends):'
engined --version
ls -l /usr/bin/engined /lib/systemd/system/engine.service /lib/systemd/system/engine.socket /etc/engine/daemon.json
man -w engined daemon.json engine 2>/dev/null || ls /usr/share/man/man*/engine*

step "the installed daemon: default data root, a private socket, no bridge or iptables of the host's"
img="$("$REPO/node_modules/.bin/node" "$REPO/hack/images/build-busybox.ts" | "$REPO/node_modules/.bin/node" -e 'let s="";process.stdin.on("data",(c)=>s+=c).on("end",()=>console.log(JSON.parse(s).dockerArchive))')"
engined -H "unix://$sock" --bridge none --iptables=false >"$work/engined.log" 2>&1 &
pid=$!
for _ in $(seq 1 100); do [ -S "$sock" ] && docker -H "unix://$sock" version >/dev/null 2>&1 && break; sleep 0.2; done
docker -H "unix://$sock" version --format 'server {{.Server.Version}} ({{.Server.GitCommit}}), API {{.Server.APIVersion}}'
docker -H "unix://$sock" load -i "$img" >/dev/null
docker -H "unix://$sock" run --rm --network none engine-test/busybox:latest echo "a container from the installed package"
docker -H "unix://$sock" volume create kept >/dev/null
kill -TERM "$pid"
wait "$pid" || true
pid=""
test -d /var/lib/engine

step "dpkg -r: the data and the configuration stay"
dpkg -r engine
test ! -e /usr/bin/engined && echo "/usr/bin/engined: removed"
test -d /var/lib/engine/volumes/kept && echo "/var/lib/engine/volumes/kept: kept"
test -f /etc/engine/daemon.json && echo "/etc/engine/daemon.json: kept (conffile)"

step "dpkg -P: both go"
dpkg -P engine
test ! -e /var/lib/engine && echo "/var/lib/engine: removed"
test ! -e /etc/engine && echo "/etc/engine: removed"

printf '\npackage-check: ok\n'

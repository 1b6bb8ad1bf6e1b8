#!/usr/bin/env bash
# Builds the Debian package engine_<version>_<arch>.deb (dpkg-deb; nothing is fetched, at build or
# at install): the built daemon and client with the pinned Node runtime and the modules the bundle
# leaves outside (koffi's native addon, etcd3 and what it needs) under /usr/lib/engine, the
# launchers in /usr/bin, engine.service and engine.socket in /lib/systemd/system, a default
# /etc/engine/daemon.json (a conffile), man pages, shell completions and docs. It depends on
# Debian's containerd, runc and iptables, and recommends etcd-server (swarm mode, --cluster-store).
# Removal leaves /var/lib/engine and /etc/engine; a purge removes them.
#
#   hack/package.sh [OUTDIR]     (default: the repository's dist/)
#   PACKAGE_COMPRESS=gzip|xz|none (default xz; the e2e test uses gzip, faster)
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"
OUT="$(mkdir -p "${1:-$REPO/dist}" && cd "${1:-$REPO/dist}" && pwd)"
NODE="$REPO/node_modules/.bin/node"
[ -x "$NODE" ] || { echo "package.sh: $NODE not found: run hack/install.sh first" >&2; exit 1; }
bash hack/build.sh >&2 || { echo "package.sh: the build failed (above)" >&2; exit 1; }
[ -f build/engined.bundle.mjs ] && [ -f build/engine.bundle.mjs ] || { echo "package.sh: build/ has no bundles (esbuild missing?)" >&2; exit 1; }

VERSION="$("$NODE" -p 'require("./package.json").version')"
ARCH="$(dpkg --print-architecture)"
COMMIT="$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
PKG="engine_${VERSION}_${ARCH}"
stage="$(mktemp -d "${TMPDIR:-/tmp}/engine-package-XXXXXX")"
trap 'rm -rf "$stage"' EXIT
root="$stage/$PKG"
lib="$root/usr/lib/engine"
mkdir -p "$lib/bin" "$lib/hack" "$lib/node_modules/.bin" "$root/usr/bin" "$root/lib/systemd/system" "$root/etc/engine" \
  "$root/usr/share/man/man8" "$root/usr/share/man/man5" "$root/usr/share/doc/engine" \
  "$root/usr/share/bash-completion/completions" "$root/usr/share/zsh/vendor-completions" "$root/DEBIAN"

# The daemon and client as built (bundles, source maps, the compiled modules the fencer runs from),
# without the compile cache a run from the checkout left.
cp -a build "$lib/build"
rm -rf "$lib/build/.compile-cache"
cp -a bin/engined bin/engine "$lib/bin/"
cp -a hack/node-flags.sh "$lib/hack/"
mkdir -p "$lib/contrib" && cp -a contrib/completion "$lib/contrib/"
# ESM for the compiled modules (build/cmd/fencer.js); the launchers read the commit from here and
# know by it that they run from a package (no sources to build, caches under /var/cache/engine).
printf '{\n  "name": "engine",\n  "version": "%s",\n  "private": true,\n  "type": "module"\n}\n' "$VERSION" > "$lib/package.json"
printf 'commit=%s\nversion=%s\n' "$COMMIT" "$VERSION" > "$lib/.package"

# The pinned Node runtime (the npm package `node`'s binary), at the path the launchers use.
mkdir -p "$lib/node_modules/node/bin"
cp -L "$REPO/node_modules/node/bin/node" "$lib/node_modules/node/bin/node"
ln -s ../node/bin/node "$lib/node_modules/.bin/node"
# The modules the bundle leaves outside, with what they need (installed ones only: koffi's
# addon for other platforms is not here).
"$NODE" -e '
  const { existsSync, readFileSync } = require("node:fs");
  const { join, dirname } = require("node:path");
  const seen = new Set();
  const find = (name, from) => {
    for (let d = from; ; d = dirname(d)) {
      const p = join(d, "node_modules", name);
      if (existsSync(join(p, "package.json"))) return p;
      if (d === dirname(d) || d === process.cwd()) return null;
    }
  };
  const walk = (dir) => {
    if (!dir || seen.has(dir)) return;
    seen.add(dir);
    const pj = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
    for (const n of Object.keys({ ...pj.dependencies, ...pj.optionalDependencies })) walk(find(n, dir));
  };
  for (const n of ["koffi", "etcd3"]) walk(find(n, process.cwd()));
  for (const d of seen) console.log(d.slice(process.cwd().length + 1));
' | while read -r dir; do
  mkdir -p "$lib/$(dirname "$dir")"
  cp -a "$dir" "$lib/$dir"
done
# Only this machine's flavour of koffi's addon (the musl one is for another libc).
rm -rf "$lib/node_modules/@koromix/koffi-linux-x64/musl_x64"

ln -s ../lib/engine/bin/engined "$root/usr/bin/engined"
ln -s ../lib/engine/bin/engine "$root/usr/bin/engine"
cp contrib/systemd/engine.service contrib/systemd/engine.socket "$root/lib/systemd/system/"
printf '{}\n' > "$root/etc/engine/daemon.json"
for m in docs/man/*.[0-9]; do
  sec="${m##*.}"
  mkdir -p "$root/usr/share/man/man$sec"
  gzip -9n < "$m" > "$root/usr/share/man/man$sec/$(basename "$m").gz"
done
cp contrib/completion/bash/engine "$root/usr/share/bash-completion/completions/engine" 2>/dev/null || true
cp contrib/completion/zsh/_engine "$root/usr/share/zsh/vendor-completions/_engine" 2>/dev/null || true
cp README.md docs/daemon-json.md docs/architecture.md "$root/usr/share/doc/engine/"
cat > "$root/usr/share/doc/engine/copyright" <<EOF
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: engine
Comment: engined, a container engine daemon compatible with the Docker Engine API.
 Bundled: Node.js (MIT; /usr/lib/engine/node_modules/node), and the npm modules under
 /usr/lib/engine/node_modules and inside build/engined.bundle.mjs, each under its own licence
 (see their package.json files).
EOF

cat > "$root/DEBIAN/control" <<EOF
Package: engine
Version: $VERSION
Architecture: $ARCH
Maintainer: engine developers <engine@localhost>
Installed-Size: $(du -sk --exclude=DEBIAN "$root" | cut -f1)
Depends: containerd, runc, iptables
Recommends: etcd-server
Suggests: etcd-client
Section: admin
Priority: optional
Homepage: https://localhost/engine
Description: container engine daemon compatible with the Docker Engine API
 engined runs containers through containerd and runc and answers the Docker
 Engine API, so the docker CLI, docker-py, dockerode, testcontainers and
 docker-compose work against it unchanged. Swarm mode keeps its state in etcd.
 .
 This package holds its own Node.js runtime (commit $COMMIT).
EOF
echo /etc/engine/daemon.json > "$root/DEBIAN/conffiles"
cat > "$root/DEBIAN/postinst" <<'EOF'
#!/bin/sh
set -e
if [ "$1" = configure ]; then
  # The group the API socket belongs to (engine.socket, --group's default).
  getent group engine >/dev/null || addgroup --system engine >/dev/null
  mkdir -p /var/lib/engine /var/cache/engine
  chmod 0710 /var/lib/engine
  if [ -d /run/systemd/system ]; then
    systemctl daemon-reload >/dev/null || true
    systemctl enable engine.socket engine.service >/dev/null 2>&1 || true
  fi
fi
exit 0
EOF
cat > "$root/DEBIAN/prerm" <<'EOF'
#!/bin/sh
set -e
if [ -d /run/systemd/system ] && [ "$1" = remove ]; then
  systemctl stop engine.socket engine.service >/dev/null 2>&1 || true
fi
exit 0
EOF
cat > "$root/DEBIAN/postrm" <<'EOF'
#!/bin/sh
set -e
case "$1" in
  remove)
    # What runs wrote under the package's own tree; the data stays until a purge.
    rm -rf /var/cache/engine
    ;;
  purge)
    # Mounts a daemon left under its data root would make a plain removal fail; none may be left.
    if [ -d /var/lib/engine ] && ! grep -q " /var/lib/engine/" /proc/self/mounts; then rm -rf /var/lib/engine; fi
    rm -rf /var/cache/engine /etc/engine /run/engine
    ;;
esac
if [ -d /run/systemd/system ]; then systemctl daemon-reload >/dev/null 2>&1 || true; fi
exit 0
EOF
chmod 0755 "$root/DEBIAN/postinst" "$root/DEBIAN/prerm" "$root/DEBIAN/postrm"

compress="${PACKAGE_COMPRESS:-xz}"
case "$compress" in
  xz) zopt=(-Zxz -z6) ;;
  gzip) zopt=(-Zgzip -z1) ;;
  none) zopt=(-Znone) ;;
  *) echo "package.sh: PACKAGE_COMPRESS is gzip, xz or none, not $compress" >&2; exit 1 ;;
esac
dpkg-deb --root-owner-group "${zopt[@]}" --build "$root" "$OUT/$PKG.deb" >&2
echo "$OUT/$PKG.deb"

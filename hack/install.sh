#!/usr/bin/env bash
# Installs what engined and its tests need on a fresh Debian 12 machine (run as root).
# Idempotent: apt only when a package is missing, npm ci only when node_modules is absent or
# older than package-lock.json. Debian's containerd package runs a system containerd service;
# it is left alone: engined starts its own supervisor with its own config and socket.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"

PACKAGES=(containerd runc iptables iproute2 iputils-ping busybox-static docker-registry skopeo tini pigz bzip2 xz-utils tar curl ca-certificates openssl python3-docker python3-pytest docker-compose protobuf-compiler prometheus etcd-server etcd-client zsh btrfs-progs xfsprogs fuse-overlayfs rootlesskit slirp4netns uidmap systemd)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done
if [ "${#missing[@]}" -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "install.sh: missing packages (${missing[*]}); run as root" >&2
    exit 1
  fi
  echo "install.sh: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [ ! -d node_modules ] || [ ! -x node_modules/.bin/node ] || [ package-lock.json -nt node_modules ]; then
  echo "install.sh: npm ci" >&2
  npm ci --no-audit --no-fund --loglevel=error
  touch node_modules
fi

# Compile the daemon into build/ now rather than at its first start (bin/engined rebuilds when stale).
bash "$REPO/hack/build.sh" || echo "install.sh: build failed (above); bin/engined will not start until it builds" >&2

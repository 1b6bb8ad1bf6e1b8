#!/usr/bin/env bash
# Installs what is missing, then runs engined in the foreground with the default options
# (socket unix:///var/run/engine.sock). Extra arguments go to engined.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$REPO/hack/install.sh"
exec "$REPO/bin/engined" "$@"

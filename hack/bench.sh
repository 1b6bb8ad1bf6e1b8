#!/usr/bin/env bash
# Installs what is missing, then runs the benchmark: hack/bench.sh [--reference] [--quick]
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$REPO/hack/install.sh"
cd "$REPO"
exec node_modules/.bin/node hack/bench.ts "$@"

#!/usr/bin/env bash
# The whole suite: install what is missing, typecheck, unit tests, then end-to-end tests (one
# file at a time: each starts its own daemon), then docker-py tests under test/e2e/python if any.
# Ends with one line `N passed, N failed[, N skipped]` and exits non-zero on any failure.
# Environment: UNIT_ONLY=1 skips the e2e phases; E2E_TIMEOUT (seconds, default 900).
set -uo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"

bash hack/install.sh || { echo "install failed"; echo "0 passed, 1 failed"; exit 1; }

NODE="$REPO/node_modules/.bin/node"
OUT="$(mktemp -d /tmp/engine-test-XXXXXX)"
trap 'rm -rf "$OUT"' EXIT
passed=0
failed=0
skipped=0

phase() { printf '\n===== %s =====\n' "$*"; }

# Adds a node test run's TAP totals (written to $1) to the counters.
count_tap() {
  local tap="$1" rc="$2" p f c s
  p=$(grep -E '^# pass [0-9]+' "$tap" | tail -1 | awk '{print $3}')
  f=$(grep -E '^# fail [0-9]+' "$tap" | tail -1 | awk '{print $3}')
  c=$(grep -E '^# cancelled [0-9]+' "$tap" | tail -1 | awk '{print $3}')
  s=$(grep -E '^# (skipped|todo) [0-9]+' "$tap" | awk '{n += $3} END {print n + 0}')
  if [ -z "$p" ] && [ -z "$f" ]; then
    # The runner died before its summary (timeout, crash): one failure for the phase.
    failed=$((failed + 1))
    return
  fi
  passed=$((passed + ${p:-0}))
  failed=$((failed + ${f:-0} + ${c:-0}))
  skipped=$((skipped + s))
  if [ "$rc" -ne 0 ] && [ "${f:-0}" -eq 0 ] && [ "${c:-0}" -eq 0 ]; then failed=$((failed + 1)); fi
}

run_node_tests() {
  local name="$1" limit="$2"; shift 2
  local tap="$OUT/$name.tap" rc
  timeout -k 30 "$limit" "$NODE" --test --test-reporter=spec --test-reporter-destination=stdout \
    --test-reporter=tap --test-reporter-destination="$tap" "$@"
  rc=$?
  [ "$rc" -eq 124 ] && echo "$name: timed out after ${limit}s"
  count_tap "$tap" "$rc"
}

phase typecheck
if timeout 600 node_modules/.bin/tsc --noEmit -p .; then
  passed=$((passed + 1)); echo "typecheck: ok"
else
  failed=$((failed + 1)); echo "typecheck: FAILED"
fi

phase unit tests
run_node_tests unit 600 --test-timeout=60000 'test/unit/**/*.test.ts'

if [ "${UNIT_ONLY:-}" != "1" ]; then
  phase end-to-end tests
  hack_images_ok=1
  "$NODE" hack/images/build-busybox.ts >/dev/null || hack_images_ok=0
  [ "$hack_images_ok" -eq 1 ] || echo "warning: building test images failed"
  run_node_tests e2e "${E2E_TIMEOUT:-900}" --test-concurrency=1 --test-timeout=300000 'test/e2e/**/*.test.ts'

  if [ -d test/e2e/python ] && ls test/e2e/python/*.py >/dev/null 2>&1; then
    phase docker-py tests
    # Debian's python3: python3-docker and python3-pytest are installed for it.
    timeout -k 30 600 /usr/bin/python3 -m pytest -q -rfE -p no:cacheprovider test/e2e/python 2>&1 | tee "$OUT/pytest.out"
    rc=${PIPESTATUS[0]}
    last=$(grep -E '[0-9]+ (passed|failed|error|errors|skipped)' "$OUT/pytest.out" | tail -1)
    pp=$(grep -oE '[0-9]+ passed' <<<"$last" | awk '{print $1}')
    pf=$(grep -oE '[0-9]+ failed' <<<"$last" | awk '{print $1}')
    pe=$(grep -oE '[0-9]+ errors?' <<<"$last" | awk '{print $1}')
    ps=$(grep -oE '[0-9]+ skipped' <<<"$last" | awk '{print $1}')
    passed=$((passed + ${pp:-0})); failed=$((failed + ${pf:-0} + ${pe:-0})); skipped=$((skipped + ${ps:-0}))
    # exit 5 is "no tests collected": not a failure
    if [ "$rc" -ne 0 ] && [ "$rc" -ne 5 ] && [ -z "$pf$pe" ]; then failed=$((failed + 1)); fi
  fi
fi

echo
if [ "$skipped" -gt 0 ]; then
  echo "$passed passed, $failed failed, $skipped skipped"
else
  echo "$passed passed, $failed failed"
fi
[ "$failed" -eq 0 ]

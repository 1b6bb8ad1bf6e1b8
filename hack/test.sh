#!/usr/bin/env bash
# The whole suite: install what is missing, typecheck, unit tests, then end-to-end tests (one
# file at a time: each starts its own daemon), then docker-py tests under test/e2e/python if any.
# Ends with one line `N passed, N failed[, N skipped]` and exits non-zero on any failure.
# The image and container files run once more with every daemon on a btrfs loop-file data root
# (ENGINE_E2E_STORAGE=btrfs: test/e2e/harness/daemon.ts), the storage driver's whole-suite check,
# and once more with the supervisor's snapshotter (ENGINE_E2E_STORAGE=snapshotter).
# Environment: UNIT_ONLY=1 skips the end-to-end phases; E2E_BUDGET (seconds, default 2700) bounds
# the end-to-end phase as a whole, E2E_FILE_TIMEOUT (default 300) each e2e file, E2E_TEST_TIMEOUT
# (ms, default 180000) each e2e test: a bound on a hung test, above the longest wait a test makes.
set -uo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"

if ! bash hack/install.sh; then
  echo "hack/install.sh failed"
  echo "0 passed, 1 failed"
  exit 1
fi

NODE="$REPO/node_modules/.bin/node"
OUT="$(mktemp -d /tmp/engine-test-XXXXXX)"
trap 'rm -rf "$OUT"' EXIT
passed=0
failed=0
skipped=0

phase() { printf '\n===== %s =====\n' "$*"; }

# Adds the TAP totals of one node --test run (file $1, exit code $2) to the counters.
count_tap() {
  local tap="$1" rc="$2" p f c s
  p=$(grep -E '^# pass [0-9]+' "$tap" 2>/dev/null | tail -1 | awk '{print $3}')
  f=$(grep -E '^# fail [0-9]+' "$tap" 2>/dev/null | tail -1 | awk '{print $3}')
  c=$(grep -E '^# cancelled [0-9]+' "$tap" 2>/dev/null | tail -1 | awk '{print $3}')
  s=$(grep -E '^# (skipped|todo) [0-9]+' "$tap" 2>/dev/null | awk '{n += $3} END {print n + 0}')
  if [ -z "$p" ] && [ -z "$f" ]; then
    # The runner died before its summary (timeout, crash): count what finished, plus one failure.
    p=$(grep -cE '^ +ok [0-9]+ ' "$tap" 2>/dev/null)
    f=$(grep -cE '^ +not ok [0-9]+ ' "$tap" 2>/dev/null)
    passed=$((passed + ${p:-0}))
    failed=$((failed + ${f:-0} + 1))
    return
  fi
  passed=$((passed + ${p:-0}))
  failed=$((failed + ${f:-0} + ${c:-0}))
  skipped=$((skipped + s))
  if [ "$rc" -ne 0 ] && [ "${f:-0}" -eq 0 ] && [ "${c:-0}" -eq 0 ]; then failed=$((failed + 1)); fi
}

# run_node_tests NAME SECONDS ARGS...: one node --test run under a hard time limit.
run_node_tests() {
  local name="$1" limit="$2"; shift 2
  local tap="$OUT/$name.tap" rc
  timeout -k 30 "$limit" "$NODE" --test --test-reporter=spec --test-reporter-destination=stdout \
    --test-reporter=tap --test-reporter-destination="$tap" "$@"
  rc=$?
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then echo "$name: timed out after ${limit}s"; fi
  count_tap "$tap" "$rc"
}

phase typecheck
if timeout 600 node_modules/.bin/tsc --noEmit -p .; then
  passed=$((passed + 1)); echo "typecheck: ok"
else
  failed=$((failed + 1)); echo "typecheck: FAILED"
fi

phase unit tests
run_node_tests unit 600 --test-concurrency=2 --test-timeout=60000 'test/unit/**/*.test.ts'

if [ "${UNIT_ONLY:-}" != "1" ]; then
  phase end-to-end tests
  "$NODE" hack/images/build-busybox.ts >/dev/null || echo "warning: building the test images failed"
  budget=${E2E_BUDGET:-3300}
  # The uncaught exceptions and unhandled rejections the daemons logged and survived (harness/daemon.ts).
  export ENGINE_E2E_UNCAUGHT_LOG="$OUT/uncaught.log"
  : > "$ENGINE_E2E_UNCAUGHT_LOG"
  start=$SECONDS
  # One e2e file ($2, reported as $1) within what is left of the budget.
  e2e_file() {
    local left=$((budget - (SECONDS - start))) limit=${E2E_FILE_TIMEOUT:-300}
    if [ "$left" -le 10 ]; then
      echo "$1: not run, the end-to-end time budget (${budget}s) is spent"
      failed=$((failed + 1))
      return
    fi
    [ "$left" -lt "$limit" ] && limit=$left
    run_node_tests "$1" "$limit" --test-concurrency=1 --test-timeout="${E2E_TEST_TIMEOUT:-180000}" "$2"
  }
  shopt -s globstar nullglob
  for f in test/e2e/**/*.test.ts; do e2e_file "e2e-$(basename "$f" .test.ts)" "$f"; done
  shopt -u globstar nullglob

  # The image and container files once more on another storage: ENGINE_E2E_STORAGE (harness/daemon.ts).
  storage_phase() {
    local storage=$1; shift
    phase "end-to-end tests on $storage"
    export ENGINE_E2E_STORAGE=$storage
    for f in "$@"; do e2e_file "e2e-$storage-$f" "test/e2e/$f.test.ts"; done
    unset ENGINE_E2E_STORAGE
  }
  storage_phase btrfs images-api core-flow lifecycle archive-mounts build registry
  storage_phase snapshotter images-api lifecycle archive-mounts build registry docker-cli

  if [ -d test/e2e/python ] && ls test/e2e/python/*.py >/dev/null 2>&1; then
    phase docker-py tests
    # Debian's python3: python3-docker and python3-pytest are installed for it.
    timeout -k 30 600 /usr/bin/python3 -m pytest -q -rfE -p no:cacheprovider test/e2e/python 2>&1 | tee "$OUT/pytest.out"
    rc=${PIPESTATUS[0]}
    last=$(grep -E '[0-9]+ (passed|failed|errors?|skipped)' "$OUT/pytest.out" | tail -1)
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
if [ -s "${ENGINE_E2E_UNCAUGHT_LOG:-/nonexistent}" ]; then
  echo "uncaught exceptions or unhandled rejections logged by the daemons: $(wc -l < "$ENGINE_E2E_UNCAUGHT_LOG") (in $ENGINE_E2E_UNCAUGHT_LOG):"
  cut -c1-300 "$ENGINE_E2E_UNCAUGHT_LOG" | sort | uniq -c | sort -rn | head -20
fi
if [ "$skipped" -gt 0 ]; then
  echo "$passed passed, $failed failed, $skipped skipped"
else
  echo "$passed passed, $failed failed"
fi
[ "$failed" -eq 0 ]

#!/usr/bin/env bash
# Runs the Kubernetes integration tests (test/k8s, build tag k8s) on a
# testbed of their own. A test that fails is run once more, alone, on a
# fresh testbed, and the run fails if it fails again; each such rerun is
# reported on a line starting with "FLAKE:" so that it is seen and fixed,
# not hidden. Environment: EBB_BIN (the built binaries), GO (go), K8S_RUN
# (a -run pattern: only those tests; default all), and the testbed's
# EBB_TESTBED_* settings.
set -uo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
log=$(mktemp)
trap 'rm -f "$log"' EXIT

suite() { # $1: a -run pattern, or empty for every test
  bash hack/testbed.sh build && bash hack/testbed.sh up >/dev/null || return 2
  local args=(-tags k8s -count=1 -timeout 25m -v) # TestWave (500 revisions) adds 2-4 minutes
  [ -n "$1" ] && args+=(-run "$1")
  bash hack/testbed.sh run -- env EBB_BIN="$EBB_BIN" "$GO" test "${args[@]}" ./test/k8s/... 2>&1 | tee "$log"
  local rc=${PIPESTATUS[0]}
  bash hack/testbed.sh down
  return "$rc"
}

suite "${K8S_RUN:-}" && exit 0
rc=$?
failed=$(grep -oE '^--- FAIL: Test[A-Za-z0-9_]+' "$log" | awk '{print $3}' | sort -u | paste -sd'|')
if [ -z "$failed" ]; then
  echo "test-k8s: the suite failed before any test did (exit $rc); not retried" >&2
  exit "$rc"
fi
echo "FLAKE: test-k8s: $failed failed; running them once more on a fresh testbed" >&2
suite "^($failed)\$"

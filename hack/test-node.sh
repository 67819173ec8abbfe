#!/usr/bin/env bash
# Runs Ebb end to end on the testbed's real node (hack/testbed.sh up
# --real-node): the images of make images in a real containerd, Ebb
# installed by make deploy as docs/kubernetes.md's Install section says
# (autoscalers, activators, the webhook in pods, the example app hello with
# its webhook-injected queue-proxy), then the Go tests of test/node (build
# tag node) inside the testbed's namespace: go test -tags node ./test/node/.
# Environment: the testbed's EBB_TESTBED_* settings (EBB_TESTBED_IMAGES:
# make images' output, an absolute path; bin/images),
# NODE_RUN (a -run pattern: some tests only), NODE_WAKES (cold starts
# measured, 20).
set -uo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
export EBB_TESTBED_IMAGES=${EBB_TESTBED_IMAGES:-$PWD/bin/images}
tb() { bash hack/testbed.sh "$@"; }
start=$SECONDS
tb up --real-node >/dev/null || { tb down; exit 2; }
if ! tb run -- make deploy KUBECTL=kubectl IMAGES="$EBB_TESTBED_IMAGES" >/dev/null; then
  echo "test-node: FAIL: make deploy on the real node" >&2
  tb logs >&2 || true
  tb down
  exit 1
fi
echo "test-node: make deploy done after $((SECONDS - start)) s"
args=(-tags node -count=1 -timeout 40m -v)
[ -n "${NODE_RUN:-}" ] && args+=(-run "$NODE_RUN")
tb run -- env EBB_IMAGES="$EBB_TESTBED_IMAGES" NODE_WAKES="${NODE_WAKES:-20}" "$GO" test "${args[@]}" ./test/node/
rc=$?
if [ "$rc" != 0 ]; then
  tb run -- kubectl get pods -A -o wide >&2 || true
  tb run -- kubectl get events -A --field-selector type=Warning >&2 || true
fi
tb down >/dev/null
echo "test-node: $([ "$rc" = 0 ] && echo PASS || echo FAIL) in $((SECONDS - start)) s"
exit "$rc"

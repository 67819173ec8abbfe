#!/usr/bin/env bash
# Runs Ebb end to end on the testbed's real node (hack/testbed.sh up
# --real-node): the images of make images in a real containerd, Ebb
# installed by make deploy (autoscalers, activators, the webhook in pods),
# the example app hello with its webhook-injected queue-proxy. It checks:
# hello scales to zero; one request through the activator's Service wakes
# it (cold start, request to first byte, printed); hey with 50 clients
# sees only 200s while hello scales out. Environment: the testbed's
# EBB_TESTBED_* settings, IMAGES (bin/images).
set -uo pipefail
cd "$(dirname "$0")/.."
tb() { bash hack/testbed.sh "$@"; }
in_tb() { tb run -- sh -c "$1"; }
fail() { echo "test-node: FAIL: $*" >&2; tb logs >&2 || true; tb down; exit 1; }
start=$SECONDS
# hey from go.mod's tools, built outside (no network inside the namespace).
HEY=$(mktemp -d)/hey
go build -o "$HEY" github.com/rakyll/hey || exit 2
tb up --real-node >/dev/null || { tb down; exit 2; }
in_tb 'make deploy KUBECTL=kubectl' >/dev/null || fail "make deploy on the real node"
act='$(kubectl -n ebb-system get svc ebb-activator -o jsonpath={.spec.clusterIP})'
# Scale to zero: within 240 s.
in_tb 'for i in $(seq 240); do [ "$(kubectl get deploy hello -o jsonpath={.spec.replicas})" = 0 ] && [ -z "$(kubectl get pods -l app=hello -o name)" ] && exit 0; sleep 1; done; exit 1' ||
  fail "hello did not scale to zero within 240 s"
# The activator's Service routes (kube-proxy has its rules): a request
# for a host Ebb does not know gets an answer, not a refused connection.
in_tb "for i in \$(seq 60); do [ \"\$(curl -s -o /dev/null --max-time 2 -w '%{http_code}' -H 'Host: unknown.invalid' http://$act/)\" != 000 ] && exit 0; sleep 1; done; exit 1" ||
  fail "the activator's Service did not answer within 60 s"
# Scale from zero through the activator's Service.
out=$(in_tb "curl -sS -o /dev/null -w '%{http_code} %{time_starttransfer}' --max-time 60 -H 'Host: hello.default.svc' http://$act/") ||
  fail "the wake request failed: $out"
[[ $out == 200\ * ]] || fail "the wake request answered $out"
echo "test-node: cold start from zero (request to first byte): ${out#* } s"
# 50 clients for 20 s: only 200s, and more than one pod.
h=$(in_tb "$HEY -z 20s -c 50 -host hello.default.svc http://$act/") || fail "hey failed"
codes=$(grep -A5 'Status code distribution' <<<"$h" | grep -oE '\[[0-9]+\][[:space:]]+[0-9]+' | tr -s '\t ' ' ')
echo "test-node: hey 50 clients 20 s: $codes"
[[ -n $codes && $(grep -vc '^\[200\]' <<<"$codes") == 0 ]] || fail "hey saw other codes than 200: $codes"
n=$(in_tb 'kubectl get deploy hello -o jsonpath={.status.readyReplicas}')
((n > 1)) || fail "hello did not scale out under 50 clients (ready: $n)"
echo "test-node: hello scaled to $n ready pods"
tb down >/dev/null
echo "test-node: PASS in $((SECONDS - start)) s"

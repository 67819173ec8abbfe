#!/usr/bin/env bash
# The autoscaler's steady state counted with a tool the neighbours' load
# does not change: user-space instructions (valgrind's callgrind) of
# BenchmarkSecondsAtScale (pkg/autoscaler: SCALE_REVISIONS revisions with
# traffic, a quarter of the HPA class on cpu, each closing its seconds on
# one goroutine), per revision-second. Each commit runs twice, with 5 and
# with 5+SECONDS_MEASURED measured seconds after the same warm-up; the difference
# of the totals over SECONDS_MEASURED × SCALE_REVISIONS is the cost of one revision's
# second, set-up and warm-up left out. GOGC=off (the heap of a few hundred
# revisions is small) so that the collector's timing does not move the
# count; GODEBUG=asyncpreemptoff=1 (callgrind trips over Go's preemption
# signals). Only the instructions run inside (*revision).second, the close
# of one revision's second, and what it calls are counted
# (--toggle-collect): the Go runtime's scheduler, timers and monitor run
# more the longer the wall time, so the count of the whole process moved
# by up to 20% between runs of one build on a machine loaded by other work.
#
#   bench/autoscaler/count.sh          (or: make bench-autoscaler-count)
#
# Knobs (environment): SCALE_REVISIONS (400), SECONDS_MEASURED (40), BASELINE_REF (a
# commit, counted with this tree's benchmark file, beside this tree).
set -euo pipefail
cd "$(dirname "$0")/../.."
command -v valgrind >/dev/null || { echo "count: valgrind is not installed (apt-get install -y valgrind)"; exit 1; }
N=${SCALE_REVISIONS:-400}
S=${SECONDS_MEASURED:-40}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# total BINARY X: the instructions of a run with X measured seconds.
total() {
  GOGC=off GODEBUG=asyncpreemptoff=1 valgrind --tool=callgrind --callgrind-out-file="$WORK/cg.out" \
    --toggle-collect='ebb.dev/ebb/pkg/autoscaler.(*revision).second' \
    "$1" -test.run XXX -test.bench SecondsAtScale -test.benchtime "$2"x -scale-revisions "$N" >/dev/null 2>&1
  awk '/^summary:/ {print $2}' "$WORK/cg.out"
}

# count NAME DIR: instructions per revision-second of the tree in DIR.
count() {
  (cd "$2" && go test -c -o "$WORK/$1.test" ./pkg/autoscaler/)
  local a b
  a=$(total "$WORK/$1.test" 5)
  b=$(total "$WORK/$1.test" $((5 + S)))
  echo "$1: $(( (b - a) / (N * S) )) instructions per revision-second ($N revisions, $S seconds)"
}

count "this tree" .
if [ -n "${BASELINE_REF:-}" ]; then
  mkdir -p "$WORK/base"
  git archive "$BASELINE_REF" | tar -x -C "$WORK/base"
  cp pkg/autoscaler/scale_bench_test.go "$WORK/base/pkg/autoscaler/"
  count "$BASELINE_REF" "$WORK/base"
fi

#!/usr/bin/env bash
# The cost of a hop per request, counted with tools the neighbours' load
# does not change: user-space instructions (valgrind's callgrind, which
# counts every instruction the process executes) and system calls and
# context switches (perf stat's tracepoints and software events), for
# the bare fasthttp proxy, the queue-proxy, the activator and the two in a
# chain, each under the same fixed number of requests of the same
# client. Throughput benchmarks on a shared machine move by 10 % from one
# second to the next; these counts move by well under 1 %.
#
#   bench/queueproxy/count.sh          (or: make bench-count)
#
# Knobs (environment): REQUESTS (20000), CONNS (50: hey -c), BASE_PORT
# (18300), BASELINE_REF (a commit: its queue-proxy and activator are
# counted too), CALLGRIND_KEEP (a directory: each target's callgrind
# profiles are kept there, NAME.PID.out, for callgrind_annotate). Needs valgrind for the instructions and perf for the
# system calls (apt-get install -y valgrind linux-perf); either missing
# is skipped with one line. Each target runs alone, its process started
# for its count and stopped after it; GODEBUG=asyncpreemptoff=1 under
# callgrind only (callgrind trips over Go's preemption signals).
set -euo pipefail
cd "$(dirname "$0")/../.."

REQUESTS=${REQUESTS:-20000}
CONNS=${CONNS:-50}
# hey sends n/c requests per connection, rounded down: the counts (and the
# warm-up, a quarter) are whole multiples of CONNS.
if [ $((REQUESTS % (4 * CONNS))) != 0 ]; then
  REQUESTS=$((REQUESTS / (4 * CONNS) * 4 * CONNS))
  [ "$REQUESTS" -gt 0 ] || { echo "count: REQUESTS must be at least 4 x CONNS ($((4 * CONNS)))" >&2; exit 1; }
  echo "count: REQUESTS rounded down to $REQUESTS, a multiple of 4 x CONNS"
fi
BASE=${BASE_PORT:-18300}
HAVE_VG=1; command -v callgrind_control >/dev/null || { HAVE_VG=0; echo "count: valgrind is not installed: no instruction counts (apt-get install -y valgrind)"; }
HAVE_PERF=1; perf stat -e raw_syscalls:sys_enter -- true >/dev/null 2>&1 || { HAVE_PERF=0; echo "count: perf with tracepoints is not available: no system call counts (apt-get install -y linux-perf; root)"; }

source bench/queueproxy/work.sh count # WORK, PIDS, cleanup on exit, HEY

echo "building into $WORK"
go build -o "$WORK/" ./cmd/queueproxy ./cmd/activator ./bench/queueproxy/app ./bench/queueproxy/baseline
if [ -n "${BASELINE_REF:-}" ]; then
  mkdir "$WORK/ref-src"
  git archive --format=tar "$BASELINE_REF" | tar -x -C "$WORK/ref-src"
  (cd "$WORK/ref-src" && go build -o "$WORK/ref/" ./cmd/queueproxy ./cmd/activator)
  echo "built the queue-proxy and the activator of BASELINE_REF=$BASELINE_REF ($(git rev-parse --short "$BASELINE_REF^{commit}"))"
fi

APP=$BASE; PROXY=$((BASE + 1)); ADMIN=$((BASE + 2)); QP=$((BASE + 3)); QPADMIN=$((BASE + 4))
"$WORK/app" -addr "127.0.0.1:$APP" >"$WORK/app.log" 2>&1 &
PIDS+=($!)
cat >"$WORK/revs.json" <<EOF
{"revisions":[{"namespace":"default","name":"warm","timeout":"300s","replicas":[{"address":"127.0.0.1:$APP","ready":true}]},
{"namespace":"default","name":"full","timeout":"300s","replicas":[{"address":"127.0.0.1:$QP","ready":true}]}]}
EOF

# launch NAME WRAP...: starts the target NAME (baseline, queue-proxy,
# activator, their @ref builds, or qp-for-chain on the chain's second
# port) under the command prefix WRAP; sets LAUNCHED to its PID.
launch() {
  local name=$1 bin; shift
  case $name in
  baseline) "$@" "$WORK/baseline" -listen "127.0.0.1:$PROXY" -upstream "127.0.0.1:$APP" >"$WORK/$name.log" 2>&1 & ;;
  queue-proxy*)
    bin="$WORK/queueproxy"; [ "$name" = queue-proxy@ref ] && bin="$WORK/ref/queueproxy"
    QUEUE_SERVING_PORT=$PROXY QUEUE_ADMIN_PORT=$ADMIN USER_PORT=$APP LOG_LEVEL=warn DRAIN_PERIOD_SECONDS=0 \
      "$@" "$bin" >"$WORK/$name.log" 2>&1 & ;;
  qp-for-chain)
    QUEUE_SERVING_PORT=$QP QUEUE_ADMIN_PORT=$QPADMIN USER_PORT=$APP LOG_LEVEL=warn DRAIN_PERIOD_SECONDS=0 \
      "$@" "$WORK/queueproxy" >"$WORK/$name.log" 2>&1 & ;;
  activator*)
    bin="$WORK/activator"; [ "$name" = activator@ref ] && bin="$WORK/ref/activator"
    "$@" "$bin" --revisions-file "$WORK/revs.json" --address "127.0.0.1:$PROXY" --admin-address "127.0.0.1:$ADMIN" \
      --log-level error --revisions-poll 1h --pod-name count >"$WORK/$name.log" 2>&1 & ;;
  esac
  LAUNCHED=$!
  PIDS+=("$LAUNCHED")
}

# ready PORT HOST: waits (up to 60 s: valgrind starts slowly) for a 200.
ready() {
  for _ in $(seq 600); do
    curl -fsS -o /dev/null -H "Host: $2" "http://127.0.0.1:$1/" 2>/dev/null && return 0
    sleep 0.1
  done
  echo "count: 127.0.0.1:$1 never answered" >&2; exit 1
}

load() { # host requests
  "$HEY" -n "$2" -c "$CONNS" -host "$1" "http://127.0.0.1:$PROXY/" >"$WORK/hey.txt"
  local ok; ok=$(awk '/\[200\]/ {print $2}' "$WORK/hey.txt")
  [ "${ok:-0}" = "$2" ] || { echo "count: $2 requests, ${ok:-0} answered 200" >&2; cat "$WORK/hey.txt" >&2; exit 1; }
}

stop() { for p in "$@"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done; }

# instructions NAME HOST [CHAINED]: user-space instructions per request of
# NAME (and of the queue-proxy behind it when CHAINED), by callgrind,
# over REQUESTS requests after a warm-up of a quarter as many.
instructions() {
  local name=$1 host=$2 chained=${3:-} pids=() total=0
  local vg=(env GODEBUG=asyncpreemptoff=1 valgrind --tool=callgrind --callgrind-out-file="$WORK/cg.%p")
  trap 'stop "${pids[@]}"' EXIT # a subshell ($(...)): the script's cleanup does not see its processes
  if [ -n "$chained" ]; then launch qp-for-chain "${vg[@]}"; pids+=("$LAUNCHED"); ready "$QP" x; fi
  launch "$name" "${vg[@]}"; pids+=("$LAUNCHED"); ready "$PROXY" "$host"
  load "$host" $((REQUESTS / 4))
  for p in "${pids[@]}"; do callgrind_control -z "$p" >/dev/null 2>&1; done
  load "$host" "$REQUESTS"
  for p in "${pids[@]}"; do
    callgrind_control -d "$p" >/dev/null 2>&1
    local out; out=$(ls -t "$WORK"/cg."$p".* | head -1)
    total=$((total + $(awk '/^summary:/ {print $2}' "$out")))
    [ -z "${CALLGRIND_KEEP:-}" ] || cp "$out" "$CALLGRIND_KEEP/$name${chained:++chain}.$p.out"
  done
  stop "${pids[@]}"
  echo $((total / REQUESTS))
}

# syscalls NAME HOST [CHAINED]: system calls and context switches per
# request, of NAME (and the queue-proxy behind it), by perf stat.
syscalls() {
  local name=$1 host=$2 chained=${3:-} pids=()
  trap 'stop "${pids[@]}"' EXIT
  if [ -n "$chained" ]; then launch qp-for-chain env; pids+=("$LAUNCHED"); ready "$QP" x; fi
  launch "$name" env; pids+=("$LAUNCHED"); ready "$PROXY" "$host"
  load "$host" $((REQUESTS / 4))
  local list; list=$(IFS=,; echo "${pids[*]}")
  perf stat -x, -e raw_syscalls:sys_enter,context-switches -p "$list" -o "$WORK/perf.txt" -- \
    "$HEY" -n "$REQUESTS" -c "$CONNS" -host "$host" "http://127.0.0.1:$PROXY/" >/dev/null
  stop "${pids[@]}"
  awk -F, -v n="$REQUESTS" '$3 ~ /sys_enter/ {s = $1} $3 ~ /context-switches/ {c = $1} END {printf "%.2f %.2f", s / n, c / n}' "$WORK/perf.txt"
}

TARGETS=("baseline x" "queue-proxy x" "activator warm.default" "activator+queue-proxy full.default")
[ -z "${BASELINE_REF:-}" ] || TARGETS+=("queue-proxy@ref x" "activator@ref warm.default")
echo "hey -n $REQUESTS -c $CONNS against each target alone (app: bench/queueproxy/app)"
printf "%-24s %14s %10s %14s %18s\n" target "instr/request" "/ bare" "syscalls/req" "ctx switches/req"
base_ir=
for t in "${TARGETS[@]}"; do
  set -- $t
  name=$1 host=$2 chained=; [ "$name" = activator+queue-proxy ] && { name=activator; chained=1; }
  ir=-; ratio=-; sc=-; cs=-
  if [ "$HAVE_VG" = 1 ]; then
    ir=$(instructions "$name" "$host" "$chained")
    [ -n "$base_ir" ] || base_ir=$ir
    ratio=$(awk -v a="$ir" -v b="$base_ir" 'BEGIN {printf "%.2f", a / b}')
  fi
  if [ "$HAVE_PERF" = 1 ]; then read -r sc cs <<<"$(syscalls "$name" "$host" "$chained")"; fi
  printf "%-24s %14s %10s %14s %18s\n" "$1" "$ir" "$ratio" "$sc" "$cs"
done
echo "(activator+queue-proxy: both processes' counts, per request through the chain)"

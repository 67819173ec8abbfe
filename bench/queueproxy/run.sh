#!/usr/bin/env bash
# Load test of the queue-proxy against a minimal fasthttp proxy (the
# baseline) and the app alone, in alternating rounds on this machine.
#
#   bench/queueproxy/run.sh            (or: make bench-queueproxy)
#
# Knobs (environment): ROUNDS (8), DURATION (5s: each target's load time
# per round and tool, whole seconds), SLICE (1s), CONNS (50), BASE_PORT
# (18100), BASELINE_REF (a commit: its queue-proxy runs in the same rounds,
# and the ratios of this tree's to it are printed). Throughput is measured
# in slices: in each, every target runs SLICE with wrk, then with hey, in
# an order that rotates from slice to slice, and the ratios are taken
# within each slice (bench/internal/paired: median, middle half, rounds).
# Needs wrk (hey comes with go.mod). Every process it starts is killed on
# exit; every run is bounded by DURATION and a timeout.
set -euo pipefail
cd "$(dirname "$0")/../.."

ROUNDS=${ROUNDS:-8}
DURATION=${DURATION:-5s}
SLICE=${SLICE:-1s}
SLICES=$(( ${DURATION%s} / ${SLICE%s} )); [ "$SLICES" -ge 1 ] || SLICES=1
CONNS=${CONNS:-50}
BASE=${BASE_PORT:-18100}
command -v wrk >/dev/null || { echo "bench: wrk is not installed (apt-get install -y wrk)" >&2; exit 1; }
source bench/queueproxy/work.sh bench # WORK, PIDS, cleanup on exit, HEY

echo "building into $WORK"
go build -o "$WORK/" ./cmd/queueproxy ./bench/queueproxy/app ./bench/queueproxy/baseline ./bench/queueproxy/summary
if [ -n "${BASELINE_REF:-}" ]; then
  mkdir "$WORK/ref-src"
  git archive --format=tar "$BASELINE_REF" | tar -x -C "$WORK/ref-src"
  (cd "$WORK/ref-src" && go build -o "$WORK/queueproxy-ref" ./cmd/queueproxy)
  echo "built the queue-proxy of BASELINE_REF=$BASELINE_REF ($(git rev-parse --short "$BASELINE_REF^{commit}"))"
fi

APP=$((BASE)); BL=$((BASE+1)); QP=$((BASE+2)); QPA=$((BASE+3))
SLOWAPP=$((BASE+4)); QP10=$((BASE+5)); QP10A=$((BASE+6))

start() { # name, command...
  local name=$1; shift
  "$@" >"$WORK/$name.log" 2>&1 &
  PIDS+=($!)
  eval "PID_$name=$!"
}
start app "$WORK/app" -addr "127.0.0.1:$APP"
start slowapp "$WORK/app" -addr "127.0.0.1:$SLOWAPP" -sleep 10ms
start baseline "$WORK/baseline" -listen "127.0.0.1:$BL" -upstream "127.0.0.1:$APP"
QUEUE_SERVING_PORT=$QP QUEUE_ADMIN_PORT=$QPA USER_PORT=$APP LOG_LEVEL=warn DRAIN_PERIOD_SECONDS=0 \
  start qp "$WORK/queueproxy"
QUEUE_SERVING_PORT=$QP10 QUEUE_ADMIN_PORT=$QP10A USER_PORT=$SLOWAPP CONTAINER_CONCURRENCY=10 LOG_LEVEL=warn DRAIN_PERIOD_SECONDS=0 \
  start qp10 "$WORK/queueproxy"
QPREF=$((BASE+7)); QPREFA=$((BASE+8))
if [ -n "${BASELINE_REF:-}" ]; then
  QUEUE_SERVING_PORT=$QPREF QUEUE_ADMIN_PORT=$QPREFA USER_PORT=$APP LOG_LEVEL=warn DRAIN_PERIOD_SECONDS=0 \
    start qpref "$WORK/queueproxy-ref"
fi

wait_ready() { # url
  for _ in $(seq 100); do curl -fsS -o /dev/null -H 'K-Network-Probe: queue' "$1" 2>/dev/null && return 0; sleep 0.1; done
  echo "bench: $1 never became ready" >&2; exit 1
}
wait_ready "http://127.0.0.1:$APP/"; wait_ready "http://127.0.0.1:$BL/"
wait_ready "http://127.0.0.1:$QP/"; wait_ready "http://127.0.0.1:$QP10/"
[ -z "${BASELINE_REF:-}" ] || wait_ready "http://127.0.0.1:$QPREF/"

TCK=$(getconf CLK_TCK)
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
rss_kib() { awk -v k="$2" '$1 == k":" {print $2}' "/proc/$1/status"; }
to_ms() { # wrk latency like 812.00us, 1.23ms, 1.01s
  awk -v v="$1" 'BEGIN { n = v + 0; if (v ~ /us$/) n /= 1000; else if (v ~ /ms$/) n = n; else if (v ~ /s$/) n *= 1000; printf "%.3f", n }'
}

QP_IDLE_RSS=$(rss_kib "$PID_qp" VmRSS)
RESULTS="$WORK/results.tsv" # tool target req/s p50 p99 cpu-seconds requests 5xx
SAMPLES="$WORK/samples.tsv" # tool target round slice req/s requests cpu-seconds (the sliced runs)
: >"$RESULTS"; : >"$SAMPLES"

# run_wrk and run_hey append one run to RESULTS, and to SAMPLES when ROUND
# and SLICE_ID are set (a sliced throughput run).
record() { # tool target rps p50 p99 cpu_seconds requests n5xx
  printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n" "$@" >>"$RESULTS"
  if [ -n "${SLICE_ID:-}" ]; then
    printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\n" "$1" "$2" "$ROUND" "$SLICE_ID" "$3" "$7" "$6" >>"$SAMPLES"
  fi
}
cpu_seconds() { # pid ticks-before
  [ -n "$1" ] || { echo 0; return; }
  awk -v t="$(( $(cpu_ticks "$1") - $2 ))" -v k="$TCK" 'BEGIN { printf "%.4f", t / k }'
}

run_wrk() { # target port pid [threads conns duration]
  local target=$1 port=$2 pid=${3:-} threads=${4:-2} conns=${5:-$CONNS} d=${6:-$DURATION}
  local c0=0; [ -n "$pid" ] && c0=$(cpu_ticks "$pid")
  local out; out=$(timeout 120 wrk -t"$threads" -c"$conns" -d"$d" --latency "http://127.0.0.1:$port/")
  local cpu; cpu=$(cpu_seconds "$pid" "$c0")
  local rps p50 p99 n
  n=$(echo "$out" | awk '/requests in/ {print $1}')
  rps=$(echo "$out" | awk '/Requests\/sec/ {printf "%.0f", $2}')
  p50=$(to_ms "$(echo "$out" | awk '$1 == "50%" {print $2}')")
  p99=$(to_ms "$(echo "$out" | awk '$1 == "99%" {print $2}')")
  record "wrk${WRK_TAG:-}" "$target" "$rps" "$p50" "$p99" "$cpu" "$n" -
}

run_hey() { # target port pid [extra hey args...]
  local target=$1 port=$2 pid=$3; shift 3
  local c0=0; [ -n "$pid" ] && c0=$(cpu_ticks "$pid")
  local out; out=$(timeout 120 "$HEY" "$@" "http://127.0.0.1:$port/")
  local cpu; cpu=$(cpu_seconds "$pid" "$c0")
  local n; n=$(echo "$out" | awk '/^[ \t]*\[[0-9]+\]/ {s += $2} END {print s + 0}')
  local rps p50 p99 n5xx
  rps=$(echo "$out" | awk '/Requests\/sec/ {printf "%.0f", $2}')
  p50=$(echo "$out" | awk '$1 ~ /^50%+$/ {printf "%.3f", $3 * 1000}')
  p99=$(echo "$out" | awk '$1 ~ /^99%+$/ {printf "%.3f", $3 * 1000}')
  n5xx=$(echo "$out" | awk '/^[ \t]*\[5[0-9][0-9]\]/ {s += $2} END {print s + 0}')
  record "hey${HEY_TAG:-}" "$target" "$rps" "$p50" "$p99" "$cpu" "$n" "$n5xx"
}

# The sliced throughput targets: name, port, pid.
TARGETS=("baseline $BL $PID_baseline" "queue-proxy $QP $PID_qp")
[ -z "${BASELINE_REF:-}" ] || TARGETS+=("queue-proxy@ref $QPREF $PID_qpref")
sliced() { # round tool: every target once per slice, the order rotating
  local r=$1 tool=$2 n=${#TARGETS[@]}
  for s in $(seq 0 $((SLICES - 1))); do
    for i in $(seq 0 $((n - 1))); do
      set -- ${TARGETS[$(( (i + r + s) % n ))]}
      if [ "$tool" = wrk ]; then
        ROUND=$r SLICE_ID=$s run_wrk "$1" "$2" "$3" 2 "$CONNS" "$SLICE"
      else
        ROUND=$r SLICE_ID=$s HEY_TAG="" run_hey "$1" "$2" "$3" -z "$SLICE" -c "$CONNS"
      fi
    done
  done
}

for r in $(seq "$ROUNDS"); do
  echo "round $r/$ROUNDS: wrk -t2 -c$CONNS, then hey -c $CONNS: $SLICES slices of $SLICE each target (order rotating), the app alone once"
  run_wrk direct "$APP" "" 2 "$CONNS" "$SLICE"
  sliced "$r" wrk
  HEY_TAG="" run_hey direct "$APP" "" -z "$SLICE" -c "$CONNS"
  sliced "$r" hey
  echo "round $r/$ROUNDS: latency, one client (wrk -t1 -c1, hey -n 3000 -c 1) and 1000 req/s (hey -q 100 -c 10)"
  for t in "direct $APP" "baseline $BL $PID_baseline" "queue-proxy $QP $PID_qp"; do
    set -- $t
    WRK_TAG="-c1" run_wrk "$1" "$2" "${3:-}" 1 1
    HEY_TAG="-c1" run_hey "$1" "$2" "${3:-}" -n 3000 -c 1
    HEY_TAG="-1000rps" run_hey "$1" "$2" "${3:-}" -z "$DURATION" -c 10 -q 100
  done
  echo "round $r/$ROUNDS: containerConcurrency 10, app sleeping 10ms (ideal 1000 req/s)"
  HEY_TAG="-cc10" run_hey direct-c10 "$SLOWAPP" "" -z "$DURATION" -c 10
  HEY_TAG="-cc10" run_hey queue-proxy-cc10 "$QP10" "$PID_qp10" -z "$DURATION" -c "$CONNS"
done
QP_PEAK_RSS=$(rss_kib "$PID_qp" VmHWM)

echo
echo "means over the runs (sliced targets: over all slices), same run:"
printf "%-14s %-17s %10s %9s %9s %13s %6s\n" tool target "req/s" "p50 ms" "p99 ms" "cpu s/100k" 5xx
awk -F'\t' '
  { k = $1 "\t" $2; if (!(k in n)) order[++m] = k; n[k]++; rps[k] += $3; p50[k] += $4; p99[k] += $5; cpu[k] += $6; req[k] += $7
    if ($8 != "-") e[k] += $8; else e[k] = "-" }
  END { for (i = 1; i <= m; i++) { k = order[i]; split(k, f, "\t")
    c = (cpu[k] > 0 && req[k] > 0) ? sprintf("%.2f", cpu[k] / req[k] * 1e5) : "-"
    printf "%-14s %-17s %10.0f %9.3f %9.3f %13s %6s\n", f[1], f[2], rps[k] / n[k], p50[k] / n[k], p99[k] / n[k], c, e[k] } }' "$RESULTS" |
  sort -s -k1,1

echo
echo "ratios (same run; throughput: median of the slices' ratios, the middle half of them, each round's median; CPU per request: over all slices, each round's):"
"$WORK/summary" <"$SAMPLES"
awk -F'\t' '
  { k = $1 "|" $2; p50[k] += $4; p99[k] += $5; rps[k] += $3; if ($8 != "-") e[k] += $8; n[k]++ }
  END {
    split("wrk-c1 hey-c1", ts, " ")
    for (i in ts) { t = ts[i]; d = t "|direct"
      for (j = 1; j <= 2; j++) { p = j == 1 ? "baseline" : "queue-proxy"; q = t "|" p
        if (n[d] && n[q]) printf "  added p50 latency, one client (%s), %s: %.3f ms\n", t, p, (p50[q] / n[q] - p50[d] / n[d]) } }
    d = "hey-1000rps|direct"
    for (j = 1; j <= 2; j++) { p = j == 1 ? "baseline" : "queue-proxy"; q = "hey-1000rps|" p
      if (n[d] && n[q]) printf "  added latency at 1000 req/s, %s: p50 %.3f ms, p99 %.3f ms\n", p, (p50[q] / n[q] - p50[d] / n[d]), (p99[q] / n[q] - p99[d] / n[d]) }
    c = "hey-cc10|queue-proxy-cc10"; d = "hey-cc10|direct-c10"
    if (n[c] && n[d]) printf "  the app alone with 10 clients: %.0f req/s (its own ceiling; timer slack)\n", rps[d] / n[d]
    if (n[c]) printf "  containerConcurrency 10 at 10 ms: %.0f req/s (ideal 1000, ratio %.2f), 5xx total %d\n", rps[c] / n[c], rps[c] / n[c] / 1000, e[c]
  }' "$RESULTS"
echo "  queue-proxy RSS: idle $((QP_IDLE_RSS / 1024)) MiB, peak $((QP_PEAK_RSS / 1024)) MiB"

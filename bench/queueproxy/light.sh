#!/usr/bin/env bash
# Light-load cost of the queue-proxy: the CPU it takes per request at a
# steady 20 requests/s from one keep-alive client, and at idle, beside
# the bare fasthttp proxy (bench/queueproxy/baseline) in the same run,
# with busy polling off (BUSY_POLL_MICROSECONDS=0) and on (100, the
# default). The sidecar's CPU is billed to the user's pod.
#
#   bench/queueproxy/light.sh        (or: make bench-queueproxy-light)
#
# Knobs: SECONDS_LOAD (15), SECONDS_IDLE (10), RATE (20), BASE_PORT
# (18200). CPU is the sum of every thread's run time (/proc/PID/task/*/
# schedstat, nanoseconds). The targets run one after another; every
# process it starts is killed on exit.
set -euo pipefail
cd "$(dirname "$0")/../.."
LOAD=${SECONDS_LOAD:-15}; IDLE=${SECONDS_IDLE:-10}; RATE=${RATE:-20}; BASE=${BASE_PORT:-18200}
source bench/queueproxy/work.sh light # WORK, PIDS, cleanup on exit, HEY
go build -o "$WORK/" ./cmd/queueproxy ./bench/queueproxy/app ./bench/queueproxy/baseline
APP=$BASE; BL=$((BASE+1)); QP0=$((BASE+2)); QP0A=$((BASE+3)); QP1=$((BASE+4)); QP1A=$((BASE+5))
"$WORK/app" -addr "127.0.0.1:$APP" >"$WORK/app.log" 2>&1 & PIDS+=($!)
"$WORK/baseline" -listen "127.0.0.1:$BL" -upstream "127.0.0.1:$APP" >"$WORK/bl.log" 2>&1 & PIDS+=($!); PID_bl=$!
QUEUE_SERVING_PORT=$QP0 QUEUE_ADMIN_PORT=$QP0A USER_PORT=$APP LOG_LEVEL=warn DRAIN_PERIOD_SECONDS=0 BUSY_POLL_MICROSECONDS=0 \
  "$WORK/queueproxy" >"$WORK/qp0.log" 2>&1 & PIDS+=($!); PID_qp0=$!
QUEUE_SERVING_PORT=$QP1 QUEUE_ADMIN_PORT=$QP1A USER_PORT=$APP LOG_LEVEL=warn DRAIN_PERIOD_SECONDS=0 BUSY_POLL_MICROSECONDS=100 \
  "$WORK/queueproxy" >"$WORK/qp1.log" 2>&1 & PIDS+=($!); PID_qp1=$!
for port in $APP $BL $QP0 $QP1; do
  for _ in $(seq 100); do curl -fsS -o /dev/null -H 'K-Network-Probe: queue' "http://127.0.0.1:$port/" 2>/dev/null && break; sleep 0.1; done
done
cpu_ns() { cat /proc/"$1"/task/*/schedstat | awk '{s += $1} END {printf "%d", s}'; }
printf "%-28s %12s %14s %14s\n" target requests "cpu/request" "idle cpu/s"
for t in "baseline $PID_bl $BL" "queue-proxy(poll=0) $PID_qp0 $QP0" "queue-proxy(poll=100us) $PID_qp1 $QP1"; do
  set -- $t
  name=$1; pid=$2; port=$3
  a=$(cpu_ns "$pid"); sleep "$IDLE"; b=$(cpu_ns "$pid")
  idle_us=$(( (b - a) / 1000 / IDLE ))
  a=$(cpu_ns "$pid")
  "$HEY" -z "${LOAD}s" -c 1 -q "$RATE" "http://127.0.0.1:$port/" >"$WORK/hey-$name.txt" 2>&1
  b=$(cpu_ns "$pid")
  n=$(awk '/\[200\]/ {print $2}' "$WORK/hey-$name.txt")
  printf "%-28s %12s %11d us %11d us\n" "$name" "${n:-0}" $(( (b - a) / 1000 / ${n:-1} )) "$idle_us"
done

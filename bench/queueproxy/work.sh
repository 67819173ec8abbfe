# Sourced by the scripts of bench/queueproxy: a work directory and the
# processes started in it (their PIDs in PIDS), all ended and removed on
# exit; hey built by Go's tooling (a tool of go.mod) into HEY.
# $1: the script's name, for its messages.
HEY=$(go tool -n hey) || { echo "$1: building hey with 'go tool -n hey' failed" >&2; exit 1; }
WORK=$(mktemp -d)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

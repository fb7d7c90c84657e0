#!/usr/bin/env bash
# Stop the Prometheus started by scripts/prometheus-start.sh: SIGTERM, and SIGKILL
# after PROMETHEUS_STOP_TIMEOUT seconds (default: 15). Its data dir goes with it.
#
# Environment (all optional):
#   STACK_DIR             (default: <repo>/.stack)
#   PROMETHEUS_STATE_DIR  where prometheus-start.sh kept prometheus.env (default: $STACK_DIR/prometheus)
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$SCRIPT_DIR/.." && pwd)"

log() { printf 'prometheus-stop: %s\n' "$*"; }
die() { printf 'prometheus-stop: ERROR: %s\n' "$*" >&2; exit 1; }

STACK_DIR="${STACK_DIR:-$REPO_ROOT/.stack}"
PROMETHEUS_STATE_DIR="${PROMETHEUS_STATE_DIR:-$STACK_DIR/prometheus}"
PROMETHEUS_STOP_TIMEOUT="${PROMETHEUS_STOP_TIMEOUT:-15}"
[[ "$PROMETHEUS_STOP_TIMEOUT" =~ ^[0-9]+$ ]] || die "PROMETHEUS_STOP_TIMEOUT must be whole seconds; got \"$PROMETHEUS_STOP_TIMEOUT\""
STATE_FILE="$PROMETHEUS_STATE_DIR/prometheus.env"
if [[ ! -f "$STATE_FILE" ]]; then
  log "no Prometheus state in $PROMETHEUS_STATE_DIR; nothing to stop"
  exit 0
fi

# shellcheck source=scripts/process-lib.sh
source "$SCRIPT_DIR/process-lib.sh"

state_get() {
  # shellcheck disable=SC1090
  (source "$STATE_FILE" >/dev/null 2>&1; printf '%s' "${!1-}")
}
PID="$(state_get PROMETHEUS_PID)"
DATA_DIR="$(state_get PROMETHEUS_DATA_DIR)"

# Every signal is sent only after this: alive, and a prometheus serving exactly our data dir.
is_ours() {
  local args
  [[ "$PID" =~ ^[0-9]+$ && -n "$DATA_DIR" ]] && alive "$PID" || return 1
  args="$(tr '\0' '\n' <"/proc/$PID/cmdline" 2>/dev/null)" || return 1
  grep -qxF -- "--storage.tsdb.path=$DATA_DIR" <<<"$args"
}

if is_ours; then
  log "stopping Prometheus (pid $PID)"
  kill -TERM "$PID" 2>/dev/null || true
  deadline=$((SECONDS + PROMETHEUS_STOP_TIMEOUT))
  while alive "$PID" && (( SECONDS < deadline )); do sleep 0.1; done
  if is_ours; then
    log "still running after ${PROMETHEUS_STOP_TIMEOUT}s; sending SIGKILL"
    kill -KILL "$PID" 2>/dev/null || true
    for _ in $(seq 1 50); do alive "$PID" || break; sleep 0.1; done
  fi
  alive "$PID" && die "Prometheus (pid $PID) is still alive after SIGKILL"
else
  log "Prometheus (pid ${PID:-?}) is not running"
fi
[[ -n "$DATA_DIR" && -d "$DATA_DIR" ]] && rm -rf -- "$DATA_DIR"
rm -f -- "$STATE_FILE" "$PROMETHEUS_STATE_DIR/prometheus.pid"
log "stopped"

#!/usr/bin/env bash
# Stop the ZooKeeper server started by scripts/zookeeper-start.sh: SIGTERM, then
# SIGKILL after ZOOKEEPER_STOP_TIMEOUT seconds (default 15). Its data is kept
# unless ZOOKEEPER_WIPE=1.
#
# Environment (all optional): ZOOKEEPER_STATE_DIR (default: <repo>/.zookeeper),
# ZOOKEEPER_STOP_TIMEOUT, ZOOKEEPER_WIPE.
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$SCRIPT_DIR/.." && pwd)"
STATE_DIR="${ZOOKEEPER_STATE_DIR:-$REPO_ROOT/.zookeeper}"
STATE_FILE="$STATE_DIR/server.env"
ZOOKEEPER_STOP_TIMEOUT="${ZOOKEEPER_STOP_TIMEOUT:-15}"

log() { printf 'zookeeper-stop: %s\n' "$*"; }
die() { printf 'zookeeper-stop: ERROR: %s\n' "$*" >&2; exit 1; }
[[ "$ZOOKEEPER_STOP_TIMEOUT" =~ ^[0-9]+$ ]] || die "ZOOKEEPER_STOP_TIMEOUT must be whole seconds; got \"$ZOOKEEPER_STOP_TIMEOUT\""

# shellcheck source=scripts/process-lib.sh
source "$SCRIPT_DIR/process-lib.sh"

if [[ ! -f "$STATE_FILE" ]]; then
  log "no server state ($STATE_FILE); nothing to stop"
  exit 0
fi
STATE_DIR="$(cd "$STATE_DIR" && pwd -P)"
pid="$(state_read "$STATE_FILE" ZOOKEEPER_PID)"
data_dir="$(state_read "$STATE_FILE" ZOOKEEPER_DATA_DIR)"
args="$(tr '\0' '\n' <"/proc/$pid/cmdline" 2>/dev/null || true)"
if [[ "$pid" =~ ^[0-9]+$ ]] && alive "$pid" && grep -qxF -- "$STATE_DIR/zoo.cfg" <<<"$args"; then
  log "stopping ZooKeeper (pid $pid)"
  kill -TERM "$pid" 2>/dev/null || true
  deadline=$((SECONDS + ZOOKEEPER_STOP_TIMEOUT))
  while alive "$pid" && (( SECONDS < deadline )); do sleep 0.1; done
  if alive "$pid"; then
    log "still running after ${ZOOKEEPER_STOP_TIMEOUT}s; sending SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do alive "$pid" || break; sleep 0.1; done
  fi
  alive "$pid" && die "pid $pid is still alive after SIGKILL"
  log "stopped"
else
  log "server (pid ${pid:-?}) is not running"
fi
rm -f -- "$STATE_FILE"
if [[ "${ZOOKEEPER_WIPE:-0}" == 1 && -n "$data_dir" && -d "$data_dir" ]]; then
  rm -rf -- "$data_dir"
  log "wiped data dir $data_dir"
fi

#!/usr/bin/env bash
# Stop the test broker started by scripts/kafka-start.sh and delete its
# data dir (topics, offsets and logs are throw-away).
#
# Environment (all optional):
#   KAFKA_STATE_DIR     where kafka-start.sh kept broker.env (default: <repo>/.kafka)
#   KAFKA_STOP_TIMEOUT  seconds to wait after SIGTERM before SIGKILL (default: 30)
#   KAFKA_KEEP_DATA=1   keep the data dir (and its logs/) for debugging
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$SCRIPT_DIR/.." && pwd)"
STATE_FILE="${KAFKA_STATE_DIR:-$REPO_ROOT/.kafka}/broker.env"
KAFKA_STOP_TIMEOUT="${KAFKA_STOP_TIMEOUT:-30}"

log() { printf 'kafka-stop: %s\n' "$*"; }

if [[ ! -f "$STATE_FILE" ]]; then
  log "no broker state ($STATE_FILE); nothing to stop"
  exit 0
fi

KAFKA_PID="" KAFKA_DATA_DIR=""
# shellcheck disable=SC1090
source "$STATE_FILE"

# shellcheck source=scripts/kafka-broker-lib.sh
source "$SCRIPT_DIR/kafka-broker-lib.sh"

if is_our_broker "$KAFKA_PID" "$KAFKA_DATA_DIR"; then
  log "stopping broker (pid $KAFKA_PID)"
  kill -TERM "$KAFKA_PID" 2>/dev/null || true
  deadline=$((SECONDS + KAFKA_STOP_TIMEOUT))
  while kill -0 "$KAFKA_PID" 2>/dev/null && (( SECONDS < deadline )); do
    sleep 0.2
  done
  if kill -0 "$KAFKA_PID" 2>/dev/null; then
    log "still running after ${KAFKA_STOP_TIMEOUT}s; sending SIGKILL"
    kill -KILL "$KAFKA_PID" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$KAFKA_PID" 2>/dev/null || break; sleep 0.1; done
  fi
  log "stopped"
else
  log "broker (pid ${KAFKA_PID:-?}) is not running"
fi

if [[ -n "$KAFKA_DATA_DIR" && -d "$KAFKA_DATA_DIR" ]]; then
  if [[ "${KAFKA_KEEP_DATA:-0}" == 1 ]]; then
    log "kept data dir $KAFKA_DATA_DIR"
  elif [[ -f "$KAFKA_DATA_DIR/.core-gateway-kafka" ]]; then
    rm -rf -- "$KAFKA_DATA_DIR"
    log "removed data dir $KAFKA_DATA_DIR"
  else
    log "not removing $KAFKA_DATA_DIR (no .core-gateway-kafka marker)"
  fi
fi
rm -f -- "$STATE_FILE"
# The default state dir is ours; a caller-provided KAFKA_STATE_DIR is left alone.
[[ -n "${KAFKA_STATE_DIR:-}" ]] || rmdir -- "$REPO_ROOT/.kafka" 2>/dev/null || true

#!/usr/bin/env bash
# Stop the test broker, or every node of the test cluster, started by
# scripts/kafka-start.sh and delete the data dirs (topics, offsets and logs are
# throw-away).
#
# Environment (all optional):
#   KAFKA_STATE_DIR     where kafka-start.sh kept broker.env (default: <repo>/.kafka)
#   KAFKA_STOP_TIMEOUT  seconds to wait after SIGTERM before SIGKILL (default: 30)
#   KAFKA_KEEP_DATA=1   keep the data dirs (and their logs/) for debugging
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$SCRIPT_DIR/.." && pwd)"
STATE_DIR="${KAFKA_STATE_DIR:-$REPO_ROOT/.kafka}"
STATE_FILE="$STATE_DIR/broker.env"
KAFKA_STOP_TIMEOUT="${KAFKA_STOP_TIMEOUT:-30}"

log() { printf 'kafka-stop: %s\n' "$*"; }

if [[ ! -f "$STATE_FILE" ]]; then
  log "no broker state ($STATE_FILE); nothing to stop"
  exit 0
fi

# shellcheck source=scripts/kafka-broker-lib.sh
source "$SCRIPT_DIR/kafka-broker-lib.sh"
# shellcheck source=scripts/process-lib.sh
source "$SCRIPT_DIR/process-lib.sh"

NODES="$(state_value "$STATE_FILE" KAFKA_NODES)"
NODES="${NODES:-1}"
name_of() { if (( NODES == 1 )); then printf 'broker'; else printf 'node %s' "$1"; fi; }

PIDS=() DIRS=() stopping=()
for ((i = 0; i < NODES; i++)); do
  file="$(node_state_file "$STATE_DIR" "$i")"
  PIDS[i]="$(state_value "$file" KAFKA_PID 2>/dev/null || true)"
  DIRS[i]="$(state_value "$file" KAFKA_DATA_DIR 2>/dev/null || true)"
  # Every node gets its SIGTERM before any is waited for: one by one, the last
  # nodes would wait on controlled shutdowns that need a quorum already gone.
  if is_our_broker "${PIDS[i]}" "${DIRS[i]}"; then
    log "stopping $(name_of "$i") (pid ${PIDS[i]})"
    kill -TERM "${PIDS[i]}" 2>/dev/null || true
    stopping+=("$i")
  else
    log "$(name_of "$i") (pid ${PIDS[i]:-?}) is not running"
  fi
done

if (( ${#stopping[@]} > 0 )); then
  deadline=$((SECONDS + KAFKA_STOP_TIMEOUT))
  for i in "${stopping[@]}"; do
    while alive "${PIDS[i]}" && (( SECONDS < deadline )); do
      sleep 0.2
    done
    if alive "${PIDS[i]}"; then
      log "$(name_of "$i") still running after ${KAFKA_STOP_TIMEOUT}s; sending SIGKILL"
      kill -KILL "${PIDS[i]}" 2>/dev/null || true
      for _ in $(seq 1 50); do alive "${PIDS[i]}" || break; sleep 0.1; done
    fi
  done
  log "stopped"
fi

for ((i = 0; i < NODES; i++)); do
  dir="${DIRS[i]}"
  if [[ -n "$dir" && -d "$dir" ]]; then
    if [[ "${KAFKA_KEEP_DATA:-0}" == 1 ]]; then
      log "kept data dir $dir"
    elif [[ -f "$dir/.core-gateway-kafka" ]]; then
      rm -rf -- "$dir"
      log "removed data dir $dir"
    else
      log "not removing $dir (no .core-gateway-kafka marker)"
    fi
  fi
  rm -f -- "$(node_state_file "$STATE_DIR" "$i")"
done
# The default state dir is ours; a caller-provided KAFKA_STATE_DIR is left alone.
[[ -n "${KAFKA_STATE_DIR:-}" ]] || rmdir -- "$REPO_ROOT/.kafka" 2>/dev/null || true

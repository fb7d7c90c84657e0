#!/usr/bin/env bash
# Stop the stack started by scripts/stack-start.sh: HAProxy first, then both
# gateways (no new commands), then the consumer, each with SIGTERM and, after STACK_STOP_TIMEOUT,
# SIGKILL; then the broker (scripts/kafka-stop.sh) and the ClickHouse server
# (scripts/clickhouse-stop.sh).
#
# What is kept: ClickHouse's data, unless STACK_WIPE=1. Kafka's data dir is per run,
# and kafka-stop.sh deletes it with its topics and consumer offsets (unless
# KAFKA_KEEP_DATA=1); the broker's log is copied to $STACK_DIR/logs/kafka.log first.
# The secrets in STACK_DIR stay, so tokens and cursors outlive a restart.
#
# Environment (all optional):
#   STACK_DIR           the stack's directory (default: <repo>/.stack)
#   STACK_STOP_TIMEOUT  seconds to wait after SIGTERM before SIGKILL (default: 15)
#   STACK_WIPE=1        also delete ClickHouse's data
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$SCRIPT_DIR/.." && pwd)"
MAIN_JS="$REPO_ROOT/dist/src/main.js"

log() { printf 'stack-stop: %s\n' "$*"; }
die() { printf 'stack-stop: ERROR: %s\n' "$*" >&2; exit 1; }

STACK_DIR="${STACK_DIR:-$REPO_ROOT/.stack}"
STACK_STOP_TIMEOUT="${STACK_STOP_TIMEOUT:-15}"
STACK_WIPE="${STACK_WIPE:-0}"
[[ "$STACK_STOP_TIMEOUT" =~ ^[0-9]+$ ]] || die "STACK_STOP_TIMEOUT must be whole seconds; got \"$STACK_STOP_TIMEOUT\""
[[ "$STACK_WIPE" =~ ^[01]$ ]] || die "STACK_WIPE must be 0 or 1; got \"$STACK_WIPE\""
if [[ ! -d "$STACK_DIR" ]]; then
  log "no stack in $STACK_DIR; nothing to stop"
  exit 0
fi
STACK_DIR="$(cd "$STACK_DIR" && pwd -P)"
LOG_DIR="$STACK_DIR/logs"
RUN_DIR="$STACK_DIR/run"

# shellcheck source=scripts/process-lib.sh
source "$SCRIPT_DIR/process-lib.sh"

# Every signal is sent only after this: alive, running dist/src/main.js, started by this stack as $2.
is_our_node() { is_stack_node "$1" "$STACK_DIR/$2" "$MAIN_JS"; }

node_pid() { cat "$RUN_DIR/$1.pid" 2>/dev/null || true; }

# SIGTERM to each named process that is ours, one shared wait, then SIGKILL to
# those still running.
stop_nodes() {
  local name pid deadline
  local -A pids=()
  for name in "$@"; do
    pid="$(node_pid "$name")"
    if is_our_node "$pid" "$name"; then
      log "stopping $name (pid $pid)"
      kill -TERM "$pid" 2>/dev/null || true
      pids[$name]="$pid"
    elif [[ -f "$RUN_DIR/$name.pid" ]]; then
      log "$name (pid ${pid:-?}) is not running"
      rm -f -- "$RUN_DIR/$name.pid"
    fi
  done
  deadline=$((SECONDS + STACK_STOP_TIMEOUT))
  for name in "${!pids[@]}"; do
    while alive "${pids[$name]}" && (( SECONDS < deadline )); do sleep 0.1; done
  done
  for name in "${!pids[@]}"; do
    pid="${pids[$name]}"
    if is_our_node "$pid" "$name"; then
      log "$name still running after ${STACK_STOP_TIMEOUT}s; sending SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
      for _ in $(seq 1 50); do alive "$pid" || break; sleep 0.1; done
    fi
    alive "$pid" && die "$name (pid $pid) is still alive after SIGKILL"
    rm -f -- "$RUN_DIR/$name.pid"
    log "$name stopped"
  done
}

# kafka-stop.sh deletes the data dir that holds the broker's log.
keep_kafka_log() {
  local link="$LOG_DIR/kafka.log" target
  [[ -L "$link" && "${KAFKA_KEEP_DATA:-0}" != 1 ]] || return 0
  target="$(readlink -- "$link")"
  if [[ -f "$target" ]]; then
    cp -- "$target" "$link.tmp" && mv -f -- "$link.tmp" "$link"
  else
    rm -f -- "$link"
  fi
}

# HAProxy, when it runs on this stack's config.
stop_haproxy() {
  local pid_file="$RUN_DIR/haproxy.pid" pid args
  pid="$(cat "$pid_file" 2>/dev/null || true)"
  [[ -n "$pid" ]] || return 0
  args="$(tr '\0' '\n' <"/proc/$pid/cmdline" 2>/dev/null || true)"
  if [[ "$pid" =~ ^[0-9]+$ ]] && alive "$pid" && grep -qxF -- "$STACK_DIR/haproxy.cfg" <<<"$args"; then
    log "stopping haproxy (pid $pid)"
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do alive "$pid" || break; sleep 0.1; done
    alive "$pid" && kill -KILL "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do alive "$pid" || break; sleep 0.1; done
    alive "$pid" && die "haproxy (pid $pid) is still alive after SIGKILL"
    log "haproxy stopped"
  fi
  rm -f -- "$pid_file"
}

stop_haproxy
stop_nodes gateway-1 gateway-2
stop_nodes consumer

if [[ -d "$STACK_DIR/kafka" ]]; then
  keep_kafka_log
  KAFKA_STATE_DIR="$STACK_DIR/kafka" bash "$SCRIPT_DIR/kafka-stop.sh"
fi
if [[ -d "$STACK_DIR/clickhouse" ]]; then
  CLICKHOUSE_STATE_DIR="$STACK_DIR/clickhouse" CLICKHOUSE_WIPE="$STACK_WIPE" bash "$SCRIPT_DIR/clickhouse-stop.sh"
fi
rm -f -- "$STACK_DIR/stack.env"
log "stopped (logs in $LOG_DIR)"

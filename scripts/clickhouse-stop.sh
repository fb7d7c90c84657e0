#!/usr/bin/env bash
# Stop the ClickHouse servers started by scripts/clickhouse-start.sh: the one in
# the state dir and every shard's under it (shard-2, shard-3, ...). Their data is
# kept for the next start unless CLICKHOUSE_WIPE=1.
#
# The stop is a SIGTERM to the loader, which closes the engine's stdin: the
# engine's serving query ends and clickhouse-local shuts down cleanly (a bare
# SIGTERM would end the engine at once, since it leaves that signal at its
# default action). What is still alive after CLICKHOUSE_STOP_TIMEOUT, and
# anything left in the loader's process group, is SIGKILLed.
#
# Environment (all optional):
#   CLICKHOUSE_STATE_DIR     where clickhouse-start.sh kept server.env (default: <repo>/.clickhouse)
#   CLICKHOUSE_DATA_DIR      data dir to wipe when there is no state file
#                            (default: $CLICKHOUSE_STATE_DIR/data)
#   CLICKHOUSE_STOP_TIMEOUT  seconds to wait after SIGTERM before SIGKILL (default: 30)
#   CLICKHOUSE_WIPE=1        delete the data dir after stopping (only one that
#                            clickhouse-start.sh created: it holds .core-gateway-clickhouse)
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$SCRIPT_DIR/.." && pwd)"
STATE_DIR="${CLICKHOUSE_STATE_DIR:-$REPO_ROOT/.clickhouse}"
CLICKHOUSE_STOP_TIMEOUT="${CLICKHOUSE_STOP_TIMEOUT:-30}"
CLICKHOUSE_WIPE="${CLICKHOUSE_WIPE:-0}"

log() { printf 'clickhouse-stop: %s\n' "$*"; }
die() { printf 'clickhouse-stop: ERROR: %s\n' "$*" >&2; exit 1; }

[[ "$CLICKHOUSE_STOP_TIMEOUT" =~ ^[0-9]+$ ]] || die "CLICKHOUSE_STOP_TIMEOUT must be whole seconds; got \"$CLICKHOUSE_STOP_TIMEOUT\""

# shellcheck source=scripts/process-lib.sh
source "$SCRIPT_DIR/process-lib.sh"


# Live (non-zombie) members of process group $1, read from /proc.
group_members() {
  local f stat state pgrp
  for f in /proc/[0-9]*/stat; do
    stat="$(cat "$f" 2>/dev/null)" || continue
    read -r state _ pgrp _ <<<"${stat##*) }"
    if [[ "$pgrp" == "$1" && "$state" != Z ]]; then
      f="${f#/proc/}"; printf '%s\n' "${f%/stat}"
    fi
  done
}
group_alive() { [[ -n "$(group_members "$1")" ]]; }

# Stops the server of one state dir: $1 the state dir, $2 the data dir to wipe when
# it has no state file.
stop_server() {
  local STATE_FILE="$1/server.env" DATA_DIR CLICKHOUSE_PID="" CLICKHOUSE_DATA_DIR_FROM_STATE="" pgid own_group deadline holder
  if [[ -f "$STATE_FILE" ]]; then
    CLICKHOUSE_PID="$(state_read "$STATE_FILE" CLICKHOUSE_PID)"
    CLICKHOUSE_DATA_DIR_FROM_STATE="$(state_read "$STATE_FILE" CLICKHOUSE_DATA_DIR)"
  fi
  DATA_DIR="${CLICKHOUSE_DATA_DIR_FROM_STATE:-$2}"
  # The start script records the resolved path; resolve an env-given one the same way.
  [[ -d "$DATA_DIR" ]] && DATA_DIR="$(cd "$DATA_DIR" && pwd -P)"

  if [[ ! -f "$STATE_FILE" ]]; then
    log "no server state ($STATE_FILE); nothing to stop"
  elif is_our_clickhouse "$CLICKHOUSE_PID" "$DATA_DIR"; then
    # The loader leads its own process group (it calls setsid); sweep the group
    # only when that holds, so a caller's group is never signalled.
    pgid="$(ps -o pgid= -p "$CLICKHOUSE_PID" 2>/dev/null | tr -d ' ' || true)"
    own_group=0
    [[ "$pgid" == "$CLICKHOUSE_PID" ]] && own_group=1

    log "stopping ClickHouse (pid $CLICKHOUSE_PID)"
    kill -TERM "$CLICKHOUSE_PID" 2>/dev/null || true
    deadline=$((SECONDS + CLICKHOUSE_STOP_TIMEOUT))
    while alive "$CLICKHOUSE_PID" && (( SECONDS < deadline )); do
      sleep 0.1
    done
    if alive "$CLICKHOUSE_PID"; then
      log "still running after ${CLICKHOUSE_STOP_TIMEOUT}s; sending SIGKILL"
      if (( own_group )); then kill -KILL -- "-$CLICKHOUSE_PID" 2>/dev/null || true; fi
      kill -KILL "$CLICKHOUSE_PID" 2>/dev/null || true
      for _ in $(seq 1 50); do alive "$CLICKHOUSE_PID" || break; sleep 0.1; done
    fi
    if (( own_group )) && group_alive "$CLICKHOUSE_PID"; then
      log "killing what was left in process group $CLICKHOUSE_PID"
      kill -KILL -- "-$CLICKHOUSE_PID" 2>/dev/null || true
      for _ in $(seq 1 50); do group_alive "$CLICKHOUSE_PID" || break; sleep 0.1; done
    fi
    if alive "$CLICKHOUSE_PID"; then
      die "pid $CLICKHOUSE_PID is still alive after SIGKILL (state kept in $STATE_FILE)"
    fi
    if [[ "$CLICKHOUSE_WIPE" == 1 ]]; then log "stopped"; else log "stopped (data kept in $DATA_DIR)"; fi
  else
    log "server (pid ${CLICKHOUSE_PID:-?}) is not running"
  fi
  rm -f -- "$STATE_FILE"

  if [[ "$CLICKHOUSE_WIPE" == 1 && -d "$DATA_DIR" ]]; then
    # A server started by hand on this dir under another state dir still holds it.
    holder="$(sed -n 's/^PID: *\([0-9][0-9]*\).*/\1/p' "$DATA_DIR/status" 2>/dev/null | head -n 1 || true)"
    if [[ -n "$holder" ]] && is_our_clickhouse "$holder" "$DATA_DIR"; then
      die "not wiping $DATA_DIR: pid $holder is serving it"
    elif [[ -f "$DATA_DIR/.core-gateway-clickhouse" ]]; then
      rm -rf -- "$DATA_DIR"
      log "wiped data dir $DATA_DIR"
    else
      die "not wiping $DATA_DIR: it has no .core-gateway-clickhouse marker (not created by clickhouse-start.sh)"
    fi
  fi
}

if [[ -d "$STATE_DIR" ]]; then
  STATE_DIR="$(cd "$STATE_DIR" && pwd -P)"
  # Shards above the first, last first: shard 1 is the one clients connect to.
  for dir in $(ls -d "$STATE_DIR"/shard-[0-9]* 2>/dev/null | sort -r); do
    shard="${dir##*/shard-}"
    default_data="$dir/data"
    [[ -z "${CLICKHOUSE_DATA_DIR:-}" ]] || default_data="${CLICKHOUSE_DATA_DIR%/}-shard-$shard"
    log() { printf 'clickhouse-stop (shard %s): %s\n' "$shard" "$*"; }
    stop_server "$dir" "$default_data"
    rmdir -- "$dir" 2>/dev/null || true
  done
  log() { printf 'clickhouse-stop: %s\n' "$*"; }
fi
stop_server "$STATE_DIR" "${CLICKHOUSE_DATA_DIR:-$STATE_DIR/data}"

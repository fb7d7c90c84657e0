#!/usr/bin/env bash
# SIGKILL one node of the broker or cluster started by scripts/kafka-start.sh: a
# crash, for failover tests. Its data dir and state file stay, so
# scripts/kafka-resume.sh can bring it back on its data.
#
#   npm run kafka:kill -- N     (N is the node's 0-based index; 0 for a single broker)
#
# Environment (optional):
#   KAFKA_STATE_DIR   where kafka-start.sh kept the state files (default: <repo>/.kafka)
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$SCRIPT_DIR/.." && pwd)"
STATE_DIR="${KAFKA_STATE_DIR:-$REPO_ROOT/.kafka}"

log() { printf 'kafka-kill: %s\n' "$*"; }
die() { printf 'kafka-kill: ERROR: %s\n' "$*" >&2; exit 1; }

# shellcheck source=scripts/kafka-broker-lib.sh
source "$SCRIPT_DIR/kafka-broker-lib.sh"
# shellcheck source=scripts/process-lib.sh
source "$SCRIPT_DIR/process-lib.sh"

(( $# == 1 )) && [[ "$1" =~ ^[0-9]$ ]] || die "usage: kafka-kill.sh N (the node's 0-based index)"
NODE="$1"
FILE="$(node_state_file "$STATE_DIR" "$NODE")"
[[ -f "$FILE" ]] || die "no state for node $NODE ($FILE); is the cluster started, with that many nodes?"
PID="$(state_value "$FILE" KAFKA_PID)"
DIR="$(state_value "$FILE" KAFKA_DATA_DIR)"

if ! is_our_broker "$PID" "$DIR"; then
  log "node $NODE (pid ${PID:-?}) is not running"
  exit 0
fi
kill -KILL "$PID"
# Gone means its sockets are closed too: the threads of a SIGKILLed JVM outlive
# its main thread for a moment (see alive()).
for _ in $(seq 1 300); do alive "$PID" || break; sleep 0.1; done
alive "$PID" && die "node $NODE (pid $PID) still there 30 s after SIGKILL"
log "killed node $NODE (pid $PID, 127.0.0.1:$(state_value "$FILE" KAFKA_PORT)); scripts/kafka-resume.sh $NODE brings it back"

#!/usr/bin/env bash
# Bring back a node of the broker or cluster started by scripts/kafka-start.sh that
# died or was killed (scripts/kafka-kill.sh), on its old data dir and ports, and
# wait until it is ready. Without N, every node that is down comes back.
#
#   npm run kafka:resume -- [N]     (N is the node's 0-based index)
#
# The environment of kafka-start.sh applies (KAFKA_STATE_DIR, KAFKA_START_TIMEOUT, ...).
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

if (( $# > 1 )) || [[ $# == 1 && ! "$1" =~ ^[0-9]$ ]]; then
  printf 'kafka-resume: ERROR: usage: kafka-resume.sh [N] (the node'"'"'s 0-based index)\n' >&2
  exit 1
fi
KAFKA_RESUME=1 KAFKA_RESUME_NODE="${1:-}" exec bash "$SCRIPT_DIR/kafka-start.sh"

#!/usr/bin/env bash
# Probe a Kafka cluster for hanging transactions: partitions whose last stable offset
# lags the high watermark (read_committed consumers wait there), the open transactions
# behind them, and coordinator transactions open past their timeout.
# Uses the broker's own kafka-clients (fetched once through test/infra/kafka/pom.xml).
#
#   npm run kafka:probe -- [--bootstrap-server HOST:PORT] [--topics A,B] [--older-than-ms N] [--json]
#
# --bootstrap-server defaults to $KAFKA_BROKERS (first entry), else 127.0.0.1:9092.
# --older-than-ms is the age past which an open transaction counts as hanging; default
# the brokers' transaction.max.timeout.ms. Exit: 0 clean, 1 blocked or stuck, 2 failed.
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$SCRIPT_DIR/.." && pwd)"
POM="$REPO_ROOT/test/infra/kafka/pom.xml"

log() { printf 'kafka-probe: %s\n' "$*" >&2; }
die() { printf 'kafka-probe: ERROR: %s\n' "$*" >&2; exit 2; }

# shellcheck source=scripts/kafka-broker-lib.sh
source "$SCRIPT_DIR/kafka-broker-lib.sh"
kafka_client_classpath "$POM"

args=("$@")
if [[ " ${args[*]-} " != *" --bootstrap-server "* ]]; then
  args=(--bootstrap-server "${KAFKA_BROKERS:-127.0.0.1:9092}" "${args[@]}")
  args[1]="${args[1]%%,*}"
fi
# The source launcher compiles the one file in memory: nothing to build or keep.
exec "$JAVA" -Xmx256m -cp "$LIBS_DIR/*" "$SCRIPT_DIR/kafka/HangingTransactionProbe.java" "${args[@]}"

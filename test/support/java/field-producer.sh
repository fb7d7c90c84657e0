#!/usr/bin/env bash
# Runs FieldProducer.java (a producer on the Kafka Java client, as other services run one)
# with the broker's own kafka-clients and codecs on the class path: the jars
# scripts/kafka-start.sh fetches through test/infra/kafka/pom.xml, fetched here too if a
# run has not yet. Arguments go to the producer; see its header for them and for the input.
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$SCRIPT_DIR/../../.." && pwd)"
POM="$REPO_ROOT/test/infra/kafka/pom.xml"

log() { printf 'field-producer: %s\n' "$*" >&2; }
die() { printf 'field-producer: ERROR: %s\n' "$*" >&2; exit 2; }

# shellcheck source=scripts/kafka-broker-lib.sh
source "$REPO_ROOT/scripts/kafka-broker-lib.sh"
kafka_client_classpath "$POM"

# The client logs through log4j2, whose default configuration writes to stdout: keep
# stdout for the producer's answers and the client's warnings on stderr.
cat >"${TMPDIR:-/tmp}/field-producer-log4j2.$$.properties" <<'LOG'
rootLogger.level = warn
rootLogger.appenderRef.err.ref = err
appender.err.type = Console
appender.err.name = err
appender.err.target = SYSTEM_ERR
appender.err.layout.type = PatternLayout
appender.err.layout.pattern = field-producer: %p %c{1} %m%n
LOG
trap 'rm -f "${TMPDIR:-/tmp}/field-producer-log4j2.$$.properties"' EXIT
# The source launcher compiles the one file in memory: nothing to build or keep.
"$JAVA" -Xmx256m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC \
  -Dlog4j2.configurationFile="${TMPDIR:-/tmp}/field-producer-log4j2.$$.properties" \
  -cp "$LIBS_DIR/*" "$SCRIPT_DIR/FieldProducer.java" "$@"

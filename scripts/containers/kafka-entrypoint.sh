#!/usr/bin/env bash
# Entry point of the local Kafka image (scripts/containers-setup.sh builds it from the Maven jars
# that scripts/kafka-start.sh uses). It takes the settings the official apache/kafka image takes,
# so the compose file and the suite configure both alike: every KAFKA_<NAME> variable becomes the
# broker property <name> (_ becomes ., __ becomes _, ___ becomes -), CLUSTER_ID names the cluster.
set -euo pipefail

CONFIG_DIR=/opt/kafka/config
LIBS='/opt/kafka/libs/*'
DATA_DIR="${KAFKA_LOG_DIRS:-/var/lib/kafka/data}"
mkdir -p "$CONFIG_DIR" "$DATA_DIR" 2>/dev/null || CONFIG_DIR="$(mktemp -d)"

# Variables the start-up itself reads, not broker properties.
not_a_property=' KAFKA_HEAP_OPTS KAFKA_OPTS KAFKA_JVM_PERFORMANCE_OPTS KAFKA_LOG_LEVEL KAFKA_VERSION '
{
  echo "log.dirs=$DATA_DIR"
  while IFS='=' read -r name value; do
    [[ "$name" == KAFKA_* && "$not_a_property" != *" $name "* && "$name" != KAFKA_LOG_DIRS ]] || continue
    key="${name#KAFKA_}"
    key="${key//___/-}"
    key="${key//__/@}"
    key="${key//_/.}"
    key="${key//@/_}"
    printf '%s=%s\n' "${key,,}" "$value"
  done < <(env)
} >"$CONFIG_DIR/server.properties"

cat >"$CONFIG_DIR/log4j2.properties" <<LOG
status = error
appender.out.type = Console
appender.out.name = OUT
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = ${KAFKA_LOG_LEVEL:-WARN}
rootLogger.appenderRef.out.ref = OUT
logger.raftserver.name = kafka.server.KafkaRaftServer
logger.raftserver.level = INFO
LOG

LOG_OPTS=(-Dlog4j2.configurationFile="$CONFIG_DIR/log4j2.properties")
if [[ ! -f "$DATA_DIR/meta.properties" ]]; then
  java -Xmx256m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC "${LOG_OPTS[@]}" -cp "$LIBS" kafka.tools.StorageTool \
    format --cluster-id="${CLUSTER_ID:-5L6g3nShT-eMCtK--X86sw}" --config "$CONFIG_DIR/server.properties" --ignore-formatted
fi
read -r -a HEAP <<<"${KAFKA_HEAP_OPTS:--Xms256m -Xmx512m}"
# exec: the JVM becomes pid 1, so the SIGTERM of `stop` reaches the broker itself.
exec java "${HEAP[@]}" -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -Djava.awt.headless=true "${LOG_OPTS[@]}" \
  ${KAFKA_OPTS:-} -cp "$LIBS" kafka.Kafka "$CONFIG_DIR/server.properties"

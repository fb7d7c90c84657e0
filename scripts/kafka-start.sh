#!/usr/bin/env bash
# Start a throw-away single-node Apache Kafka broker (KRaft, combined
# broker+controller) on the loopback interface, for tests.
#
# The broker jars come from Maven Central through test/infra/kafka/pom.xml
# and are cached per version; no Docker and no Kafka tarball are needed.
# Only Java 17+ and Maven are required.
#
# Environment (all optional):
#   KAFKA_VERSION          broker version (default: <kafka.version> in the pom)
#   KAFKA_CACHE_DIR        jar cache root (default: ~/.cache/core-gateway/kafka)
#   KAFKA_PORT             client listener port on 127.0.0.1 (default: 9092)
#   KAFKA_CONTROLLER_PORT  KRaft controller port on 127.0.0.1 (default: 9093)
#   KAFKA_STATE_DIR        where broker.env is kept (default: <repo>/.kafka)
#   KAFKA_RESUME=1         restart a broker that died/was killed, on its old
#                          data dir and ports (no re-format), instead of a new one
#   KAFKA_HEAP_OPTS        JVM heap flags (default: -Xms256m -Xmx512m)
#   KAFKA_START_TIMEOUT    seconds to wait for the broker (default: 90)
#   KAFKA_AUTO_CREATE_TOPICS  auto.create.topics.enable (default: false)
#   KAFKA_LOG_LEVEL        root log level of the broker log (default: WARN)
#   TMPDIR                 parent of the per-run data dir (default: /tmp)
#
# State (pid, version, data dir, ports) is kept in $KAFKA_STATE_DIR/broker.env;
# scripts/kafka-stop.sh uses it to stop the broker and delete the data dir.
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$SCRIPT_DIR/.." && pwd)"
POM="$REPO_ROOT/test/infra/kafka/pom.xml"
STATE_DIR="${KAFKA_STATE_DIR:-$REPO_ROOT/.kafka}"
STATE_FILE="$STATE_DIR/broker.env"

log() { printf 'kafka-start: %s\n' "$*"; }
die() { printf 'kafka-start: ERROR: %s\n' "$*" >&2; exit 1; }

pinned_version() {
  sed -n 's:.*<kafka\.version>\([^<]*\)</kafka\.version>.*:\1:p' "$POM" | head -n 1
}

KAFKA_VERSION="${KAFKA_VERSION:-$(pinned_version)}"
[[ -n "$KAFKA_VERSION" ]] || die "could not read <kafka.version> from $POM"
KAFKA_CACHE_DIR="${KAFKA_CACHE_DIR:-$HOME/.cache/core-gateway/kafka}"
KAFKA_PORT="${KAFKA_PORT:-9092}"
KAFKA_CONTROLLER_PORT="${KAFKA_CONTROLLER_PORT:-9093}"
KAFKA_HEAP_OPTS="${KAFKA_HEAP_OPTS:--Xms256m -Xmx512m}"
KAFKA_START_TIMEOUT="${KAFKA_START_TIMEOUT:-90}"
KAFKA_AUTO_CREATE_TOPICS="${KAFKA_AUTO_CREATE_TOPICS:-false}"
KAFKA_LOG_LEVEL="${KAFKA_LOG_LEVEL:-WARN}"
KAFKA_RESUME="${KAFKA_RESUME:-0}"

if [[ -n "${JAVA_HOME:-}" && -x "$JAVA_HOME/bin/java" ]]; then
  JAVA="$JAVA_HOME/bin/java"
else
  JAVA="$(command -v java || true)"
fi
[[ -n "$JAVA" ]] || die "java not found (Java 17+ is required)"

# shellcheck source=scripts/kafka-broker-lib.sh
source "$SCRIPT_DIR/kafka-broker-lib.sh"

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# Read one KEY from the state file without clobbering this script's variables.
state_get() {
  # shellcheck disable=SC1090
  (source "$STATE_FILE" >/dev/null 2>&1; printf '%s' "${!1-}")
}

# --- already running? / resume? ---------------------------------------------
RESUME_DIR=""
if [[ -f "$STATE_FILE" ]]; then
  old_pid="$(state_get KAFKA_PID)"
  old_dir="$(state_get KAFKA_DATA_DIR)"
  old_version="$(state_get KAFKA_VERSION)"
  if is_our_broker "$old_pid" "$old_dir"; then
    log "already running (Kafka $old_version, pid $old_pid, $(state_get KAFKA_BOOTSTRAP), data $old_dir)"
    if [[ "$KAFKA_RESUME" != 1 && ( "$old_version" != "$KAFKA_VERSION" || "$(state_get KAFKA_PORT)" != "$KAFKA_PORT" ) ]]; then
      log "note: requested Kafka $KAFKA_VERSION on port $KAFKA_PORT; run scripts/kafka-stop.sh first to switch"
    fi
    exit 0
  fi
  if [[ "$KAFKA_RESUME" == 1 && -n "$old_dir" && -f "$old_dir/.core-gateway-kafka" \
        && -f "$old_dir/server.properties" && -n "$old_version" ]]; then
    RESUME_DIR="$old_dir"
    KAFKA_VERSION="$old_version"
    KAFKA_PORT="$(state_get KAFKA_PORT)"
    KAFKA_CONTROLLER_PORT="$(state_get KAFKA_CONTROLLER_PORT)"
  else
    log "removing stale state (pid ${old_pid:-?} is gone)"
    if [[ -n "$old_dir" && -f "$old_dir/.core-gateway-kafka" ]]; then
      rm -rf -- "$old_dir"
    fi
    rm -f -- "$STATE_FILE"
  fi
fi
if [[ "$KAFKA_RESUME" == 1 && -z "$RESUME_DIR" ]]; then
  die "KAFKA_RESUME=1 but there is no stopped broker to resume (state file: $STATE_FILE)"
fi
LIBS_DIR="$KAFKA_CACHE_DIR/libs-$KAFKA_VERSION"

for p in "$KAFKA_PORT" "$KAFKA_CONTROLLER_PORT"; do
  if port_open "$p"; then
    die "port 127.0.0.1:$p is already in use (set KAFKA_PORT / KAFKA_CONTROLLER_PORT)"
  fi
done

# --- fetch jars (once per version) ----------------------------------------
ensure_kafka_libs "$POM" "$KAFKA_VERSION" "$LIBS_DIR"

# --- data dir + config ------------------------------------------------------
if [[ -n "$RESUME_DIR" ]]; then
  DATA_DIR="$RESUME_DIR"
else
  DATA_DIR="$(mktemp -d "${TMPDIR:-/tmp}/core-gateway-kafka.XXXXXX")"
  touch "$DATA_DIR/.core-gateway-kafka"   # marker: kafka-stop.sh only deletes dirs with it
fi
mkdir -p "$DATA_DIR/logs" "$DATA_DIR/data"
CONFIG="$DATA_DIR/server.properties"
LOG4J_CONFIG="$DATA_DIR/log4j2.properties"
SERVER_LOG="$DATA_DIR/logs/server.log"
STDOUT_LOG="$DATA_DIR/logs/kafka.out"
CLASSPATH_LIBS="$LIBS_DIR/*"

if [[ -z "$RESUME_DIR" ]]; then
  cat >"$CONFIG" <<EOF
# Generated by scripts/kafka-start.sh: single-node KRaft test broker.
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$KAFKA_CONTROLLER_PORT
listeners=PLAINTEXT://127.0.0.1:$KAFKA_PORT,CONTROLLER://127.0.0.1:$KAFKA_CONTROLLER_PORT
advertised.listeners=PLAINTEXT://127.0.0.1:$KAFKA_PORT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
controller.listener.names=CONTROLLER
log.dirs=$DATA_DIR/data
num.partitions=3
default.replication.factor=1
min.insync.replicas=1
auto.create.topics.enable=$KAFKA_AUTO_CREATE_TOPICS
delete.topic.enable=true
# Internal topics: 10 partitions instead of 50 so they are created faster.
offsets.topic.replication.factor=1
offsets.topic.num.partitions=10
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=10
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
# After a crash (SIGKILL), a restarted broker cannot register until the old
# registration's session expires (default 9 s); shorter for KAFKA_RESUME=1.
broker.session.timeout.ms=4000
broker.heartbeat.interval.ms=1000
num.network.threads=2
num.io.threads=4
num.recovery.threads.per.data.dir=1
EOF

  cat >"$LOG4J_CONFIG" <<EOF
# Generated by scripts/kafka-start.sh: everything goes to one file.
status = error
name = core-gateway-kafka
appender.file.type = File
appender.file.name = FILE
appender.file.fileName = $SERVER_LOG
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = $KAFKA_LOG_LEVEL
rootLogger.appenderRef.file.ref = FILE
# A few INFO lines so start-up / shut-down are visible in the log.
logger.raftserver.name = kafka.server.KafkaRaftServer
logger.raftserver.level = INFO
logger.kafka.name = kafka.Kafka\$
logger.kafka.level = INFO
EOF

  # --- format storage --------------------------------------------------------
  # Random cluster id: a Kafka Uuid is 16 bytes in URL-safe base64 without
  # padding. Like Kafka's own Uuid.randomUuid(), avoid ids starting with '-'
  # (they look like a command-line option).
  CLUSTER_ID="-"
  while [[ "$CLUSTER_ID" == -* ]]; do
    CLUSTER_ID="$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\n')"
  done
  # The format JVM is short-lived: C1 only and serial GC start it ~0.3 s faster.
  FORMAT_OPTS=(-Xmx256m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Dlog4j2.configurationFile="$LOG4J_CONFIG")
  if ! "$JAVA" "${FORMAT_OPTS[@]}" -cp "$CLASSPATH_LIBS" kafka.tools.StorageTool \
        format --cluster-id="$CLUSTER_ID" --config "$CONFIG" >"$DATA_DIR/logs/format.out" 2>&1; then
    cat "$DATA_DIR/logs/format.out" >&2 || true
    die "formatting storage failed (data dir kept: $DATA_DIR)"
  fi
fi

# --- launch --------------------------------------------------------------------
read -r -a HEAP_OPTS <<<"$KAFKA_HEAP_OPTS"
JVM_OPTS=(
  "${HEAP_OPTS[@]}"
  -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:+ExplicitGCInvokesConcurrent
  -Djava.awt.headless=true
  -Dlog4j2.configurationFile="$LOG4J_CONFIG"
  -Dkafka.logs.dir="$DATA_DIR/logs"
)
PID_FILE="$DATA_DIR/kafka.pid"
rm -f -- "$PID_FILE"
# Only log lines written from now on count for readiness (matters on resume,
# where the log still holds the previous run's lines).
LOG_OFFSET="$(stat -c %s "$SERVER_LOG" 2>/dev/null || echo 0)"
SETSID=()
command -v setsid >/dev/null && SETSID=(setsid)
# The inner bash records its own pid and then becomes the JVM via exec, so the
# recorded pid is the broker's whether or not setsid forks.
# shellcheck disable=SC2016  # $$ and $@ are for the inner bash
(cd "$DATA_DIR" && exec "${SETSID[@]}" bash -c 'echo $$ >"$0"; exec "$@"' "$PID_FILE" \
    "$JAVA" "${JVM_OPTS[@]}" -cp "$CLASSPATH_LIBS" kafka.Kafka "$CONFIG") \
    >>"$STDOUT_LOG" 2>&1 </dev/null &
disown "$!" 2>/dev/null || true

for _ in $(seq 1 50); do [[ -s "$PID_FILE" ]] && break; sleep 0.1; done
KAFKA_PID="$(cat "$PID_FILE" 2>/dev/null || true)"
[[ -n "$KAFKA_PID" ]] || die "broker process did not start (see $STDOUT_LOG)"

mkdir -p "$STATE_DIR"
# Shell-quoted KEY=value lines (sourced by kafka-stop.sh / a re-run of this script).
{
  printf 'KAFKA_PID=%q\n' "$KAFKA_PID"
  printf 'KAFKA_VERSION=%q\n' "$KAFKA_VERSION"
  printf 'KAFKA_DATA_DIR=%q\n' "$DATA_DIR"
  printf 'KAFKA_BOOTSTRAP=%q\n' "127.0.0.1:$KAFKA_PORT"
  printf 'KAFKA_PORT=%q\n' "$KAFKA_PORT"
  printf 'KAFKA_CONTROLLER_PORT=%q\n' "$KAFKA_CONTROLLER_PORT"
  printf 'KAFKA_LOG=%q\n' "$SERVER_LOG"
} >"$STATE_FILE"

show_logs_and_die() {
  {
    echo "---- last 50 lines of $SERVER_LOG ----"
    tail -n 50 "$SERVER_LOG" 2>/dev/null || true
    echo "---- last 50 lines of $STDOUT_LOG ----"
    tail -n 50 "$STDOUT_LOG" 2>/dev/null || true
  } >&2
  die "$1"
}

if [[ -n "$RESUME_DIR" ]]; then
  log "resuming Kafka $KAFKA_VERSION (pid $KAFKA_PID) on 127.0.0.1:$KAFKA_PORT with its data in $DATA_DIR"
else
  log "starting Kafka $KAFKA_VERSION (pid $KAFKA_PID) on 127.0.0.1:$KAFKA_PORT, data $DATA_DIR"
fi
deadline=$((SECONDS + KAFKA_START_TIMEOUT))
while :; do
  if ! kill -0 "$KAFKA_PID" 2>/dev/null; then
    rm -f -- "$STATE_FILE"
    show_logs_and_die "broker exited during start-up (data dir kept: $DATA_DIR)"
  fi
  if tail -c "+$((LOG_OFFSET + 1))" "$SERVER_LOG" 2>/dev/null | grep -q 'Kafka Server started' \
      && port_open "$KAFKA_PORT"; then
    break
  fi
  if (( SECONDS >= deadline )); then
    kill -KILL "$KAFKA_PID" 2>/dev/null || true
    rm -f -- "$STATE_FILE"
    show_logs_and_die "broker not ready after ${KAFKA_START_TIMEOUT}s (killed; data dir kept: $DATA_DIR)"
  fi
  sleep 0.2
done
log "ready: bootstrap 127.0.0.1:$KAFKA_PORT (log $SERVER_LOG)"

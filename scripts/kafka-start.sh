#!/usr/bin/env bash
# Start a throw-away Apache Kafka cluster (KRaft) on the loopback interface, for
# tests: one node by default, KAFKA_NODES nodes otherwise. Every node is a combined
# broker+controller, so every node is a voter of the controller quorum.
#
# The broker jars come from Maven Central through test/infra/kafka/pom.xml
# and are cached per version; no Docker and no Kafka tarball are needed.
# Only Java 17+ and Maven are required.
#
# Environment (all optional):
#   KAFKA_VERSION          broker version (default: <kafka.version> in the pom)
#   KAFKA_CACHE_DIR        jar cache root (default: ~/.cache/core-gateway/kafka)
#   KAFKA_NODES            nodes in the cluster, 1-9 (default: 1). With 3 or more,
#                          topics default to replication factor 3 and min ISR 2
#   KAFKA_PORT             client listener port of node 0 on 127.0.0.1; node i
#                          listens on KAFKA_PORT+i (default: 9092)
#   KAFKA_CONTROLLER_PORT  KRaft controller port of node 0; node i uses +i
#                          (default: 9093 for one node, KAFKA_PORT+KAFKA_NODES for more)
#   KAFKA_STATE_DIR        where the state files are kept (default: <repo>/.kafka)
#   KAFKA_RESUME=1         restart nodes that died/were killed, on their old data
#                          dirs and ports (no re-format), instead of a new cluster
#   KAFKA_RESUME_NODE      with KAFKA_RESUME=1, only this node (0-based); default:
#                          every node that is down (scripts/kafka-resume.sh sets it)
#   KAFKA_HEAP_OPTS        JVM heap flags of each node (default: -Xms256m -Xmx512m
#                          for one node, -Xms128m -Xmx384m for more)
#   KAFKA_START_TIMEOUT    seconds to wait for the nodes (default: 90)
#   KAFKA_AUTO_CREATE_TOPICS  auto.create.topics.enable (default: false)
#   KAFKA_LOG_LEVEL        root log level of the broker log (default: WARN)
#   TMPDIR                 parent of the per-run data dirs (default: /tmp)
#
# State (pid, version, data dir, ports, the cluster's bootstrap list) is kept per
# node: node 0 in $KAFKA_STATE_DIR/broker.env, node i in broker-i.env.
# scripts/kafka-stop.sh uses them to stop every node and delete the data dirs;
# scripts/kafka-kill.sh and scripts/kafka-resume.sh crash and restore one node.
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
KAFKA_NODES="${KAFKA_NODES:-1}"
[[ "$KAFKA_NODES" =~ ^[1-9]$ ]] || die "KAFKA_NODES must be a number from 1 to 9, got '$KAFKA_NODES'"
KAFKA_PORT="${KAFKA_PORT:-9092}"
# With more than one node the client ports run KAFKA_PORT..+N-1, so the single
# broker's controller default (9093) would collide with node 1.
if (( KAFKA_NODES == 1 )); then
  KAFKA_CONTROLLER_PORT="${KAFKA_CONTROLLER_PORT:-9093}"
  KAFKA_HEAP_OPTS="${KAFKA_HEAP_OPTS:--Xms256m -Xmx512m}"
else
  KAFKA_CONTROLLER_PORT="${KAFKA_CONTROLLER_PORT:-$((KAFKA_PORT + KAFKA_NODES))}"
  KAFKA_HEAP_OPTS="${KAFKA_HEAP_OPTS:--Xms128m -Xmx384m}"
fi
KAFKA_START_TIMEOUT="${KAFKA_START_TIMEOUT:-90}"
KAFKA_AUTO_CREATE_TOPICS="${KAFKA_AUTO_CREATE_TOPICS:-false}"
KAFKA_LOG_LEVEL="${KAFKA_LOG_LEVEL:-WARN}"
KAFKA_RESUME="${KAFKA_RESUME:-0}"
KAFKA_RESUME_NODE="${KAFKA_RESUME_NODE:-}"

if [[ -n "${JAVA_HOME:-}" && -x "$JAVA_HOME/bin/java" ]]; then
  JAVA="$JAVA_HOME/bin/java"
else
  JAVA="$(command -v java || true)"
fi
[[ -n "$JAVA" ]] || die "java not found (Java 17+ is required)"

# shellcheck source=scripts/kafka-broker-lib.sh
source "$SCRIPT_DIR/kafka-broker-lib.sh"
# KAFKA_SECURITY=sasl_ssl, KAFKA_ACLS=true and friends: see that file.
# shellcheck source=scripts/kafka-security-lib.sh
source "$SCRIPT_DIR/kafka-security-lib.sh"

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# Per node (indexed 0..N-1): data dir, client port, controller port, pid, and the
# size of its server log when it was launched.
NODE_DIRS=() NODE_PORTS=() NODE_CONTROLLER_PORTS=() NODE_PIDS=() NODE_LOG_OFFSETS=()
# The nodes this run launches.
TARGETS=()
RESUMING=0
BOOTSTRAP=""

node_get() { state_value "$(node_state_file "$STATE_DIR" "$1")" "$2"; }
node_running() { is_our_broker "$(node_get "$1" KAFKA_PID)" "$(node_get "$1" KAFKA_DATA_DIR)"; }
node_resumable() {
  local dir
  dir="$(node_get "$1" KAFKA_DATA_DIR)"
  [[ -n "$dir" && -f "$dir/.core-gateway-kafka" && -f "$dir/server.properties" && -n "$(node_get "$1" KAFKA_VERSION)" ]]
}

# --- already running? / resume? ---------------------------------------------
if [[ -f "$STATE_FILE" ]]; then
  old_nodes="$(state_value "$STATE_FILE" KAFKA_NODES)"
  old_nodes="${old_nodes:-1}"
  old_version="$(state_value "$STATE_FILE" KAFKA_VERSION)"
  up=() down=()
  for ((i = 0; i < old_nodes; i++)); do
    if node_running "$i"; then up+=("$i"); else down+=("$i"); fi
  done

  if [[ "$KAFKA_RESUME" == 1 ]]; then
    if [[ -n "$KAFKA_RESUME_NODE" ]]; then
      [[ "$KAFKA_RESUME_NODE" =~ ^[0-9]$ ]] && (( KAFKA_RESUME_NODE < old_nodes )) \
        || die "KAFKA_RESUME_NODE=$KAFKA_RESUME_NODE: the cluster has nodes 0 to $((old_nodes - 1))"
      wanted=("$KAFKA_RESUME_NODE")
    else
      wanted=("${down[@]}")
    fi
    for i in "${wanted[@]}"; do
      if node_running "$i"; then
        log "node $i already running (pid $(node_get "$i" KAFKA_PID), 127.0.0.1:$(node_get "$i" KAFKA_PORT))"
      elif node_resumable "$i"; then
        TARGETS+=("$i")
      else
        die "KAFKA_RESUME=1 but node $i has no data dir to resume (state file: $(node_state_file "$STATE_DIR" "$i"))"
      fi
    done
    if (( ${#TARGETS[@]} == 0 )); then
      if (( old_nodes == 1 )); then
        log "already running (Kafka $old_version, pid $(node_get 0 KAFKA_PID), $(node_get 0 KAFKA_BOOTSTRAP), data $(node_get 0 KAFKA_DATA_DIR))"
      else
        log "nothing to resume: all $old_nodes nodes are running (KAFKA_BROKERS=$(node_get 0 KAFKA_BOOTSTRAP))"
      fi
      exit 0
    fi
    RESUMING=1
    KAFKA_VERSION="$old_version"
    KAFKA_NODES="$old_nodes"
    BOOTSTRAP="$(node_get 0 KAFKA_BOOTSTRAP)"
    for i in "${TARGETS[@]}"; do
      NODE_DIRS[i]="$(node_get "$i" KAFKA_DATA_DIR)"
      NODE_PORTS[i]="$(node_get "$i" KAFKA_PORT)"
      NODE_CONTROLLER_PORTS[i]="$(node_get "$i" KAFKA_CONTROLLER_PORT)"
    done
  elif (( ${#up[@]} > 0 )); then
    if (( old_nodes == 1 )); then
      log "already running (Kafka $old_version, pid $(node_get 0 KAFKA_PID), $(node_get 0 KAFKA_BOOTSTRAP), data $(node_get 0 KAFKA_DATA_DIR))"
    else
      log "already running: Kafka $old_version, $old_nodes nodes, KAFKA_BROKERS=$(node_get 0 KAFKA_BOOTSTRAP)"
      for i in "${up[@]}"; do log "  node $i: pid $(node_get "$i" KAFKA_PID), data $(node_get "$i" KAFKA_DATA_DIR)"; done
      (( ${#down[@]} == 0 )) || log "  down: node(s) ${down[*]}; scripts/kafka-resume.sh N brings one back"
    fi
    if [[ "$old_version" != "$KAFKA_VERSION" || "$(node_get 0 KAFKA_PORT)" != "$KAFKA_PORT" || "$old_nodes" != "$KAFKA_NODES" ]]; then
      log "note: requested Kafka $KAFKA_VERSION, $KAFKA_NODES node(s) on port $KAFKA_PORT; run scripts/kafka-stop.sh first to switch"
    fi
    exit 0
  else
    log "removing stale state (pid $(node_get 0 KAFKA_PID) is gone)"
    for ((i = 0; i < old_nodes; i++)); do
      old_dir="$(node_get "$i" KAFKA_DATA_DIR)"
      if [[ -n "$old_dir" && -f "$old_dir/.core-gateway-kafka" ]]; then
        rm -rf -- "$old_dir"
      fi
      rm -f -- "$(node_state_file "$STATE_DIR" "$i")"
    done
  fi
fi
if [[ "$KAFKA_RESUME" == 1 && "$RESUMING" != 1 ]]; then
  die "KAFKA_RESUME=1 but there is no stopped broker to resume (state file: $STATE_FILE)"
fi

if [[ "$RESUMING" != 1 ]]; then
  for ((i = 0; i < KAFKA_NODES; i++)); do
    TARGETS+=("$i")
    NODE_PORTS[i]=$((KAFKA_PORT + i))
    NODE_CONTROLLER_PORTS[i]=$((KAFKA_CONTROLLER_PORT + i))
    BOOTSTRAP+="${BOOTSTRAP:+,}127.0.0.1:${NODE_PORTS[i]}"
  done
  if (( KAFKA_CONTROLLER_PORT < KAFKA_PORT + KAFKA_NODES && KAFKA_PORT < KAFKA_CONTROLLER_PORT + KAFKA_NODES )); then
    die "client ports $KAFKA_PORT+ and controller ports $KAFKA_CONTROLLER_PORT+ overlap for $KAFKA_NODES nodes (set KAFKA_CONTROLLER_PORT)"
  fi
fi
LIBS_DIR="$KAFKA_CACHE_DIR/libs-$KAFKA_VERSION"
CLASSPATH_LIBS="$LIBS_DIR/*"

for i in "${TARGETS[@]}"; do
  for p in "${NODE_PORTS[i]}" "${NODE_CONTROLLER_PORTS[i]}"; do
    if port_open "$p"; then
      die "port 127.0.0.1:$p is already in use (set KAFKA_PORT / KAFKA_CONTROLLER_PORT)"
    fi
  done
done

# --- fetch jars (once per version) ----------------------------------------
ensure_kafka_libs "$POM" "$KAFKA_VERSION" "$LIBS_DIR"

# --- data dirs + config -----------------------------------------------------
# Topic defaults that survive one node down: three copies, two of which must
# acknowledge a write. Fewer nodes cannot hold three copies.
if (( KAFKA_NODES >= 3 )); then
  REPLICATION=3 MIN_ISR=2
else
  REPLICATION="$KAFKA_NODES" MIN_ISR=1
fi

# node.id is the node's index + 1 (node ids start at 1, as the single broker's always has).
controller_voters() {
  local voters="" i
  for ((i = 0; i < KAFKA_NODES; i++)); do
    voters+="${voters:+,}$((i + 1))@127.0.0.1:$((KAFKA_CONTROLLER_PORT + i))"
  done
  printf '%s' "$voters"
}

# Writes node $1's server.properties into its data dir.
write_node_config() {
  local i="$1" dir="${NODE_DIRS[$1]}" port="${NODE_PORTS[$1]}" controller_port="${NODE_CONTROLLER_PORTS[$1]}" title
  if (( KAFKA_NODES == 1 )); then
    title="single-node KRaft test broker"
  else
    title="node $i of a $KAFKA_NODES-node KRaft test cluster"
  fi
  cat >"$dir/server.properties" <<EOF
# Generated by scripts/kafka-start.sh: $title.
process.roles=broker,controller
node.id=$((i + 1))
controller.quorum.voters=$(controller_voters)
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$controller_port
advertised.listeners=PLAINTEXT://127.0.0.1:$port
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
controller.listener.names=CONTROLLER
log.dirs=$dir/data
num.partitions=3
default.replication.factor=$REPLICATION
min.insync.replicas=$MIN_ISR
auto.create.topics.enable=$KAFKA_AUTO_CREATE_TOPICS
delete.topic.enable=true
# Internal topics: 10 partitions instead of 50 so they are created faster.
offsets.topic.replication.factor=$REPLICATION
offsets.topic.num.partitions=10
transaction.state.log.replication.factor=$REPLICATION
transaction.state.log.min.isr=$MIN_ISR
transaction.state.log.num.partitions=10
share.coordinator.state.topic.replication.factor=$REPLICATION
share.coordinator.state.topic.min.isr=$MIN_ISR
group.initial.rebalance.delay.ms=0
# After a crash (SIGKILL), a restarted broker cannot register until the old
# registration's session expires (default 9 s); shorter for KAFKA_RESUME=1.
# In a cluster it is also how long the controller waits before it fences a
# killed node and elects new leaders for its partitions.
broker.session.timeout.ms=4000
broker.heartbeat.interval.ms=1000
num.network.threads=2
num.io.threads=4
num.recovery.threads.per.data.dir=1
EOF
}

write_log4j_config() {
  local dir="$1"
  cat >"$dir/log4j2.properties" <<EOF
# Generated by scripts/kafka-start.sh: everything goes to one file.
status = error
name = core-gateway-kafka
appender.file.type = File
appender.file.name = FILE
appender.file.fileName = $dir/logs/server.log
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
}

# Formats one node's storage; every node of a cluster gets the same cluster id.
format_node() {
  local dir="$1" cluster_id="$2"
  # The format JVM is short-lived: C1 only and serial GC start it ~0.3 s faster.
  local format_opts=(-Xmx256m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Dlog4j2.configurationFile="$dir/log4j2.properties")
  if ! "$JAVA" "${format_opts[@]}" -cp "$CLASSPATH_LIBS" kafka.tools.StorageTool \
        format --cluster-id="$cluster_id" --config "$dir/server.properties" "${KAFKA_SECURITY_FORMAT_ARGS[@]}" >"$dir/logs/format.out" 2>&1; then
    cat "$dir/logs/format.out" >&2 || true
    return 1
  fi
}

if [[ "$RESUMING" != 1 ]]; then
  # Random cluster id: a Kafka Uuid is 16 bytes in URL-safe base64 without
  # padding. Like Kafka's own Uuid.randomUuid(), avoid ids starting with '-'
  # (they look like a command-line option).
  CLUSTER_ID="-"
  while [[ "$CLUSTER_ID" == -* ]]; do
    CLUSTER_ID="$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\n')"
  done
  format_jobs=()
  for i in "${TARGETS[@]}"; do
    if (( KAFKA_NODES == 1 )); then
      NODE_DIRS[i]="$(mktemp -d "${TMPDIR:-/tmp}/core-gateway-kafka.XXXXXX")"
    else
      NODE_DIRS[i]="$(mktemp -d "${TMPDIR:-/tmp}/core-gateway-kafka-$i.XXXXXX")"
    fi
    touch "${NODE_DIRS[i]}/.core-gateway-kafka"   # marker: kafka-stop.sh only deletes dirs with it
    mkdir -p "${NODE_DIRS[i]}/logs" "${NODE_DIRS[i]}/data"
    write_node_config "$i"
    kafka_security_configure "${NODE_DIRS[i]}/server.properties"
    write_log4j_config "${NODE_DIRS[i]}"
    format_node "${NODE_DIRS[i]}" "$CLUSTER_ID" &
    format_jobs+=("$!")
  done
  for k in "${!format_jobs[@]}"; do
    wait "${format_jobs[k]}" || die "formatting storage failed (data dir kept: ${NODE_DIRS[${TARGETS[k]}]})"
  done
else
  for i in "${TARGETS[@]}"; do mkdir -p "${NODE_DIRS[i]}/logs" "${NODE_DIRS[i]}/data"; done
fi

# --- launch --------------------------------------------------------------------
read -r -a HEAP_OPTS <<<"$KAFKA_HEAP_OPTS"
SETSID=()
command -v setsid >/dev/null && SETSID=(setsid)

launch_node() {
  local i="$1" dir="${NODE_DIRS[$1]}"
  local pid_file="$dir/kafka.pid"
  local jvm_opts=(
    "${HEAP_OPTS[@]}"
    -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:+ExplicitGCInvokesConcurrent
    -Djava.awt.headless=true
    -Dlog4j2.configurationFile="$dir/log4j2.properties"
    -Dkafka.logs.dir="$dir/logs"
    "${KAFKA_SECURITY_JVM_OPTS[@]}"
  )
  rm -f -- "$pid_file"
  # Only log lines written from now on count for readiness (matters on resume,
  # where the log still holds the previous run's lines).
  NODE_LOG_OFFSETS[i]="$(stat -c %s "$dir/logs/server.log" 2>/dev/null || echo 0)"
  # The inner bash records its own pid and then becomes the JVM via exec, so the
  # recorded pid is the broker's whether or not setsid forks.
  # shellcheck disable=SC2016  # $$ and $@ are for the inner bash
  (cd "$dir" && exec "${SETSID[@]}" bash -c 'echo $$ >"$0"; exec "$@"' "$pid_file" \
      "$JAVA" "${jvm_opts[@]}" -cp "$CLASSPATH_LIBS" kafka.Kafka "$dir/server.properties") \
      >>"$dir/logs/kafka.out" 2>&1 </dev/null &
  disown "$!" 2>/dev/null || true
}

# Shell-quoted KEY=value lines (read by kafka-stop.sh, kafka-kill.sh and a re-run of this script).
write_node_state() {
  local i="$1" dir="${NODE_DIRS[$1]}"
  {
    printf 'KAFKA_PID=%q\n' "${NODE_PIDS[i]}"
    printf 'KAFKA_VERSION=%q\n' "$KAFKA_VERSION"
    printf 'KAFKA_DATA_DIR=%q\n' "$dir"
    printf 'KAFKA_BOOTSTRAP=%q\n' "$BOOTSTRAP"
    printf 'KAFKA_PORT=%q\n' "${NODE_PORTS[i]}"
    printf 'KAFKA_CONTROLLER_PORT=%q\n' "${NODE_CONTROLLER_PORTS[i]}"
    printf 'KAFKA_LOG=%q\n' "$dir/logs/server.log"
    printf 'KAFKA_NODES=%q\n' "$KAFKA_NODES"
    printf 'KAFKA_NODE=%q\n' "$i"
  } >"$(node_state_file "$STATE_DIR" "$i")"
}

# A new cluster that fails to start leaves no state behind (its data dirs are kept
# for the logs); a resume that fails keeps the state, so kafka-stop.sh still finds
# every node's data dir.
abandon_start() {
  local i
  for i in "${TARGETS[@]}"; do [[ -z "${NODE_PIDS[i]:-}" ]] || kill -KILL "${NODE_PIDS[i]}" 2>/dev/null || true; done
  if [[ "$RESUMING" != 1 ]]; then
    for i in "${TARGETS[@]}"; do rm -f -- "$(node_state_file "$STATE_DIR" "$i")"; done
  fi
}

for i in "${TARGETS[@]}"; do launch_node "$i"; done
mkdir -p "$STATE_DIR"
for i in "${TARGETS[@]}"; do
  pid_file="${NODE_DIRS[i]}/kafka.pid"
  for _ in $(seq 1 50); do [[ -s "$pid_file" ]] && break; sleep 0.1; done
  NODE_PIDS[i]="$(cat "$pid_file" 2>/dev/null || true)"
  if [[ -z "${NODE_PIDS[i]}" ]]; then
    abandon_start
    die "node $i did not start (see ${NODE_DIRS[i]}/logs/kafka.out)"
  fi
  write_node_state "$i"
done

show_logs_and_die() {
  local i="$1" dir="${NODE_DIRS[$1]}"
  {
    echo "---- last 50 lines of $dir/logs/server.log ----"
    tail -n 50 "$dir/logs/server.log" 2>/dev/null || true
    echo "---- last 50 lines of $dir/logs/kafka.out ----"
    tail -n 50 "$dir/logs/kafka.out" 2>/dev/null || true
  } >&2
  die "$2"
}

for i in "${TARGETS[@]}"; do
  if [[ "$RESUMING" == 1 ]]; then
    log "resuming Kafka $KAFKA_VERSION (pid ${NODE_PIDS[i]}) on 127.0.0.1:${NODE_PORTS[i]} with its data in ${NODE_DIRS[i]}"
  else
    log "starting Kafka $KAFKA_VERSION (pid ${NODE_PIDS[i]}) on 127.0.0.1:${NODE_PORTS[i]}, data ${NODE_DIRS[i]}"
  fi
done

node_ready() {
  local i="$1"
  tail -c "+$((NODE_LOG_OFFSETS[i] + 1))" "${NODE_DIRS[i]}/logs/server.log" 2>/dev/null | grep -q 'Kafka Server started' \
    && port_open "${NODE_PORTS[i]}"
}

# A node of a cluster starts only once a majority of the voters answer, so all
# of them are launched before any is waited for.
deadline=$((SECONDS + KAFKA_START_TIMEOUT))
pending=("${TARGETS[@]}")
while (( ${#pending[@]} > 0 )); do
  still=()
  for i in "${pending[@]}"; do
    if ! kill -0 "${NODE_PIDS[i]}" 2>/dev/null; then
      abandon_start
      show_logs_and_die "$i" "node $i exited during start-up (data dir kept: ${NODE_DIRS[i]})"
    fi
    node_ready "$i" || still+=("$i")
  done
  pending=("${still[@]}")
  (( ${#pending[@]} == 0 )) && break
  if (( SECONDS >= deadline )); then
    abandon_start
    show_logs_and_die "${pending[0]}" "node(s) ${pending[*]} not ready after ${KAFKA_START_TIMEOUT}s (killed; data dir kept: ${NODE_DIRS[${pending[0]}]})"
  fi
  sleep 0.2
done

if (( KAFKA_NODES == 1 )); then
  log "ready: bootstrap 127.0.0.1:${NODE_PORTS[0]} (log ${NODE_DIRS[0]}/logs/server.log)"
else
  for i in "${TARGETS[@]}"; do log "node $i ready on 127.0.0.1:${NODE_PORTS[i]} (log ${NODE_DIRS[i]}/logs/server.log)"; done
  [[ "$RESUMING" == 1 ]] || log "ready: $KAFKA_NODES nodes, replication factor $REPLICATION, min.insync.replicas $MIN_ISR"
  log "KAFKA_BROKERS=$BOOTSTRAP"
fi
kafka_security_report "${NODE_DIRS[${TARGETS[0]}]}/server.properties" "$BOOTSTRAP"

#!/usr/bin/env bash
# Start the production shape on the loopback interface, without Docker: a Kafka
# broker (scripts/kafka-start.sh), a ClickHouse server (scripts/clickhouse-start.sh),
# two gateway processes (ROLE=gateway) and one ingest consumer (ROLE=consumer),
# each of the last three a separate `node dist/src/main.js`, and HAProxy in front of
# the two gateways (Debian's haproxy, installed with apt-get when missing).
#
# Environment (all optional):
#   STACK_DIR              state, secrets, logs (default: <repo>/.stack; logs in $STACK_DIR/logs)
#   PORT                   first gateway's HTTP port; the second listens on PORT+1 (default: 8080)
#   CONSUMER_PORT          the consumer's health port, /healthz and /readyz (default: PORT+2)
#   LB_PORT                HAProxy's port, in front of both gateways (default: PORT+3)
#   KAFKA_PORT             broker port (default: 9092)
#   KAFKA_CONTROLLER_PORT  KRaft controller port (default: KAFKA_PORT+1)
#   CLICKHOUSE_PORT        ClickHouse HTTP port (default: 8123)
#   AUTH_JWT_SECRET[_FILE] | AUTH_JWKS_URL | AUTH_OIDC_ISSUER | AUTH_PUBLIC_KEY, AUTH_ISSUER, AUTH_AUDIENCE
#                          how the gateways verify tokens (docs/configuration.md); with
#                          none of the first four set, an HS256 development secret is
#                          generated once into $STACK_DIR/auth-jwt-secret
#   CURSOR_SECRET[_FILE]   cursor key shared by both gateways (default: generated once
#                          into $STACK_DIR/cursor-secret)
#   STACK_START_TIMEOUT    seconds the gateways and the consumer get to answer /readyz
#                          (default: 90; a restarted consumer waits out its dead
#                          predecessor's 30 s group session before it is ready)
# The other variables of docs/configuration.md reach the processes unchanged.
#
# Running it again starts only the parts that are down. Parts that are up keep the
# ports they were started with; scripts/stack-stop.sh stops everything.
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$SCRIPT_DIR/.." && pwd)"
MAIN_JS="$REPO_ROOT/dist/src/main.js"
NODES=(gateway-1 gateway-2 consumer)

log() { printf 'stack-start: %s\n' "$*"; }
die() { printf 'stack-start: ERROR: %s\n' "$*" >&2; exit 1; }

STACK_DIR="${STACK_DIR:-$REPO_ROOT/.stack}"
mkdir -p "$STACK_DIR"
STACK_DIR="$(cd "$STACK_DIR" && pwd -P)"
LOG_DIR="$STACK_DIR/logs"
RUN_DIR="$STACK_DIR/run"
STATE_FILE="$STACK_DIR/stack.env"
KAFKA_STATE_DIR="$STACK_DIR/kafka"
CLICKHOUSE_STATE_DIR="$STACK_DIR/clickhouse"
mkdir -p "$LOG_DIR" "$RUN_DIR" "$KAFKA_STATE_DIR" "$CLICKHOUSE_STATE_DIR"

STACK_START_TIMEOUT="${STACK_START_TIMEOUT:-90}"
[[ "$STACK_START_TIMEOUT" =~ ^[0-9]+$ ]] || die "STACK_START_TIMEOUT must be whole seconds; got \"$STACK_START_TIMEOUT\""

# shellcheck source=scripts/kafka-broker-lib.sh
source "$SCRIPT_DIR/kafka-broker-lib.sh"

# --- processes ------------------------------------------------------------------

# shellcheck source=scripts/process-lib.sh
source "$SCRIPT_DIR/process-lib.sh"

# Every signal is sent only after this: alive, running dist/src/main.js, started by this stack as $2.
is_our_node() { is_stack_node "$1" "$STACK_DIR/$2" "$MAIN_JS"; }

node_pid() { cat "$RUN_DIR/$1.pid" 2>/dev/null || true; }
node_up() { is_our_node "$(node_pid "$1")" "$1"; }

# One KEY from a KEY=value state file, read as data (process-lib.sh's state_read).
state_get() { state_read "$1" "$2"; }

kafka_up() {
  local file="$KAFKA_STATE_DIR/broker.env"
  [[ -f "$file" ]] && is_our_broker "$(state_get "$file" KAFKA_PID)" "$(state_get "$file" KAFKA_DATA_DIR)"
}

# A broker that died with its data dir still in place can be resumed with its
# topics and offsets, which the running gateways and the consumer still expect.
kafka_resumable() {
  local file="$KAFKA_STATE_DIR/broker.env" dir
  [[ -f "$file" ]] || return 1
  dir="$(state_get "$file" KAFKA_DATA_DIR)"
  [[ -n "$dir" && -f "$dir/.core-gateway-kafka" && -f "$dir/server.properties" ]]
}

clickhouse_up() {
  local file="$CLICKHOUSE_STATE_DIR/server.env" pid dir args
  [[ -f "$file" ]] || return 1
  pid="$(state_get "$file" CLICKHOUSE_PID)"
  dir="$(state_get "$file" CLICKHOUSE_DATA_DIR)"
  [[ "$pid" =~ ^[0-9]+$ ]] && alive "$pid" || return 1
  args="$(tr '\0' '\n' <"/proc/$pid/cmdline" 2>/dev/null)" || return 1
  grep -q 'libchdb' <<<"$args" && grep -qxF -- "--path=$dir/" <<<"$args"
}

LB_PID_FILE="$RUN_DIR/haproxy.pid"
LB_CONFIG="$STACK_DIR/haproxy.cfg"
# Alive and an haproxy on this stack's config.
haproxy_up() {
  local pid args
  pid="$(cat "$LB_PID_FILE" 2>/dev/null || true)"
  [[ "$pid" =~ ^[0-9]+$ ]] && alive "$pid" || return 1
  args="$(tr '\0' '\n' <"/proc/$pid/cmdline" 2>/dev/null)" || return 1
  grep -q 'haproxy' <<<"$args" && grep -qxF -- "$LB_CONFIG" <<<"$args"
}

any_part_up() {
  local name
  kafka_up && return 0
  clickhouse_up && return 0
  haproxy_up && return 0
  for name in "${NODES[@]}"; do node_up "$name" && return 0; done
  return 1
}

# --- secrets ------------------------------------------------------------------------

# A secret kept in a file (0600), created on first use, so that tokens and cursors
# stay valid across restarts of the stack.
kept_secret() {
  local file="$1" secret=""
  [[ -f "$file" ]] && secret="$(tr -d '[:space:]' <"$file")"
  if (( ${#secret} < 32 )); then
    secret="$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')"
    (umask 077 && printf '%s\n' "$secret" >"$file.tmp") && mv -f -- "$file.tmp" "$file"
  fi
  printf '%s' "$secret"
}

AUTH_SET=()
for var in AUTH_JWT_SECRET AUTH_JWT_SECRET_FILE AUTH_JWKS_URL AUTH_OIDC_ISSUER AUTH_PUBLIC_KEY; do
  [[ -n "${!var:-}" ]] && AUTH_SET+=("$var")
done
(( ${#AUTH_SET[@]} <= 1 )) || die "only one of AUTH_JWT_SECRET (or AUTH_JWT_SECRET_FILE), AUTH_JWKS_URL, AUTH_OIDC_ISSUER and AUTH_PUBLIC_KEY may be set; found ${AUTH_SET[*]}"
# Checked here as config.ts checks it, so that a short secret fails before anything starts.
byte_length() { local LC_ALL=C; printf '%s' "${#1}"; }
for var in AUTH_JWT_SECRET CURSOR_SECRET; do
  if [[ -n "${!var:-}" ]] && (( $(byte_length "${!var}") < 32 )); then
    die "$var must be at least 32 bytes"
  fi
done
DEV_SECRET_FILE=""
if (( ${#AUTH_SET[@]} == 0 )); then
  DEV_SECRET_FILE="$STACK_DIR/auth-jwt-secret"
  AUTH_JWT_SECRET="$(kept_secret "$DEV_SECRET_FILE")"
  AUTH_MODE="HS256 with the development secret in $DEV_SECRET_FILE"
else
  AUTH_MODE="${AUTH_SET[0]} from your environment"
fi
# Named apart from CURSOR_SECRET_FILE, which the gateways read: a key given that way is passed on as it is.
KEPT_CURSOR_SECRET_FILE=""
if [[ -z "${CURSOR_SECRET:-}" && -z "${CURSOR_SECRET_FILE:-}" ]]; then
  KEPT_CURSOR_SECRET_FILE="$STACK_DIR/cursor-secret"
  CURSOR_SECRET="$(kept_secret "$KEPT_CURSOR_SECRET_FILE")"
fi

# --- ports ------------------------------------------------------------------------

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

check_port_number() {
  [[ "$2" =~ ^[0-9]+$ ]] && (( $2 >= 1 && $2 <= 65535 )) || die "$1 must be a port number from 1 to 65535; got \"$2\""
}

# The stack in STACK_DIR keeps the ports it was started with while any part of it
# runs, so that a part started again joins the others instead of a stack of its own.
PORT_VARS=(PORT CONSUMER_PORT LB_PORT KAFKA_PORT KAFKA_CONTROLLER_PORT CLICKHOUSE_PORT)
declare -A REQUESTED=()
for var in "${PORT_VARS[@]}"; do REQUESTED[$var]="${!var:-}"; done
if [[ -f "$STATE_FILE" ]] && any_part_up; then
  PORT="$(state_get "$STATE_FILE" PORT)"
  CONSUMER_PORT="$(state_get "$STATE_FILE" CONSUMER_PORT)"
  LB_PORT="$(state_get "$STATE_FILE" LB_PORT)"
  KAFKA_PORT="$(state_get "$STATE_FILE" KAFKA_PORT)"
  KAFKA_CONTROLLER_PORT="$(state_get "$STATE_FILE" KAFKA_CONTROLLER_PORT)"
  CLICKHOUSE_PORT="$(state_get "$STATE_FILE" CLICKHOUSE_PORT)"
else
  PORT="${PORT:-8080}"
  check_port_number PORT "$PORT"
  CONSUMER_PORT="${CONSUMER_PORT:-$((PORT + 2))}"
  LB_PORT="${LB_PORT:-$((PORT + 3))}"
  KAFKA_PORT="${KAFKA_PORT:-9092}"
  check_port_number KAFKA_PORT "$KAFKA_PORT"
  KAFKA_CONTROLLER_PORT="${KAFKA_CONTROLLER_PORT:-$((KAFKA_PORT + 1))}"
  CLICKHOUSE_PORT="${CLICKHOUSE_PORT:-8123}"
fi
KAFKA_WAS_UP=0 KAFKA_RESUME=0 CLICKHOUSE_WAS_UP=0
kafka_up && KAFKA_WAS_UP=1
(( KAFKA_WAS_UP )) || ! kafka_resumable || KAFKA_RESUME=1
clickhouse_up && CLICKHOUSE_WAS_UP=1
if (( KAFKA_WAS_UP || KAFKA_RESUME )); then
  # kafka-start.sh keeps a broker's ports, and resumes one on its old ports.
  KAFKA_PORT="$(state_get "$KAFKA_STATE_DIR/broker.env" KAFKA_PORT)"
  KAFKA_CONTROLLER_PORT="$(state_get "$KAFKA_STATE_DIR/broker.env" KAFKA_CONTROLLER_PORT)"
fi
for var in "${PORT_VARS[@]}"; do
  if [[ -n "${REQUESTED[$var]}" && "${REQUESTED[$var]}" != "${!var}" ]]; then
    log "note: $var=${REQUESTED[$var]} asked for, but the stack in $STACK_DIR keeps $var=${!var}; run scripts/stack-stop.sh first to change ports"
  fi
done
GATEWAY_2_PORT=$((PORT + 1))
check_port_number "PORT+1" "$GATEWAY_2_PORT"
check_port_number CONSUMER_PORT "$CONSUMER_PORT"
check_port_number LB_PORT "$LB_PORT"
check_port_number KAFKA_CONTROLLER_PORT "$KAFKA_CONTROLLER_PORT"
check_port_number CLICKHOUSE_PORT "$CLICKHOUSE_PORT"

declare -A NODE_ROLE=([gateway-1]=gateway [gateway-2]=gateway [consumer]=consumer)
declare -A NODE_PORT=([gateway-1]="$PORT" [gateway-2]="$GATEWAY_2_PORT" [consumer]="$CONSUMER_PORT")
# What to change when the port is taken.
declare -A NODE_PORT_HINT=([gateway-1]="PORT" [gateway-2]="PORT (gateway 2 listens on PORT+1)" [consumer]="CONSUMER_PORT")

check_distinct_ports() {
  local -A seen=()
  local entry name port
  for entry in "PORT=$PORT" "PORT+1=$GATEWAY_2_PORT" "CONSUMER_PORT=$CONSUMER_PORT" "LB_PORT=$LB_PORT" "KAFKA_PORT=$KAFKA_PORT" \
               "KAFKA_CONTROLLER_PORT=$KAFKA_CONTROLLER_PORT" "CLICKHOUSE_PORT=$CLICKHOUSE_PORT"; do
    name="${entry%%=*}" port="${entry#*=}"
    [[ -z "${seen[$port]:-}" ]] || die "$name and ${seen[$port]} are both $port; every part needs a port of its own"
    seen[$port]="$name"
  done
}
check_distinct_ports

# Fail before anything starts when a port that a part about to start needs is taken.
require_free() {
  ! port_open "$1" || die "port 127.0.0.1:$1 is already in use; set $2 to a free port"
}
if (( ! KAFKA_WAS_UP )); then
  require_free "$KAFKA_PORT" KAFKA_PORT
  require_free "$KAFKA_CONTROLLER_PORT" KAFKA_CONTROLLER_PORT
fi
(( CLICKHOUSE_WAS_UP )) || require_free "$CLICKHOUSE_PORT" CLICKHOUSE_PORT
LB_WAS_UP=0
haproxy_up && LB_WAS_UP=1
(( LB_WAS_UP )) || require_free "$LB_PORT" LB_PORT
NODES_DOWN=()
for name in "${NODES[@]}"; do
  if ! node_up "$name"; then
    NODES_DOWN+=("$name")
    require_free "${NODE_PORT[$name]}" "${NODE_PORT_HINT[$name]}"
  fi
done
if (( ! KAFKA_WAS_UP && ! KAFKA_RESUME && ${#NODES_DOWN[@]} < ${#NODES[@]} )); then
  # They created their topics on a broker whose data is gone; a fresh one has none.
  die "gateway or consumer processes run without their broker, whose data is gone; run scripts/stack-stop.sh first"
fi

# --- build --------------------------------------------------------------------------

needs_build() {
  [[ -f "$MAIN_JS" ]] || return 0
  [[ -n "$(find "$REPO_ROOT/src" "$REPO_ROOT/consumers" "$REPO_ROOT/scripts" "$REPO_ROOT/schemas" \
             "$REPO_ROOT/package.json" "$REPO_ROOT/tsconfig.json" "$REPO_ROOT/tsconfig.build.json" \
             \( -name '*.ts' -o -name '*.json' \) -newer "$MAIN_JS" -print -quit 2>/dev/null)" ]]
}

if (( ${#NODES_DOWN[@]} > 0 )) && needs_build; then
  log "building dist (npm run build)"
  (cd "$REPO_ROOT" && npm run --silent build) >"$LOG_DIR/build.log" 2>&1 \
    || die "npm run build failed; read $LOG_DIR/build.log"
fi

# --- Kafka and ClickHouse -----------------------------------------------------------

# Runs a part's own start script with its output in LOG_DIR; on failure, one line
# with the error that script printed this time.
run_part_script() {
  local what="$1" script="$2" log_file="$LOG_DIR/$3" offset error
  shift 3
  offset="$(stat -c %s "$log_file" 2>/dev/null || echo 0)"
  if ! env "$@" bash "$SCRIPT_DIR/$script" >>"$log_file" 2>&1; then
    error="$(tail -c "+$((offset + 1))" "$log_file" | grep -a 'ERROR:' | tail -n 1 | sed 's/^[a-z-]*: ERROR: //' || true)"
    die "$what did not come up${error:+: $error}; read $log_file"
  fi
}

if (( KAFKA_RESUME )); then
  log "resuming Kafka on 127.0.0.1:$KAFKA_PORT with the topics and offsets it had"
elif (( ! KAFKA_WAS_UP )); then
  log "starting Kafka on 127.0.0.1:$KAFKA_PORT"
fi
# TMPDIR places kafka-start.sh's per-run data dir under STACK_DIR, beside the rest.
run_part_script Kafka kafka-start.sh kafka-start.log \
  KAFKA_STATE_DIR="$KAFKA_STATE_DIR" KAFKA_PORT="$KAFKA_PORT" KAFKA_CONTROLLER_PORT="$KAFKA_CONTROLLER_PORT" \
  KAFKA_RESUME="$KAFKA_RESUME" TMPDIR="$KAFKA_STATE_DIR"
KAFKA_BROKERS="$(state_get "$KAFKA_STATE_DIR/broker.env" KAFKA_BOOTSTRAP)"
ln -sfn -- "$(state_get "$KAFKA_STATE_DIR/broker.env" KAFKA_LOG)" "$LOG_DIR/kafka.log"

(( CLICKHOUSE_WAS_UP )) || log "starting ClickHouse on 127.0.0.1:$CLICKHOUSE_PORT"
run_part_script ClickHouse clickhouse-start.sh clickhouse-start.log \
  CLICKHOUSE_STATE_DIR="$CLICKHOUSE_STATE_DIR" CLICKHOUSE_PORT="$CLICKHOUSE_PORT"
CLICKHOUSE_URL="$(state_get "$CLICKHOUSE_STATE_DIR/server.env" CLICKHOUSE_URL)"
ln -sfn -- ../clickhouse/clickhouse.log "$LOG_DIR/clickhouse.log"
ln -sfn -- ../clickhouse/clickhouse.out "$LOG_DIR/clickhouse.out"

# --- gateways and the consumer ------------------------------------------------------

SETSID=()
command -v setsid >/dev/null && SETSID=(setsid)

# The process gets a session of its own, so it outlives this script and its
# terminal; CORE_GATEWAY_STACK marks it as this stack's for is_our_node. Secrets go
# through the environment, never a command line.
launch_node() {
  local name="$1" log_file="$LOG_DIR/$1.log" pid_file="$RUN_DIR/$1.pid"
  rm -f -- "$pid_file"
  printf '\n==== %s start: ROLE=%s on 127.0.0.1:%s\n' "$(date -u +%FT%TZ)" "${NODE_ROLE[$name]}" "${NODE_PORT[$name]}" >>"$log_file"
  (
    cd "$REPO_ROOT"
    # TRUSTED_PROXIES: the balancer reaches the gateways over loopback, and its X-Forwarded-For names the caller.
    export ROLE="${NODE_ROLE[$name]}" PORT="${NODE_PORT[$name]}" HOST=127.0.0.1 TRUSTED_PROXIES=127.0.0.1 \
           KAFKA_BROKERS CLICKHOUSE_URL CURSOR_SECRET CORE_GATEWAY_STACK="$STACK_DIR/$name"
    [[ -z "$DEV_SECRET_FILE" ]] || export AUTH_JWT_SECRET
    # shellcheck disable=SC2016  # $$ and $@ belong to the inner bash, which becomes node
    exec "${SETSID[@]}" bash -c 'echo $$ >"$0"; exec "$@"' "$pid_file" node "$MAIN_JS"
  ) >>"$log_file" 2>&1 </dev/null &
  disown "$!" 2>/dev/null || true
  for _ in $(seq 1 50); do [[ -s "$pid_file" ]] && break; sleep 0.1; done
  [[ -s "$pid_file" ]] || die "$name did not start; read $log_file"
  log "starting $name (pid $(node_pid "$name"), ROLE=${NODE_ROLE[$name]}) on 127.0.0.1:${NODE_PORT[$name]}"
}


# The process's own one-line reason, when it printed one (a configuration error or a
# failed start), from what it wrote during this start.
exit_reason() {
  awk '/^==== /{reason=""} /^core-gateway: /{if (reason == "") reason=$0} END{print reason}' "$LOG_DIR/$1.log" 2>/dev/null | cut -c1-240
}

stop_unready() {
  local name="$1" pid
  pid="$(node_pid "$name")"
  is_our_node "$pid" "$name" || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 50); do alive "$pid" || return 0; sleep 0.1; done
  is_our_node "$pid" "$name" && kill -KILL "$pid" 2>/dev/null || true
}

wait_until_ready() {
  local deadline=$((SECONDS + STACK_START_TIMEOUT)) pending=("$@") still name reason
  while (( ${#pending[@]} > 0 )); do
    still=()
    for name in "${pending[@]}"; do
      if ! node_up "$name"; then
        reason="$(exit_reason "$name")"
        die "$name exited during start-up${reason:+ ($reason)}; read $LOG_DIR/$name.log"
      fi
      if http_ok "${NODE_PORT[$name]}" /readyz; then
        log "$name ready"
      else
        still+=("$name")
      fi
    done
    pending=("${still[@]}")
    (( ${#pending[@]} > 0 )) || break
    if (( SECONDS >= deadline )); then
      for name in "${pending[@]}"; do stop_unready "$name"; done
      die "${pending[0]} did not answer GET /readyz within ${STACK_START_TIMEOUT}s (stopped); read $LOG_DIR/${pending[0]}.log"
    fi
    sleep 0.2
  done
}

if (( KAFKA_WAS_UP && CLICKHOUSE_WAS_UP && LB_WAS_UP && ${#NODES_DOWN[@]} == 0 )); then
  log "already running; nothing to start"
fi
for name in "${NODES_DOWN[@]}"; do launch_node "$name"; done
wait_until_ready "${NODES_DOWN[@]}"

# --- HAProxy in front of the gateways ---------------------------------------------------

find_haproxy() { command -v haproxy || { [[ -x /usr/sbin/haproxy ]] && printf '/usr/sbin/haproxy'; } || true; }

install_haproxy() {
  local apt_log="$LOG_DIR/apt-haproxy.log" sudo=()
  command -v apt-get >/dev/null || die "haproxy is not installed, and apt-get is not here to install it"
  (( EUID == 0 )) || sudo=(sudo)
  log "haproxy not found; installing Debian's package with apt-get (once)"
  # The package's own service is not wanted: this stack runs its own haproxy. Installs of
  # two runs side by side queue on one lock (scripts/prometheus-lib.sh says why).
  if ! ( flock -w 600 9 && { "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y --no-install-recommends haproxy \
         || { "${sudo[@]}" apt-get -o DPkg::Lock::Timeout=300 update && "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y --no-install-recommends haproxy; }; } ) \
       9>"${TMPDIR:-/tmp}/core-gateway-apt.lock" >"$apt_log" 2>&1; then
    die "apt-get could not install haproxy; read $apt_log"
  fi
}

if (( ! LB_WAS_UP )); then
  HAPROXY="$(find_haproxy)"
  [[ -n "$HAPROXY" ]] || { install_haproxy; HAPROXY="$(find_haproxy)"; }
  [[ -n "$HAPROXY" ]] || die "haproxy was installed but is not on PATH or in /usr/sbin"
  # Health checks every 500 ms on /readyz, which a gateway fails from the first moment of
  # its SIGTERM: two failures take it out of rotation. Server connections are closed
  # after each answer (http-server-close), so none is reused just as a draining gateway
  # closes it; a refused or dropped connection is retried on the other gateway
  # (retry-on, redispatch). Enroll requests carry an Idempotency-Key, so a retried POST
  # cannot make a second command.
  cat >"$LB_CONFIG.tmp" <<CFG
# Generated by scripts/stack-start.sh.
global
    maxconn 4096
    log stdout format short local0 notice
    # Server states and weights: echo "show stat" | socat - UNIX:$RUN_DIR/haproxy.sock
    stats socket $RUN_DIR/haproxy.sock mode 600 level admin

defaults
    mode http
    log global
    option httplog
    option http-server-close
    timeout connect 2s
    timeout client 60s
    timeout server 60s
    timeout http-request 30s
    timeout http-keep-alive 10s
    # A check's own answer may take a while on a loaded machine (readiness asks the
    # store and the broker); unset, this would be the 500 ms interval, and a busy pair of
    # gateways would both be marked down.
    timeout check 5s
    retries 3
    option redispatch 1
    retry-on conn-failure empty-response response-timeout

frontend api
    bind 127.0.0.1:$LB_PORT
    # The gateways count failed authentications by client address: they must see the
    # caller's, not this balancer's (TRUSTED_PROXIES names this hop to them). Set, not
    # appended: this balancer is the edge, so what a caller claims in its own header is dropped.
    http-request set-header X-Forwarded-For %[src]
    default_backend gateways

backend gateways
    balance roundrobin
    option httpchk GET /readyz
    http-check expect status 200
    default-server inter 500ms fastinter 250ms downinter 500ms fall 2 rise 2
    server gateway-1 127.0.0.1:$PORT check
    server gateway-2 127.0.0.1:$GATEWAY_2_PORT check
CFG
  mv -f -- "$LB_CONFIG.tmp" "$LB_CONFIG"
  "$HAPROXY" -c -q -f "$LB_CONFIG" >"$LOG_DIR/haproxy-check.log" 2>&1 || die "haproxy refused $LB_CONFIG; read $LOG_DIR/haproxy-check.log"
  rm -f -- "$LB_PID_FILE"
  printf '\n==== %s start on 127.0.0.1:%s\n' "$(date -u +%FT%TZ)" "$LB_PORT" >>"$LOG_DIR/haproxy.log"
  (
    # shellcheck disable=SC2016  # $$ and $@ belong to the inner bash, which becomes haproxy
    exec "${SETSID[@]}" bash -c 'echo $$ >"$0"; exec "$@"' "$LB_PID_FILE" "$HAPROXY" -db -f "$LB_CONFIG"
  ) >>"$LOG_DIR/haproxy.log" 2>&1 </dev/null &
  disown "$!" 2>/dev/null || true
  log "starting HAProxy on 127.0.0.1:$LB_PORT in front of both gateways"
  deadline=$((SECONDS + 30))
  until haproxy_up && http_ok "$LB_PORT" /readyz; do
    [[ -s "$LB_PID_FILE" ]] && ! haproxy_up && die "haproxy exited during start-up; read $LOG_DIR/haproxy.log"
    (( SECONDS < deadline )) || die "HAProxy did not answer GET /readyz on 127.0.0.1:$LB_PORT within 30s; read $LOG_DIR/haproxy.log"
    sleep 0.2
  done
  log "HAProxy ready"
fi

state_write "$STATE_FILE" \
  STACK_DIR "$STACK_DIR" \
  PORT "$PORT" \
  CONSUMER_PORT "$CONSUMER_PORT" \
  LB_PORT "$LB_PORT" \
  KAFKA_PORT "$KAFKA_PORT" \
  KAFKA_CONTROLLER_PORT "$KAFKA_CONTROLLER_PORT" \
  CLICKHOUSE_PORT "$CLICKHOUSE_PORT" \
  GATEWAY_1_URL "http://127.0.0.1:$PORT" \
  GATEWAY_2_URL "http://127.0.0.1:$GATEWAY_2_PORT" \
  LB_URL "http://127.0.0.1:$LB_PORT" \
  CONSUMER_URL "http://127.0.0.1:$CONSUMER_PORT" \
  KAFKA_BROKERS "$KAFKA_BROKERS" \
  CLICKHOUSE_URL "$CLICKHOUSE_URL" \
  AUTH_JWT_SECRET_FILE "$DEV_SECRET_FILE" \
  CURSOR_SECRET_FILE "${KEPT_CURSOR_SECRET_FILE:-${CURSOR_SECRET_FILE:-}}"

# --- summary --------------------------------------------------------------------------

# Every permission the gateway checks (the feed's and each catalogue entry's), as the built
# gateway lists them (src/auth/principal.ts); npm run token grants these unless told otherwise.
all_scopes() {
  (cd "$REPO_ROOT" && node --input-type=module \
    -e "const { permissions } = await import('./dist/src/auth/principal.js'); console.log(permissions.join(' '))") 2>/dev/null \
    || printf "events:read and each command's permission (src/commands/catalogue/)"
}

token_command() {
  local scope prefix=""
  scope="$(all_scopes)"
  if [[ -n "$DEV_SECRET_FILE" ]]; then
    prefix="AUTH_JWT_SECRET=\"\$(cat $(printf '%q' "$DEV_SECRET_FILE"))\" "
    [[ -z "${AUTH_ISSUER:-}" ]] || prefix+="AUTH_ISSUER=$(printf '%q' "$AUTH_ISSUER") "
    [[ -z "${AUTH_AUDIENCE:-}" ]] || prefix+="AUTH_AUDIENCE=$(printf '%q' "$AUTH_AUDIENCE") "
    printf 'TOKEN=$(%snpm run --silent token -- --org $ORG --scope "%s")' "$prefix" "$scope"
  elif [[ "${AUTH_SET[0]}" == AUTH_JWT_SECRET ]]; then
    printf 'TOKEN=$(npm run --silent token -- --org $ORG --scope "%s")   # with your AUTH_JWT_SECRET (and AUTH_ISSUER/AUTH_AUDIENCE) exported' "$scope"
  else
    printf 'TOKEN=<a token from your issuer for org $ORG with scope "%s">   # npm run token mints HS256 only' "$scope"
  fi
}

STOP_COMMAND="npm run stack:stop"
[[ "$STACK_DIR" == "$REPO_ROOT/.stack" ]] || STOP_COMMAND="STACK_DIR=$(printf '%q' "$STACK_DIR") npm run stack:stop"
API_A="http://127.0.0.1:$PORT/core/api/v1"
API_B="http://127.0.0.1:$GATEWAY_2_PORT/core/api/v1"
API_LB="http://127.0.0.1:$LB_PORT/core/api/v1"

cat <<EOF

core-gateway stack is up (STACK_DIR $STACK_DIR)
  gateway 1        $API_A      (ROLE=gateway, /readyz on http://127.0.0.1:$PORT)
  gateway 2        $API_B      (ROLE=gateway, /readyz on http://127.0.0.1:$GATEWAY_2_PORT)
  load balancer    $API_LB      (HAProxy, both gateways, health checks on /readyz)
  consumer         http://127.0.0.1:$CONSUMER_PORT/readyz   (ROLE=consumer, health only)
  KAFKA_BROKERS    $KAFKA_BROKERS
  CLICKHOUSE_URL   $CLICKHOUSE_URL
  auth             $AUTH_MODE
  cursor secret    ${KEPT_CURSOR_SECRET_FILE:-${CURSOR_SECRET_FILE:-CURSOR_SECRET from your environment}}
  logs             $LOG_DIR/  (gateway-1.log gateway-2.log consumer.log haproxy.log kafka.log clickhouse.log)

Enroll a device on gateway 1 and read it back from gateway 2's feed:
  cd $(printf '%q' "$REPO_ROOT")
  ORG=\$(node -e 'console.log(crypto.randomUUID())')
  $(token_command)
  curl -s -X POST "$API_A/projects/\$ORG/fleets/\$ORG/devices/\$ORG/enroll" \\
    -H "Authorization: Bearer \$TOKEN" -H "ORG-ID: \$ORG" -H 'content-type: application/json' \\
    -H "Idempotency-Key: \$(node -e 'console.log(crypto.randomUUID())')" -d '{"display_name":"Pump 7"}'
  curl -s "$API_B/projects/\$ORG/events?limit=10" -H "Authorization: Bearer \$TOKEN" -H "ORG-ID: \$ORG"
(The event shows in the feed once the consumer has stored it, normally within a second.)

Stop: $STOP_COMMAND
  Stops HAProxy, both gateways and the consumer, then the broker and ClickHouse. ClickHouse's data
  ($(state_get "$CLICKHOUSE_STATE_DIR/server.env" CLICKHOUSE_DATA_DIR)) is kept unless STACK_WIPE=1.
  Kafka's data dir is per run: kafka-stop.sh deletes it, topics and consumer offsets with it
  (KAFKA_KEEP_DATA=1 keeps it), so the next start begins with empty topics.
EOF

#!/usr/bin/env bash
# Start a Prometheus server on the loopback interface that scrapes the stack of
# scripts/stack-start.sh (both gateways and the consumer) and evaluates the alerting
# rules of ops/prometheus/core-gateway-alerts.yml. The binary is Debian's prometheus
# package, installed when missing (scripts/prometheus-lib.sh).
#
# Environment (all optional):
#   STACK_DIR                  the stack to scrape (default: <repo>/.stack); its stack.env
#                              gives the ports (PORT, PORT+1, CONSUMER_PORT)
#   PROMETHEUS_PORT            port of Prometheus' web UI and API on 127.0.0.1 (default: 9090)
#   PROMETHEUS_STATE_DIR       state file, log, generated config (default: $STACK_DIR/prometheus)
#   PROMETHEUS_CONFIG          a configuration file of your own instead of the generated one
#                              (the tests write theirs); STACK_DIR is then not read
#   PROMETHEUS_SCRAPE_INTERVAL scrape and rule-evaluation interval of the generated
#                              config (default: 15s)
#   PROMETHEUS_START_TIMEOUT   seconds to wait for GET /-/ready to answer 200 (default: 60)
#
# The data dir ($PROMETHEUS_STATE_DIR/data) is per run: scripts/prometheus-stop.sh
# deletes it. Running this script while that Prometheus is up is a no-op.
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$SCRIPT_DIR/.." && pwd)"
RULES_FILE="$REPO_ROOT/ops/prometheus/core-gateway-alerts.yml"

log() { printf 'prometheus-start: %s\n' "$*"; }
die() { printf 'prometheus-start: ERROR: %s\n' "$*" >&2; exit 1; }

STACK_DIR="${STACK_DIR:-$REPO_ROOT/.stack}"
PROMETHEUS_PORT="${PROMETHEUS_PORT:-9090}"
PROMETHEUS_STATE_DIR="${PROMETHEUS_STATE_DIR:-$STACK_DIR/prometheus}"
PROMETHEUS_CONFIG="${PROMETHEUS_CONFIG:-}"
PROMETHEUS_SCRAPE_INTERVAL="${PROMETHEUS_SCRAPE_INTERVAL:-15s}"
PROMETHEUS_START_TIMEOUT="${PROMETHEUS_START_TIMEOUT:-60}"
[[ "$PROMETHEUS_PORT" =~ ^[0-9]+$ ]] && (( PROMETHEUS_PORT >= 1 && PROMETHEUS_PORT <= 65535 )) \
  || die "PROMETHEUS_PORT must be a port number from 1 to 65535; got \"$PROMETHEUS_PORT\""
[[ "$PROMETHEUS_START_TIMEOUT" =~ ^[0-9]+$ ]] || die "PROMETHEUS_START_TIMEOUT must be whole seconds; got \"$PROMETHEUS_START_TIMEOUT\""
[[ "$PROMETHEUS_SCRAPE_INTERVAL" =~ ^[0-9]+(ms|s|m)$ ]] || die "PROMETHEUS_SCRAPE_INTERVAL must be a duration such as 15s; got \"$PROMETHEUS_SCRAPE_INTERVAL\""

# shellcheck source=scripts/process-lib.sh
source "$SCRIPT_DIR/process-lib.sh"
# shellcheck source=scripts/prometheus-lib.sh
source "$SCRIPT_DIR/prometheus-lib.sh"

mkdir -p "$PROMETHEUS_STATE_DIR"
STATE_DIR="$(cd "$PROMETHEUS_STATE_DIR" && pwd -P)"
STATE_FILE="$STATE_DIR/prometheus.env"
DATA_DIR="$STATE_DIR/data"
LOG_FILE="$STATE_DIR/prometheus.log"

state_get() {
  # shellcheck disable=SC1090
  (source "$1" >/dev/null 2>&1; printf '%s' "${!2-}")
}

# True when the pid is alive and is a prometheus serving exactly data dir $2.
is_our_prometheus() {
  local pid="$1" args
  [[ "$pid" =~ ^[0-9]+$ ]] && alive "$pid" || return 1
  args="$(tr '\0' '\n' <"/proc/$pid/cmdline" 2>/dev/null)" || return 1
  grep -qxF -- "--storage.tsdb.path=$2" <<<"$args"
}

if [[ -f "$STATE_FILE" ]] && is_our_prometheus "$(state_get "$STATE_FILE" PROMETHEUS_PID)" "$DATA_DIR"; then
  log "already running on $(state_get "$STATE_FILE" PROMETHEUS_URL) (pid $(state_get "$STATE_FILE" PROMETHEUS_PID))"
  exit 0
fi

ensure_prometheus || die "Prometheus is needed"

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
! port_open "$PROMETHEUS_PORT" || die "port 127.0.0.1:$PROMETHEUS_PORT is already in use; set PROMETHEUS_PORT to a free port"

if [[ -z "$PROMETHEUS_CONFIG" ]]; then
  [[ -f "$STACK_DIR/stack.env" ]] || die "no stack in $STACK_DIR (no stack.env); run npm run stack:start first, or set PROMETHEUS_CONFIG"
  gateway_port="$(state_get "$STACK_DIR/stack.env" PORT)"
  consumer_port="$(state_get "$STACK_DIR/stack.env" CONSUMER_PORT)"
  [[ "$gateway_port" =~ ^[0-9]+$ && "$consumer_port" =~ ^[0-9]+$ ]] || die "$STACK_DIR/stack.env names no PORT or CONSUMER_PORT"
  PROMETHEUS_CONFIG="$STATE_DIR/prometheus.yml"
  # The job names are the ones the CoreGatewayDown rule and the dashboard's job variable select.
  cat >"$PROMETHEUS_CONFIG" <<YAML
# Written by scripts/prometheus-start.sh for the stack in $STACK_DIR.
global:
  scrape_interval: $PROMETHEUS_SCRAPE_INTERVAL
  evaluation_interval: $PROMETHEUS_SCRAPE_INTERVAL
rule_files:
  - $RULES_FILE
scrape_configs:
  - job_name: core-gateway
    static_configs:
      - targets: ['127.0.0.1:$gateway_port', '127.0.0.1:$((gateway_port + 1))']
  - job_name: core-gateway-consumer
    static_configs:
      - targets: ['127.0.0.1:$consumer_port']
YAML
fi
[[ -f "$PROMETHEUS_CONFIG" ]] || die "PROMETHEUS_CONFIG $PROMETHEUS_CONFIG is not a file"
PROMETHEUS_CONFIG="$(cd "$(dirname "$PROMETHEUS_CONFIG")" && pwd -P)/$(basename "$PROMETHEUS_CONFIG")"
promtool check config "$PROMETHEUS_CONFIG" >"$STATE_DIR/check-config.log" 2>&1 \
  || die "promtool check config refused $PROMETHEUS_CONFIG: $(grep -v '^$' "$STATE_DIR/check-config.log" | tail -n 1)"

rm -rf -- "$DATA_DIR"
mkdir -p "$DATA_DIR"
SETSID=()
command -v setsid >/dev/null && SETSID=(setsid)
printf '\n==== %s start on 127.0.0.1:%s\n' "$(date -u +%FT%TZ)" "$PROMETHEUS_PORT" >>"$LOG_FILE"
(
  # shellcheck disable=SC2016  # $$ and $@ belong to the inner bash, which becomes prometheus
  exec "${SETSID[@]}" bash -c 'echo $$ >"$0"; exec "$@"' "$STATE_DIR/prometheus.pid" \
    prometheus --config.file="$PROMETHEUS_CONFIG" --storage.tsdb.path="$DATA_DIR" \
      --web.listen-address="127.0.0.1:$PROMETHEUS_PORT" --storage.tsdb.retention.time=1d
) >>"$LOG_FILE" 2>&1 </dev/null &
disown "$!" 2>/dev/null || true
for _ in $(seq 1 50); do [[ -s "$STATE_DIR/prometheus.pid" ]] && break; sleep 0.1; done
PID="$(cat "$STATE_DIR/prometheus.pid" 2>/dev/null || true)"
[[ "$PID" =~ ^[0-9]+$ ]] || die "prometheus did not start; read $LOG_FILE"

{
  printf 'PROMETHEUS_PID=%q\n' "$PID"
  printf 'PROMETHEUS_PORT=%q\n' "$PROMETHEUS_PORT"
  printf 'PROMETHEUS_URL=%q\n' "http://127.0.0.1:$PROMETHEUS_PORT"
  printf 'PROMETHEUS_CONFIG=%q\n' "$PROMETHEUS_CONFIG"
  printf 'PROMETHEUS_DATA_DIR=%q\n' "$DATA_DIR"
  printf 'PROMETHEUS_LOG=%q\n' "$LOG_FILE"
} >"$STATE_FILE"

deadline=$((SECONDS + PROMETHEUS_START_TIMEOUT))
until http_ok "$PROMETHEUS_PORT" /-/ready; do
  # Whether it is still there, not whose command line it shows: the pid is the bash that
  # execs into prometheus, and its cmdline can read empty while that exec happens (a CI
  # run died here with no error in the log).
  if ! alive "$PID"; then
    die "prometheus exited during start-up ($(grep -av '^$' "$LOG_FILE" | tail -n 2 | tr '\n' ' ' | cut -c1-400)); read $LOG_FILE"
  fi
  if (( SECONDS >= deadline )); then
    kill -TERM "$PID" 2>/dev/null || true
    die "prometheus did not answer GET /-/ready within ${PROMETHEUS_START_TIMEOUT}s (stopped); read $LOG_FILE"
  fi
  sleep 0.2
done

cat <<MSG
prometheus-start: Prometheus $(prometheus --version 2>/dev/null | head -n 1 | awk '{print $3}') is up on http://127.0.0.1:$PROMETHEUS_PORT (pid $PID)
  config   $PROMETHEUS_CONFIG
  alerts   http://127.0.0.1:$PROMETHEUS_PORT/alerts
  log      $LOG_FILE
  stop     PROMETHEUS_STATE_DIR=$(printf '%q' "$STATE_DIR") npm run prometheus:stop
MSG

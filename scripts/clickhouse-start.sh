#!/usr/bin/env bash
# Start a ClickHouse server (its HTTP interface) on the loopback interface,
# from the engine library that `npm install` already put in node_modules:
# chDB's libchdb.so (npm @chdb/lib-linux-x64-gnu, ClickHouse 26.7). No Docker,
# no download.
#
# libchdb.so exports chdb_query_cmdline, which runs clickhouse-local; a small
# loader (scripts/clickhouse/loader.py, under python3, installed with apt-get
# when missing) has it open the HTTP listener and keeps it up until the loader
# gets SIGTERM. Unlike chDB in-process, this server runs
# queries concurrently and speaks the HTTP protocol, so @clickhouse/client and
# the gateway's CLICKHOUSE_URL work against it. It has no authentication
# (user default, no password): it binds 127.0.0.1 only.
#
# Environment (all optional):
#   CLICKHOUSE_PORT           HTTP port on 127.0.0.1 (default: 8123)
#   CLICKHOUSE_STATE_DIR      state file, logs, compiled loader (default: <repo>/.clickhouse)
#   CLICKHOUSE_DATA_DIR       databases and tables, kept across stop and start
#                             (default: $CLICKHOUSE_STATE_DIR/data, so <repo>/.clickhouse/data)
#   CLICKHOUSE_START_TIMEOUT  seconds to wait for GET /ping to answer 200 (default: 60)
#   CLICKHOUSE_LOG_LEVEL      engine log level (default: information)
#   CLICKHOUSE_LIB            libchdb.so to load (default: the one under <repo>/node_modules/@chdb)
#   CLICKHOUSE_TCP_PORT       also open the native protocol on this 127.0.0.1 port (default: off;
#                             9000 with CLICKHOUSE_SHARDS above 1)
#   CLICKHOUSE_SHARDS         how many servers, one shard each (default: 1). Shard i (1-based)
#                             listens on CLICKHOUSE_PORT+i-1 and CLICKHOUSE_TCP_PORT+i-1, keeps
#                             its state in $CLICKHOUSE_STATE_DIR/shard-i (shard 1: the state dir
#                             itself) and its data in its state dir's data (or, with
#                             CLICKHOUSE_DATA_DIR set, that path with -shard-i appended)
#   CLICKHOUSE_CLUSTER        define a cluster of this name on every server, one shard per
#                             server, one replica each (default: core with CLICKHOUSE_SHARDS above
#                             1; needs CLICKHOUSE_TCP_PORT): Distributed tables work; replicated
#                             tables and ON CLUSTER DDL do not (clickhouse-local has no
#                             interserver listener and refuses replicated DDL)
#   CLICKHOUSE_ZOOKEEPER      host:port of a ZooKeeper (npm run zookeeper:start) every server
#                             connects to: KeeperMap tables work (path prefix /keeper_map_tables)
#
# State (pid, port, data dir, logs) is kept in $CLICKHOUSE_STATE_DIR/server.env
# (plain KEY=value lines, read as data, never run); scripts/clickhouse-stop.sh uses
# it. Starting again after a crash or a SIGKILL reuses the same data dir; running
# this script while the servers are up is a no-op, and brings back any that died.
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$SCRIPT_DIR/.." && pwd)"
STATE_DIR="${CLICKHOUSE_STATE_DIR:-$REPO_ROOT/.clickhouse}"

log() { printf 'clickhouse-start: %s\n' "$*"; }
die() { printf 'clickhouse-start: ERROR: %s\n' "$*" >&2; exit 1; }

CLICKHOUSE_PORT="${CLICKHOUSE_PORT:-8123}"
CLICKHOUSE_START_TIMEOUT="${CLICKHOUSE_START_TIMEOUT:-60}"
CLICKHOUSE_LOG_LEVEL="${CLICKHOUSE_LOG_LEVEL:-information}"
CLICKHOUSE_SHARDS="${CLICKHOUSE_SHARDS:-1}"
[[ "$CLICKHOUSE_SHARDS" =~ ^[1-9]$ ]] || die "CLICKHOUSE_SHARDS must be a number from 1 to 9; got \"$CLICKHOUSE_SHARDS\""
CLICKHOUSE_TCP_PORT="${CLICKHOUSE_TCP_PORT:-}"
CLICKHOUSE_CLUSTER="${CLICKHOUSE_CLUSTER:-}"
if (( CLICKHOUSE_SHARDS > 1 )); then
  CLICKHOUSE_TCP_PORT="${CLICKHOUSE_TCP_PORT:-9000}"
  CLICKHOUSE_CLUSTER="${CLICKHOUSE_CLUSTER:-core}"
fi
CLICKHOUSE_ZOOKEEPER="${CLICKHOUSE_ZOOKEEPER:-}"
[[ "$CLICKHOUSE_ZOOKEEPER" =~ ^([A-Za-z0-9.-]+:[0-9]+)?$ ]] || die "CLICKHOUSE_ZOOKEEPER must be host:port; got \"$CLICKHOUSE_ZOOKEEPER\""
[[ "$CLICKHOUSE_TCP_PORT" =~ ^[0-9]*$ ]] || die "CLICKHOUSE_TCP_PORT must be a port number; got \"$CLICKHOUSE_TCP_PORT\""
[[ "$CLICKHOUSE_CLUSTER" =~ ^([a-zA-Z_][a-zA-Z0-9_]*)?$ ]] || die "CLICKHOUSE_CLUSTER must be a plain name; got \"$CLICKHOUSE_CLUSTER\""
[[ -z "$CLICKHOUSE_CLUSTER" || -n "$CLICKHOUSE_TCP_PORT" ]] || die "CLICKHOUSE_CLUSTER needs CLICKHOUSE_TCP_PORT: its shard is reached over the native protocol"
[[ "$CLICKHOUSE_PORT" =~ ^[0-9]+$ ]] || die "CLICKHOUSE_PORT must be a port number; got \"$CLICKHOUSE_PORT\""
[[ "$CLICKHOUSE_START_TIMEOUT" =~ ^[0-9]+$ ]] || die "CLICKHOUSE_START_TIMEOUT must be whole seconds; got \"$CLICKHOUSE_START_TIMEOUT\""

# Several shards: this script once per shard, each a server of its own.
SHARD="${CLICKHOUSE_START_SHARD:-}"
if [[ -z "$SHARD" ]] && (( CLICKHOUSE_SHARDS > 1 )); then
  for i in $(seq 1 "$CLICKHOUSE_SHARDS"); do
    CLICKHOUSE_START_SHARD="$i" CLICKHOUSE_TCP_PORT="$CLICKHOUSE_TCP_PORT" CLICKHOUSE_CLUSTER="$CLICKHOUSE_CLUSTER" \
      bash "${BASH_SOURCE[0]}" || die "shard $i did not start (the shards before it keep running; npm run clickhouse:stop stops them)"
  done
  exit 0
fi
SHARD="${SHARD:-1}"
[[ "$SHARD" =~ ^[1-9]$ ]] && (( SHARD <= CLICKHOUSE_SHARDS )) || die "internal: shard \"$SHARD\" of $CLICKHOUSE_SHARDS"
BASE_PORT="$CLICKHOUSE_PORT" BASE_TCP_PORT="$CLICKHOUSE_TCP_PORT"
CLICKHOUSE_PORT=$((BASE_PORT + SHARD - 1))
[[ -z "$CLICKHOUSE_TCP_PORT" ]] || CLICKHOUSE_TCP_PORT=$((BASE_TCP_PORT + SHARD - 1))
if (( SHARD > 1 )); then
  STATE_DIR="$STATE_DIR/shard-$SHARD"
  [[ -z "${CLICKHOUSE_DATA_DIR:-}" ]] || CLICKHOUSE_DATA_DIR="${CLICKHOUSE_DATA_DIR%/}-shard-$SHARD"
  log() { printf 'clickhouse-start (shard %s): %s\n' "$SHARD" "$*"; }
  die() { printf 'clickhouse-start (shard %s): ERROR: %s\n' "$SHARD" "$*" >&2; exit 1; }
fi

mkdir -p "$STATE_DIR"
STATE_DIR="$(cd "$STATE_DIR" && pwd -P)"
STATE_FILE="$STATE_DIR/server.env"
DATA_DIR="${CLICKHOUSE_DATA_DIR:-$STATE_DIR/data}"
ENGINE_LOG="$STATE_DIR/clickhouse.log"   # the engine's own logger
OUT_LOG="$STATE_DIR/clickhouse.out"      # the loader's stdout and stderr (failed statements land here)

# shellcheck source=scripts/process-lib.sh
source "$SCRIPT_DIR/process-lib.sh"


port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

state_get() { state_read "$STATE_FILE" "$1"; }

# --- already running? -------------------------------------------------------
if [[ -f "$STATE_FILE" ]]; then
  old_pid="$(state_get CLICKHOUSE_PID)"
  old_dir="$(state_get CLICKHOUSE_DATA_DIR)"
  old_port="$(state_get CLICKHOUSE_PORT)"
  # Alive but silent: still starting (another start is under way), or killed a
  # moment ago and still being torn down. Wait until it is one or the other.
  for _ in $(seq 1 100); do
    is_our_clickhouse "$old_pid" "$old_dir" || break
    http_ok "$old_port" /ping && break
    sleep 0.1
  done
  if is_our_clickhouse "$old_pid" "$old_dir"; then
    http_ok "$old_port" /ping || die "pid $old_pid serves $old_dir but does not answer GET /ping on 127.0.0.1:$old_port; run scripts/clickhouse-stop.sh"
    log "already running (pid $old_pid, $(state_get CLICKHOUSE_URL), data $old_dir)"
    if [[ "$old_port" != "$CLICKHOUSE_PORT" ]]; then
      log "note: requested port $CLICKHOUSE_PORT; run scripts/clickhouse-stop.sh first to switch"
    fi
    exit 0
  fi
  log "removing stale state (pid ${old_pid:-?} is gone; its data stays in ${old_dir:-?})"
  rm -f -- "$STATE_FILE"
fi

if port_open "$CLICKHOUSE_PORT"; then
  die "port 127.0.0.1:$CLICKHOUSE_PORT is already in use (set CLICKHOUSE_PORT)"
fi
if [[ -n "$CLICKHOUSE_TCP_PORT" ]] && port_open "$CLICKHOUSE_TCP_PORT"; then
  die "port 127.0.0.1:$CLICKHOUSE_TCP_PORT is already in use (set CLICKHOUSE_TCP_PORT)"
fi

# --- the engine library -------------------------------------------------------
if [[ -n "${CLICKHOUSE_LIB:-}" ]]; then
  [[ -f "$CLICKHOUSE_LIB" ]] || die "CLICKHOUSE_LIB=$CLICKHOUSE_LIB: no such file"
  LIB="$CLICKHOUSE_LIB"
else
  LIB=""
  # npm puts the platform package at the top level, or under chdb/ when it
  # cannot hoist it.
  for candidate in "$REPO_ROOT"/node_modules/@chdb/lib-*/libchdb.so \
                   "$REPO_ROOT"/node_modules/chdb/node_modules/@chdb/lib-*/libchdb.so; do
    if [[ -f "$candidate" ]]; then LIB="$candidate"; break; fi
  done
  [[ -n "$LIB" ]] || die "libchdb.so not found under $REPO_ROOT/node_modules/@chdb (run npm install, or set CLICKHOUSE_LIB)"
fi

# --- the loader ------------------------------------------------------------------
# One loader, in python3 (ctypes): a C twin compiled with gcc used to stand in when
# python3 was missing, but a compiler is no more likely on a bare machine than
# python3, and two copies of one program drift apart.
# The real interpreter, not a version-manager shim: one exec less, and the pid we
# record is the interpreter's from the start.
find_python() { python3 -c 'import ctypes, sys; print(sys.executable)' 2>/dev/null || true; }
PYTHON="$(find_python)"
if [[ -z "$PYTHON" ]]; then
  command -v apt-get >/dev/null || die "python3 (with ctypes) is needed to load libchdb.so, and apt-get is not here to install it"
  log "python3 not found; installing it with apt-get (once)"
  SUDO=(); (( EUID == 0 )) || SUDO=(sudo)
  apt_log="$STATE_DIR/apt-python3.log"
  if ! { "${SUDO[@]}" apt-get install -y --no-install-recommends python3 || { "${SUDO[@]}" apt-get update && "${SUDO[@]}" apt-get install -y --no-install-recommends python3; }; } >"$apt_log" 2>&1; then
    tail -n 10 "$apt_log" >&2 || true
    die "apt-get could not install python3 (log $apt_log)"
  fi
  PYTHON="$(find_python)"
  [[ -n "$PYTHON" ]] || die "python3 was installed but cannot import ctypes"
fi
LOADER=("$PYTHON" "$SCRIPT_DIR/clickhouse/loader.py")

# --- data dir ------------------------------------------------------------------------
mkdir -p "$DATA_DIR"
DATA_DIR="$(cd "$DATA_DIR" && pwd -P)"
if [[ -z "$(ls -A "$DATA_DIR")" ]]; then
  # Marker: clickhouse-stop.sh with CLICKHOUSE_WIPE=1 deletes only dirs that
  # this script created, never a directory someone pointed it at.
  touch "$DATA_DIR/.core-gateway-clickhouse"
fi

# --- engine config -------------------------------------------------------------------
# The logger: the command line has no option for rotation, and the engine
# logs a warning or two a second per MergeTree table while idle, which adds up
# on a server left running. (clickhouse-local takes the level from
# --log-level, not from this file, which would otherwise log at trace.)
# And an uncompressed cache of 2 GiB, which feed pages read through
# (use_uncompressed_cache, src/store/feed-sql.ts): the engine sizes it 0 unless
# configured. Memory is taken as blocks are cached, not at start.
xml_escape() { sed -e 's/&/\&amp;/g' -e 's/</\&lt;/g' -e 's/>/\&gt;/g' <<<"$1"; }
ENGINE_CONFIG="$STATE_DIR/clickhouse-config.xml"
CLUSTER_XML=""
if [[ -n "$CLICKHOUSE_CLUSTER" ]]; then
  # Every server lists every shard, itself included: a Distributed table on any of
  # them reaches all. Shard i's native port is the base TCP port + i - 1.
  SHARDS_XML=""
  for i in $(seq 1 "$CLICKHOUSE_SHARDS"); do
    SHARDS_XML+="<shard><replica><host>127.0.0.1</host><port>$((BASE_TCP_PORT + i - 1))</port></replica></shard>"
  done
  CLUSTER_XML="    <remote_servers><$CLICKHOUSE_CLUSTER>$SHARDS_XML</$CLICKHOUSE_CLUSTER></remote_servers>
    <macros><shard>$(printf '%02d' "$SHARD")</shard><replica>local</replica></macros>"
fi
ZOOKEEPER_XML=""
if [[ -n "$CLICKHOUSE_ZOOKEEPER" ]]; then
  # KeeperMap tables keep their rows under this prefix; the gateway's idempotency keys use one.
  ZOOKEEPER_XML="    <zookeeper><node><host>${CLICKHOUSE_ZOOKEEPER%:*}</host><port>${CLICKHOUSE_ZOOKEEPER##*:}</port></node></zookeeper>
    <keeper_map_path_prefix>/keeper_map_tables</keeper_map_path_prefix>"
fi
cat >"$ENGINE_CONFIG" <<XML
<!-- Generated by scripts/clickhouse-start.sh on each start. -->
<clickhouse>
    <logger>
        <log>$(xml_escape "$ENGINE_LOG")</log>
        <size>10M</size>
        <count>3</count>
    </logger>
$CLUSTER_XML
$ZOOKEEPER_XML
    <uncompressed_cache_size>2147483648</uncompressed_cache_size>
</clickhouse>
XML

# --- launch --------------------------------------------------------------------------
# Only lines written from now on belong to this start (the logs are appended to
# across restarts); failures show those.
ENGINE_LOG_OFFSET="$(stat -c %s "$ENGINE_LOG" 2>/dev/null || echo 0)"
OUT_LOG_OFFSET="$(stat -c %s "$OUT_LOG" 2>/dev/null || echo 0)"
printf '\n==== %s start on 127.0.0.1:%s, data %s\n' "$(date -u +%FT%TZ)" "$CLICKHOUSE_PORT" "$DATA_DIR" >>"$OUT_LOG"

# The loader makes itself a session and process-group leader, so it outlives
# this shell and its terminal, and stop can sweep the whole group. Its stdin
# and stdout are not this shell's: a caller that waits for our output (npm,
# execFile) is not held until the server ends.
(cd "$STATE_DIR" && exec "${LOADER[@]}" "$LIB" \
    --path="$DATA_DIR/" \
    --listen_host=127.0.0.1 \
    --http_port="$CLICKHOUSE_PORT" \
    ${CLICKHOUSE_TCP_PORT:+--tcp_port="$CLICKHOUSE_TCP_PORT"} \
    --config-file="$ENGINE_CONFIG" \
    --log-level="$CLICKHOUSE_LOG_LEVEL") \
    >>"$OUT_LOG" 2>&1 </dev/null &
CLICKHOUSE_PID=$!
disown "$CLICKHOUSE_PID" 2>/dev/null || true

# Plain KEY=value lines, read back with state_read by clickhouse-stop.sh, a re-run of
# this script, the stack scripts and the tests.
state_write "$STATE_FILE" \
  CLICKHOUSE_PID "$CLICKHOUSE_PID" \
  CLICKHOUSE_PORT "$CLICKHOUSE_PORT" \
  CLICKHOUSE_TCP_PORT "$CLICKHOUSE_TCP_PORT" \
  CLICKHOUSE_URL "http://127.0.0.1:$CLICKHOUSE_PORT" \
  CLICKHOUSE_SHARD "$SHARD" \
  CLICKHOUSE_CLUSTER "$CLICKHOUSE_CLUSTER" \
  CLICKHOUSE_DATA_DIR "$DATA_DIR" \
  CLICKHOUSE_LOG "$ENGINE_LOG" \
  CLICKHOUSE_OUT "$OUT_LOG" \
  CLICKHOUSE_LIB "$LIB"

# What the loader and the engine wrote during this start.
new_out() { tail -c "+$((OUT_LOG_OFFSET + 1))" "$OUT_LOG" 2>/dev/null || true; }
new_log() { tail -c "+$((ENGINE_LOG_OFFSET + 1))" "$ENGINE_LOG" 2>/dev/null || true; }

show_logs() {
  {
    echo "---- last lines of $OUT_LOG ----"
    new_out | tail -n 15
    echo "---- last lines of $ENGINE_LOG ----"
    new_log | tail -n 15
  } >&2
}

log "starting ClickHouse (pid $CLICKHOUSE_PID) on 127.0.0.1:$CLICKHOUSE_PORT, data $DATA_DIR"
deadline=$((SECONDS + CLICKHOUSE_START_TIMEOUT))
while :; do
  if ! alive "$CLICKHOUSE_PID"; then
    rm -f -- "$STATE_FILE"
    show_logs
    # Taken between our check and the engine's bind, or bound without listening.
    if new_out | grep -q 'Address already in use'; then
      die "port 127.0.0.1:$CLICKHOUSE_PORT is already in use (set CLICKHOUSE_PORT)"
    fi
    if new_out | grep -q 'Cannot lock file'; then
      die "data dir $DATA_DIR is in use by another ClickHouse process (set CLICKHOUSE_DATA_DIR)"
    fi
    die "server exited during start-up (data kept in $DATA_DIR)"
  fi
  if http_ok "$CLICKHOUSE_PORT" /ping; then
    break
  fi
  if (( SECONDS >= deadline )); then
    # SIGTERM first: the loader turns it into a clean engine shutdown.
    kill -TERM "$CLICKHOUSE_PID" 2>/dev/null || true
    for _ in $(seq 1 50); do alive "$CLICKHOUSE_PID" || break; sleep 0.1; done
    kill -KILL -- "-$CLICKHOUSE_PID" 2>/dev/null || kill -KILL "$CLICKHOUSE_PID" 2>/dev/null || true
    rm -f -- "$STATE_FILE"
    show_logs
    die "server did not answer GET /ping on 127.0.0.1:$CLICKHOUSE_PORT within ${CLICKHOUSE_START_TIMEOUT}s (stopped; data kept in $DATA_DIR)"
  fi
  sleep 0.1
done
log "ready: http://127.0.0.1:$CLICKHOUSE_PORT (log $ENGINE_LOG)"

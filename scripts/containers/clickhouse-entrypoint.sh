#!/usr/bin/env bash
# Entry point of the local ClickHouse image: clickhouse-local with its HTTP listener, from the
# libchdb.so that npm chdb installs (the engine scripts/clickhouse-start.sh serves). It takes the
# official clickhouse/clickhouse-server image's CLICKHOUSE_USER, CLICKHOUSE_PASSWORD and
# CLICKHOUSE_DB, so the compose file configures both alike.
#
# The engine's own queries run as "default", which must exist and has no password; it accepts
# loopback clients only in the users file, but treat this image as a test stand-in, never as a
# server to expose: it is one clickhouse-local process, with no Keeper and no replication.
set -euo pipefail

DATA_DIR=/var/lib/clickhouse
CONFIG_DIR="${CLICKHOUSE_CONFIG_DIR:-/etc/clickhouse-local}"
PORT="${CLICKHOUSE_HTTP_PORT:-8123}"
USER_NAME="${CLICKHOUSE_USER:-}"
xml() { sed -e 's/&/\&amp;/g' -e 's/</\&lt;/g' -e 's/>/\&gt;/g' <<<"$1"; }

extra_user=""
if [[ -n "$USER_NAME" && "$USER_NAME" != default ]]; then
  extra_user="<$(xml "$USER_NAME")><password>$(xml "${CLICKHOUSE_PASSWORD:-}")</password><networks><ip>::/0</ip></networks><profile>default</profile><quota>default</quota><access_management>1</access_management></$(xml "$USER_NAME")>"
fi
cat >"$CONFIG_DIR/users.xml" <<XML
<clickhouse>
  <users>
    <default><password></password><networks><ip>::1</ip><ip>127.0.0.1</ip></networks><profile>default</profile><quota>default</quota></default>
    $extra_user
  </users>
  <profiles><default/></profiles>
  <quotas><default/></quotas>
</clickhouse>
XML
cat >"$CONFIG_DIR/config.xml" <<XML
<clickhouse>
  <user_directories><users_xml><path>$CONFIG_DIR/users.xml</path></users_xml></user_directories>
</clickhouse>
XML

python3 /usr/local/lib/clickhouse/loader.py /usr/lib/libchdb.so --path="$DATA_DIR/" --listen_host=0.0.0.0 \
  --http_port="$PORT" --config-file="$CONFIG_DIR/config.xml" --log-level="${CLICKHOUSE_LOG_LEVEL:-warning}" &
loader=$!
# The loader turns SIGTERM into a clean engine shutdown; pass ours on and wait for it.
trap 'kill -TERM "$loader" 2>/dev/null || true' TERM INT
until wget -qO- "http://127.0.0.1:$PORT/ping" >/dev/null 2>&1; do
  kill -0 "$loader" 2>/dev/null || { wait "$loader" || true; echo "clickhouse-entrypoint: the server exited during start-up" >&2; exit 1; }
  sleep 0.1
done
if [[ -n "${CLICKHOUSE_DB:-}" ]]; then
  wget -qO- --post-data "CREATE DATABASE IF NOT EXISTS \`${CLICKHOUSE_DB//\`/}\`" "http://127.0.0.1:$PORT/" >/dev/null
fi
echo "clickhouse-entrypoint: ready on port $PORT"
# A trapped signal ends `wait` early; wait again until the loader is gone, then take its status.
while kill -0 "$loader" 2>/dev/null; do wait "$loader" || true; done
status=0
wait "$loader" || status=$?
exit "$status"

#!/usr/bin/env bash
# Containers without Docker: installs podman from Debian when missing, configures it for this
# kind of machine, serves the Docker API on a socket, and builds the images the testcontainers
# suite and the compose test use, from what the project already fetches. Nothing is pulled
# from an image registry (none is reachable here); users with Docker skip all of this.
#
# Images built (local names only; the compose file keeps the official images as its defaults):
#   localhost/core-gateway/debian:bookworm      debootstrap --variant=minbase, podman import
#   localhost/core-gateway/node:20-bookworm     that base plus this machine's node and npm
#   localhost/core-gateway/kafka:<version>      that base, Java 17 from Debian, the broker jars
#                                               that scripts/kafka-start.sh fetches from Maven
#   localhost/core-gateway/clickhouse:local     that base, python3, libchdb.so from npm chdb and
#                                               scripts/clickhouse/loader.py (clickhouse-local
#                                               with listeners)
#   localhost/core-gateway/gateway:dev          the project's Dockerfile, on the node image above
#
# Running it again is cheap: installed packages, a live socket and images whose inputs have not
# changed are kept; the gateway's build reuses its cached layers (CONTAINERS_REBUILD=1 rebuilds
# the images). It prints the settings that point the suite and
# compose at the socket and the images as KEY=value lines on stdout, and writes them to
# $CONTAINERS_STATE_DIR/containers.env.
#
# Environment (all optional):
#   CONTAINERS_STATE_DIR  socket, pid, logs, build contexts (default: <repo>/.containers)
#   CONTAINERS_REBUILD=1  rebuild every image even when it exists
#   DEBIAN_MIRROR         mirror for debootstrap (default: the one apt already uses)
#   CONTAINERS_SKIP=gateway  build every image but the gateway's (the suite does not need it)
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$SCRIPT_DIR/.." && pwd)"
STATE_DIR="${CONTAINERS_STATE_DIR:-$REPO_ROOT/.containers}"
mkdir -p "$STATE_DIR"
STATE_DIR="$(cd "$STATE_DIR" && pwd -P)"
SOCKET="$STATE_DIR/podman.sock"
REBUILD="${CONTAINERS_REBUILD:-0}"
SKIP="${CONTAINERS_SKIP:-}"

log() { printf 'containers-setup: %s\n' "$*" >&2; }
die() { printf 'containers-setup: ERROR: %s\n' "$*" >&2; exit 1; }

BASE_IMAGE=localhost/core-gateway/debian:bookworm
NODE_IMAGE=localhost/core-gateway/node:20-bookworm
KAFKA_VERSION="$(sed -n 's:.*<kafka\.version>\([^<]*\)</kafka\.version>.*:\1:p' "$REPO_ROOT/test/infra/kafka/pom.xml" | head -n 1)"
[[ -n "$KAFKA_VERSION" ]] || die "could not read <kafka.version> from test/infra/kafka/pom.xml"
KAFKA_IMAGE="localhost/core-gateway/kafka:$KAFKA_VERSION"
CLICKHOUSE_IMAGE=localhost/core-gateway/clickhouse:local
GATEWAY_IMAGE=localhost/core-gateway/gateway:dev

SUDO=(); (( EUID == 0 )) || SUDO=(sudo)

# --- packages -------------------------------------------------------------------------------
missing=()
command -v podman >/dev/null || missing+=(podman)
command -v runc >/dev/null || missing+=(runc)
command -v debootstrap >/dev/null || missing+=(debootstrap)
if (( ${#missing[@]} > 0 )); then
  command -v apt-get >/dev/null || die "${missing[*]} missing and apt-get is not here to install them (install podman, runc and debootstrap)"
  log "installing ${missing[*]} from Debian (once)"
  apt_log="$STATE_DIR/apt.log"
  if ! { "${SUDO[@]}" apt-get update && DEBIAN_FRONTEND=noninteractive "${SUDO[@]}" apt-get install -y "${missing[@]}"; } >"$apt_log" 2>&1; then
    tail -n 20 "$apt_log" >&2 || true
    die "apt-get could not install ${missing[*]} (log $apt_log)"
  fi
fi

# --- podman settings --------------------------------------------------------------------------
# runc, because crun refuses this machine's hybrid cgroups; ulimits below the hard limits the
# machine lets a process have, because podman's defaults ask for more and the container fails.
CONF=/etc/containers/containers.conf
MARKER='# written by core-gateway scripts/containers-setup.sh'
if [[ ! -f "$CONF" ]] || grep -qF "$MARKER" "$CONF"; then
  hard_nofile="$(ulimit -Hn)"; hard_nproc="$(ulimit -Hu)"
  nofile=4096; nproc=4096
  [[ "$hard_nofile" == unlimited ]] || (( hard_nofile >= nofile )) || nofile="$hard_nofile"
  [[ "$hard_nproc" == unlimited ]] || (( hard_nproc >= nproc )) || nproc="$hard_nproc"
  want="$MARKER
[containers]
default_ulimits = [\"nofile=$nofile:$nofile\", \"nproc=$nproc:$nproc\"]

[engine]
runtime = \"runc\"
"
  # $(...) drops the file's last newline; compare without it.
  if [[ "$(cat "$CONF" 2>/dev/null || true)" != "${want%$'\n'}" ]]; then
    log "writing $CONF (runtime runc, default ulimits nofile=$nofile nproc=$nproc)"
    "${SUDO[@]}" mkdir -p /etc/containers
    printf '%s' "$want" | "${SUDO[@]}" tee "$CONF" >/dev/null
  fi
else
  log "keeping $CONF as it is (not ours); it needs runtime = \"runc\" and default_ulimits at or below the hard limits here"
fi

podman info >/dev/null 2>"$STATE_DIR/podman-info.err" || { cat "$STATE_DIR/podman-info.err" >&2; die "podman does not work here"; }

# --- the Docker API socket ------------------------------------------------------------------------
socket_ok() { curl -fsS --max-time 5 --unix-socket "$SOCKET" http://d/_ping >/dev/null 2>&1; }
if ! socket_ok; then
  old_pid="$(cat "$STATE_DIR/podman-service.pid" 2>/dev/null || true)"
  if [[ "$old_pid" =~ ^[0-9]+$ ]] && tr '\0' ' ' <"/proc/$old_pid/cmdline" 2>/dev/null | grep -qF "$SOCKET"; then
    kill "$old_pid" 2>/dev/null || true
  fi
  rm -f -- "$SOCKET"
  log "serving the Docker API on $SOCKET"
  # Its own session, so it outlives this script and npm; scripts/containers-stop.sh ends it.
  setsid podman system service --time=0 "unix://$SOCKET" >>"$STATE_DIR/podman-service.log" 2>&1 </dev/null &
  echo $! >"$STATE_DIR/podman-service.pid"
  for _ in $(seq 1 100); do socket_ok && break; sleep 0.1; done
  socket_ok || { tail -n 20 "$STATE_DIR/podman-service.log" >&2; die "podman system service did not answer on $SOCKET"; }
fi

have_image() { [[ "$REBUILD" != 1 ]] && podman image exists "$1"; }
timed() { local start=$SECONDS; "$@"; log "  took $((SECONDS - start)) s"; }

# A built image carries a hash of its build context (small files by content, large ones by
# size, and the id of the image it starts FROM), so a changed entry point, jar or engine
# library rebuilds it and an unchanged one is kept.
context_hash() {
  (cd "$1" && { find . -type f -size -1000k -print0 | sort -z | xargs -0 -r sha256sum; find . -type f -size +999k -printf '%P %s\n' | sort; }) | sha256sum | cut -c1-16
}
build_context() {
  local image="$1" ctx="$2" from="$3" hash start
  podman image inspect --format '{{.Id}}' "$from" >"$ctx/.from-id"
  hash="$(context_hash "$ctx")"
  if [[ "$REBUILD" != 1 ]] && [[ "$(podman image inspect --format '{{index .Labels "core-gateway.inputs"}}' "$image" 2>/dev/null || true)" == "$hash" ]]; then
    log "$image is up to date"
  else
    log "building $image"
    start=$SECONDS
    # --force-rm: a failed build leaves no working container behind either.
    podman build -q --force-rm --label "core-gateway.inputs=$hash" -t "$image" -f "$ctx/Containerfile" "$ctx" >/dev/null
    log "  took $((SECONDS - start)) s"
  fi
  rm -rf -- "$ctx"
}

# --- Debian base ------------------------------------------------------------------------------------
debian_mirror() {
  local uri
  uri="$(grep -hs '^URIs:' /etc/apt/sources.list.d/*.sources | awk '{print $2}' | grep -m1 '/debian/\?$' || true)"
  [[ -n "$uri" ]] || uri="$(grep -hs '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list | awk '{print $2}' | grep -m1 '/debian/\?$' || true)"
  printf '%s' "${uri:-http://deb.debian.org/debian}"
}
build_base() {
  local root mirror
  mirror="${DEBIAN_MIRROR:-$(debian_mirror)}"
  root="$STATE_DIR/rootfs"
  "${SUDO[@]}" rm -rf -- "$root"
  log "building $BASE_IMAGE with debootstrap from $mirror"
  if ! "${SUDO[@]}" debootstrap --variant=minbase bookworm "$root" "$mirror" >"$STATE_DIR/debootstrap.log" 2>&1; then
    tail -n 20 "$STATE_DIR/debootstrap.log" >&2
    die "debootstrap failed (log $STATE_DIR/debootstrap.log)"
  fi
  # Same mirror inside, the apt lists dropped (images run apt-get update first, as with Docker's).
  printf 'deb %s bookworm main\ndeb %s bookworm-updates main\n' "$mirror" "$mirror" | "${SUDO[@]}" tee "$root/etc/apt/sources.list" >/dev/null
  "${SUDO[@]}" rm -rf -- "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/archives/*.deb
  "${SUDO[@]}" tar -C "$root" -c . | podman import --quiet --change 'CMD ["/bin/bash"]' - "$BASE_IMAGE" >/dev/null
  "${SUDO[@]}" rm -rf -- "$root"
}
have_image "$BASE_IMAGE" || timed build_base

# --- node (the gateway's build and run base) --------------------------------------------------------
build_node() {
  local ctx node npm_dir
  ctx="$STATE_DIR/context-node"
  rm -rf -- "$ctx"; mkdir -p "$ctx"
  node="$(readlink -f "$(command -v node)")"
  npm_dir="$(cd "$(dirname "$(readlink -f "$(command -v npm)")")/.." && pwd -P)"
  log "$NODE_IMAGE: $node ($(node --version)) and npm $(npm --version)"
  cp -- "$node" "$ctx/node"
  cp -r -- "$npm_dir" "$ctx/npm"
  cat >"$ctx/Containerfile" <<EOF
FROM $BASE_IMAGE
COPY node /usr/local/bin/node
COPY npm /usr/local/lib/node_modules/npm
RUN ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm \\
 && ln -s ../lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx \\
 && groupadd --gid 1000 node && useradd --uid 1000 --gid node --shell /bin/bash --create-home node \\
 && node --version
CMD ["node"]
EOF
  build_context "$NODE_IMAGE" "$ctx" "$BASE_IMAGE"
}
build_node

# --- Kafka --------------------------------------------------------------------------------------------
build_kafka() {
  local ctx libs
  # shellcheck source=scripts/kafka-broker-lib.sh
  source "$SCRIPT_DIR/kafka-broker-lib.sh"
  libs="${KAFKA_CACHE_DIR:-$HOME/.cache/core-gateway/kafka}/libs-$KAFKA_VERSION"
  ensure_kafka_libs "$REPO_ROOT/test/infra/kafka/pom.xml" "$KAFKA_VERSION" "$libs"
  ctx="$STATE_DIR/context-kafka"
  rm -rf -- "$ctx"; mkdir -p "$ctx"
  log "$KAFKA_IMAGE: the Maven jars in $libs"
  cp -rl -- "$libs" "$ctx/libs" 2>/dev/null || cp -r -- "$libs" "$ctx/libs"
  rm -f -- "$ctx/libs/.complete"
  cp -- "$SCRIPT_DIR/containers/kafka-entrypoint.sh" "$SCRIPT_DIR/containers/kafka-broker-api-versions.sh" "$ctx/"
  cat >"$ctx/Containerfile" <<EOF
FROM $BASE_IMAGE
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends openjdk-17-jre-headless \\
 && rm -rf /var/lib/apt/lists/* \\
 && groupadd --gid 1000 appuser && useradd --uid 1000 --gid appuser --no-create-home appuser \\
 && mkdir -p /opt/kafka/bin /opt/kafka/config /var/lib/kafka/data && chown appuser:appuser /opt/kafka/config /var/lib/kafka/data
COPY libs /opt/kafka/libs
COPY kafka-entrypoint.sh /opt/kafka/bin/kafka-entrypoint.sh
COPY kafka-broker-api-versions.sh /opt/kafka/bin/kafka-broker-api-versions.sh
USER appuser
EXPOSE 9092
ENTRYPOINT ["/opt/kafka/bin/kafka-entrypoint.sh"]
EOF
  build_context "$KAFKA_IMAGE" "$ctx" "$BASE_IMAGE"
}
build_kafka

# --- ClickHouse ------------------------------------------------------------------------------------------
build_clickhouse() {
  local ctx lib=""
  for candidate in "$REPO_ROOT"/node_modules/@chdb/lib-*/libchdb.so "$REPO_ROOT"/node_modules/chdb/node_modules/@chdb/lib-*/libchdb.so; do
    if [[ -f "$candidate" ]]; then lib="$candidate"; break; fi
  done
  [[ -n "$lib" ]] || die "libchdb.so not found under node_modules/@chdb (run npm install first)"
  ctx="$STATE_DIR/context-clickhouse"
  rm -rf -- "$ctx"; mkdir -p "$ctx"
  log "$CLICKHOUSE_IMAGE: $lib"
  ln -- "$lib" "$ctx/libchdb.so" 2>/dev/null || cp -- "$lib" "$ctx/libchdb.so"
  cp -- "$SCRIPT_DIR/clickhouse/loader.py" "$SCRIPT_DIR/containers/clickhouse-entrypoint.sh" "$ctx/"
  cat >"$ctx/Containerfile" <<EOF
FROM $BASE_IMAGE
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3 wget \\
 && rm -rf /var/lib/apt/lists/* \\
 && groupadd --gid 101 clickhouse && useradd --uid 101 --gid clickhouse --no-create-home clickhouse \\
 && mkdir -p /var/lib/clickhouse /etc/clickhouse-local && chown clickhouse:clickhouse /var/lib/clickhouse /etc/clickhouse-local
COPY libchdb.so /usr/lib/libchdb.so
COPY loader.py /usr/local/lib/clickhouse/loader.py
COPY clickhouse-entrypoint.sh /usr/local/bin/clickhouse-entrypoint.sh
USER clickhouse
EXPOSE 8123
ENTRYPOINT ["/usr/local/bin/clickhouse-entrypoint.sh"]
EOF
  build_context "$CLICKHOUSE_IMAGE" "$ctx" "$BASE_IMAGE"
}
build_clickhouse

# --- the gateway, from the project's Dockerfile ------------------------------------------------------------
build_gateway() {
  log "building $GATEWAY_IMAGE from the Dockerfile (NODE_IMAGE=$NODE_IMAGE; unchanged layers come from the cache)"
  # The host's npm cache as the build's, so a build here fetches only what the cache lacks.
  mkdir -p "$HOME/.npm"
  podman build -q --force-rm --build-arg "NODE_IMAGE=$NODE_IMAGE" -v "$HOME/.npm:/root/.npm" \
    -t "$GATEWAY_IMAGE" -f "$REPO_ROOT/Dockerfile" "$REPO_ROOT" >/dev/null
}
if [[ "$SKIP" != *gateway* ]]; then
  timed build_gateway
fi

# --- settings for the suite and compose ---------------------------------------------------------------------
ENV_FILE="$STATE_DIR/containers.env"
cat >"$ENV_FILE" <<EOF
DOCKER_HOST=unix://$SOCKET
TESTCONTAINERS_RYUK_DISABLED=true
TEST_KAFKA_IMAGE=$KAFKA_IMAGE
TEST_CLICKHOUSE_IMAGE=$CLICKHOUSE_IMAGE
KAFKA_IMAGE=$KAFKA_IMAGE
CLICKHOUSE_IMAGE=$CLICKHOUSE_IMAGE
GATEWAY_IMAGE=$GATEWAY_IMAGE
NODE_IMAGE=$NODE_IMAGE
EOF
cat "$ENV_FILE"
log "ready: $ENV_FILE"

# Shared by the kafka-*.sh scripts (sourced, not run).

# The state file of node $2 (0-based) under state dir $1. Node 0's is broker.env, the
# one file a single broker has always had, so readers that know only that file (the
# stack scripts, test/support/infra.ts) keep working against node 0 of a cluster.
node_state_file() {
  if [[ "$2" == 0 ]]; then printf '%s/broker.env' "$1"; else printf '%s/broker-%s.env' "$1" "$2"; fi
}

# Prints KEY from a state file without clobbering the caller's variables.
state_value() {
  # shellcheck disable=SC1090
  (source "$1" >/dev/null 2>&1; printf '%s' "${!2-}")
}

# True when the pid is alive and is a kafka.Kafka JVM using our data dir
# (guards against touching an unrelated process that reused the pid).
is_our_broker() {
  local pid="$1" dir="$2" cmd
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  kill -0 "$pid" 2>/dev/null || return 1
  cmd="$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null || ps -o args= -p "$pid" 2>/dev/null || true)"
  [[ "$cmd" == *kafka.Kafka* && "$cmd" == *"$dir"* ]]
}

# Fetches the Kafka jars of one version into LIBS_DIR through the repo's fetch-only pom,
# once: a run that fails half-way leaves no directory that looks complete.
# Needs log() and die() from the caller.
ensure_kafka_libs() {
  local pom="$1" version="$2" libs_dir="$3" cache_dir tmp_libs mvn_log fetch_lock
  [[ -f "$libs_dir/.complete" ]] && return 0
  command -v mvn >/dev/null || die "mvn not found (needed once to fetch Kafka $version)"
  cache_dir="$(dirname "$libs_dir")"
  mkdir -p "$cache_dir"
  # Suites run at once (scripts/integration-test.sh): the first fetches, the others wait for
  # it and find the jars there, instead of replacing a directory a broker is running from.
  exec {fetch_lock}>"$cache_dir/.fetch-$version.lock"
  flock "$fetch_lock"
  if [[ -f "$libs_dir/.complete" ]]; then exec {fetch_lock}>&-; return 0; fi
  log "fetching Kafka $version jars from Maven into $libs_dir"
  tmp_libs="$(mktemp -d "$cache_dir/.libs-$version.XXXXXX")"
  mvn_log="$tmp_libs.mvn.log"
  if ! mvn -q -B -f "$pom" dependency:copy-dependencies \
        -Dkafka.version="$version" -Dkafka.libs.dir="$tmp_libs" >"$mvn_log" 2>&1; then
    sed 's/\x1b\[[0-9;]*m//g' "$mvn_log" | grep -v '^\s*$' | tail -n 20 >&2 || true
    rm -rf -- "$tmp_libs" "$mvn_log"
    die "maven could not fetch org.apache.kafka:kafka_2.13:$version and its dependencies"
  fi
  rm -f -- "$mvn_log"
  ls "$tmp_libs"/kafka_2.13-*.jar >/dev/null 2>&1 || { rm -rf -- "$tmp_libs"; die "no kafka_2.13 jar was fetched"; }
  touch "$tmp_libs/.complete"
  rm -rf -- "$libs_dir"
  mv -- "$tmp_libs" "$libs_dir"
  exec {fetch_lock}>&-
}

# For a program on the Kafka Java client (the probe, the tests' field producer): sets JAVA
# and LIBS_DIR, the broker's own jars (kafka-clients and its codecs among them), fetched
# once through the pom $1 if no run has yet. Needs log() and die() from the caller.
kafka_client_classpath() {
  local pom="$1" version
  version="${KAFKA_VERSION:-$(sed -n 's:.*<kafka\.version>\([^<]*\)</kafka\.version>.*:\1:p' "$pom" | head -n 1)}"
  LIBS_DIR="${KAFKA_CACHE_DIR:-$HOME/.cache/core-gateway/kafka}/libs-$version"
  JAVA="${JAVA_HOME:+$JAVA_HOME/bin/}java"
  command -v "$JAVA" >/dev/null || die "java not found (Java 17+ is required)"
  ensure_kafka_libs "$pom" "$version" "$LIBS_DIR"
}

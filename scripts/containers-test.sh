#!/usr/bin/env bash
# npm run test:integration:containers: the integration suites in testcontainers mode and the
# production shape as containers, on podman here (scripts/containers-setup.sh) or on whatever
# engine DOCKER_HOST names when CONTAINERS_ENGINE=docker. Fails when the engine cannot be set up
# and when a container the run started is still there afterwards, pass or fail.
set -euo pipefail
SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$SCRIPT_DIR/.." && pwd)"
cd "$REPO_ROOT"

log() { printf 'containers-test: %s\n' "$*" >&2; }

if [[ "${CONTAINERS_ENGINE:-podman}" == podman ]]; then
  started=$SECONDS
  CONTAINERS_SKIP=gateway bash scripts/containers-setup.sh >/dev/null || { log "ERROR: podman could not be set up; the container suites cannot run"; exit 1; }
  log "podman and the Kafka and ClickHouse images ready in $((SECONDS - started)) s"
  # The socket and the images, as plain KEY=value lines (read as data, never run).
  while IFS='=' read -r key value; do
    if [[ "$key" =~ ^[A-Z_]+$ ]]; then export "$key=$value"; fi
  done <"${CONTAINERS_STATE_DIR:-.containers}/containers.env"
  # The gateway's image (an npm install and a build inside podman, minutes on a fresh machine)
  # builds while the suites that need only Kafka's and ClickHouse's images run; the compose
  # test waits for it. Started after the settings above were read: the setup writes them again.
  gateway_build_log="${CONTAINERS_STATE_DIR:-.containers}/gateway-build.log"
  bash scripts/containers-setup.sh >/dev/null 2>"$gateway_build_log" &
  gateway_build=$!
  trap 'bash scripts/containers-stop.sh' EXIT
fi
CLI="${CONTAINER_CLI:-podman}"

# Containers this run starts carry these labels: testcontainers' own, and the compose test's.
leftovers() {
  { "$CLI" ps -a -q --filter label=org.testcontainers=true; "$CLI" ps -a -q --filter label=core-gateway.test=compose; } | sort -u
}
before="$(leftovers)"
[[ -z "$before" ]] || log "note: containers from an earlier run are present: $(tr '\n' ' ' <<<"$before")"

status=0
run() {
  local title="$1"; shift
  local started=$SECONDS
  log "$title"
  "$@" || status=1
  log "$title: $((SECONDS - started)) s"
}
export TEST_INFRA=testcontainers TEST_STORES=clickhouse-server
run 'API suite on the ClickHouse server container' \
  npx mocha --require test/integration/api/gateways.ts 'test/integration/api/**/*.test.ts'
run 'Kafka suite, end-to-end and crash cases, on the Kafka and ClickHouse containers' \
  npx mocha --timeout 60000 --require test/integration/kafka/kafka-suite.ts \
    test/integration/kafka/commands-to-kafka.test.ts test/integration/kafka/event-ingestion.test.ts \
    test/integration/kafka/broker-crash.test.ts test/integration/kafka/clickhouse-server-crash.test.ts
unset TEST_INFRA TEST_STORES
if [[ -n "${gateway_build:-}" ]]; then
  started=$SECONDS
  wait "$gateway_build" || { log "ERROR: the gateway image could not be built:"; cat "$gateway_build_log" >&2; status=1; }
  log "the gateway image ready $((SECONDS - started)) s after the suites before it ended"
fi
run 'the gateway image and the compose file' \
  npx mocha --timeout 300000 'test/integration/containers/**/*.test.ts'

after="$(comm -13 <(sort <<<"$before") <(leftovers))"
if [[ -n "$after" ]]; then
  log "ERROR: the run left containers behind: $(tr '\n' ' ' <<<"$after"); removing them"
  "$CLI" rm -f $after >/dev/null || true
  status=1
fi
exit "$status"

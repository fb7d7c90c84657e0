#!/usr/bin/env bash
# npm run test:integration: every integration suite, in lanes that run at once.
#
# The suites spend most of their time waiting (on brokers electing, consumers rebalancing,
# containers starting), not computing: run one after another they kept two cores about a
# fifth busy. Each suite starts its own servers on free ports in its own state directories,
# so suites in different lanes share nothing but the machine. Within a lane they run one
# after another. A lane goes on after a failed suite, so one run reports every failure.
#
# Each lane writes to its own log under TEST_LOG_DIR (default .test-logs/); a lane's log is
# printed whole when the lane ends, and a table of every suite's time at the end.
#
#   TEST_LANES=serial   run the lanes one after another (a one-core machine, or a bisect)
set -uo pipefail
SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$SCRIPT_DIR/.."

LOG_DIR="${TEST_LOG_DIR:-.test-logs}"
rm -rf -- "$LOG_DIR" && mkdir -p "$LOG_DIR"

# Balanced by the suites' times in a run of the lanes (the table each run prints); each lane about a third.
LANES=(
  'kafka'
  'api cluster identity-provider stack'
  'containers kafka-security kafka-cluster'
)

log() { printf 'integration-test: %s\n' "$*" >&2; }

run_lane() {
  local lane="$1" suite started status=0
  for suite in ${LANES[lane]}; do
    started=$SECONDS
    printf '\n=== %s\n' "$suite" >>"$LOG_DIR/lane-$lane.log"
    log "lane $lane: $suite started"
    if npm run --silent "test:integration:$suite" >>"$LOG_DIR/lane-$lane.log" 2>&1; then
      printf '%s\tpassed\t%d\n' "$suite" $((SECONDS - started)) >>"$LOG_DIR/times"
    else
      status=1
      printf '%s\tFAILED\t%d\n' "$suite" $((SECONDS - started)) >>"$LOG_DIR/times"
    fi
    log "lane $lane: $suite ended after $((SECONDS - started)) s"
  done
  return "$status"
}

started=$SECONDS
for lane in "${!LANES[@]}"; do
  if [[ "${TEST_LANES:-}" == serial ]]; then
    run_lane "$lane"; echo $? >"$LOG_DIR/lane-$lane.status"
  else
    { run_lane "$lane"; echo $? >"$LOG_DIR/lane-$lane.status"; } &
  fi
done

# Print each lane's log as soon as it ends, so a hung lane does not hide the others' results.
printed=()
while ((${#printed[@]} < ${#LANES[@]})); do
  for lane in "${!LANES[@]}"; do
    if [[ -f "$LOG_DIR/lane-$lane.status" && " ${printed[*]} " != *" $lane "* ]]; then
      printf '\n######## lane %s: %s\n' "$lane" "${LANES[lane]}"
      cat "$LOG_DIR/lane-$lane.log"
      printed+=("$lane")
    fi
  done
  ((${#printed[@]} < ${#LANES[@]})) && wait -n
done
wait

failed=0
for lane in "${!LANES[@]}"; do [[ "$(cat "$LOG_DIR/lane-$lane.status")" == 0 ]] || failed=1; done
printf '\nsuite\tresult\tseconds\n'
cat "$LOG_DIR/times"
printf 'all lanes\t%s\t%d\n' "$([[ $failed == 0 ]] && echo passed || echo FAILED)" $((SECONDS - started))
exit "$failed"

#!/usr/bin/env bash
# Stands in for the official image's health-check command (kafka-broker-api-versions.sh
# --bootstrap-server HOST:PORT). The Maven jars carry no kafka-tools, so it asks the broker for
# its default configs through kafka.admin.ConfigCommand from the broker's own jar: an answer
# means the broker serves admin requests, which is what the health check wants to know.
set -euo pipefail
bootstrap=localhost:9092
while (( $# > 0 )); do
  case "$1" in
    --bootstrap-server) bootstrap="$2"; shift 2 ;;
    *) shift ;;
  esac
done
exec java -Xmx128m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Dlog4j2.level=ERROR -cp '/opt/kafka/libs/*' \
  kafka.admin.ConfigCommand --bootstrap-server "$bootstrap" --describe --entity-type brokers --entity-default

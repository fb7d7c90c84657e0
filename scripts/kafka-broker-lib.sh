# Shared by kafka-start.sh and kafka-stop.sh (sourced, not run).

# True when the pid is alive and is a kafka.Kafka JVM using our data dir
# (guards against touching an unrelated process that reused the pid).
is_our_broker() {
  local pid="$1" dir="$2" cmd
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  kill -0 "$pid" 2>/dev/null || return 1
  cmd="$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null || ps -o args= -p "$pid" 2>/dev/null || true)"
  [[ "$cmd" == *kafka.Kafka* && "$cmd" == *"$dir"* ]]
}

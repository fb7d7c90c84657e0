#!/usr/bin/env bash
# Stops what scripts/containers-setup.sh left running: the Docker-API socket's podman service.
# The images stay (the next setup reuses them); `podman rmi` removes them.
set -euo pipefail
SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
STATE_DIR="${CONTAINERS_STATE_DIR:-$SCRIPT_DIR/../.containers}"
[[ -d "$STATE_DIR" ]] || exit 0
STATE_DIR="$(cd "$STATE_DIR" && pwd -P)"
pid="$(cat "$STATE_DIR/podman-service.pid" 2>/dev/null || true)"
# Only our service: the pid must still be a podman serving our socket.
if [[ "$pid" =~ ^[0-9]+$ ]] && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF "$STATE_DIR/podman.sock"; then
  kill -TERM "$pid"
  for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
  printf 'containers-stop: stopped the podman service (pid %s)\n' "$pid"
fi
rm -f -- "$STATE_DIR/podman-service.pid" "$STATE_DIR/podman.sock"

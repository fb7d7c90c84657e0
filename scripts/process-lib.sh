# Shared by the start and stop scripts (sourced, not run).

# True while the process is there. A zombie whose last thread has exited counts as
# gone: this machine's init reaps orphans only now and then, and until it does,
# kill -0 still succeeds. A thread-group leader turns zombie as soon as its own
# thread exits, while its other threads may still hold the process's sockets (a
# SIGKILLed JVM or ClickHouse engine looks like that for a while), so it is gone
# only when no task is left but the leader.
alive() {
  local stat tasks
  kill -0 "$1" 2>/dev/null || return 1
  stat="$(cat "/proc/$1/stat" 2>/dev/null)" || return 1
  [[ "${stat##*) }" != Z* ]] && return 0
  tasks=("/proc/$1/task"/*)
  (( ${#tasks[@]} > 1 ))
}

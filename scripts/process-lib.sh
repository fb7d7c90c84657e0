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

# True when GET PATH on 127.0.0.1:PORT answers 200 (bash only: no curl needed).
http_ok() {
  (
    exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
    printf 'GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' "$2" >&3
    IFS= read -r -t 5 status_line <&3 || exit 1
    [[ "$status_line" == "HTTP/1."?" 200"* ]]
  ) 2>/dev/null
}

# True when the pid is alive and is a loader of libchdb.so serving exactly data dir $2
# (a pid that exited may since belong to anything).
is_our_clickhouse() {
  local pid="$1" dir="$2" args
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  alive "$pid" || return 1
  args="$(tr '\0' '\n' <"/proc/$pid/cmdline" 2>/dev/null)" || return 1
  grep -q 'libchdb' <<<"$args" && grep -qxF -- "--path=$dir/" <<<"$args"
}

# True when the pid is alive, runs $3 (dist/src/main.js) and carries the stack marker
# CORE_GATEWAY_STACK=$2 in its environment.
is_stack_node() {
  local pid="$1" marker="$2" main_js="$3" args environ
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  alive "$pid" || return 1
  args="$(tr '\0' '\n' <"/proc/$pid/cmdline" 2>/dev/null)" || return 1
  environ="$(tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null)" || return 1
  grep -qxF -- "$main_js" <<<"$args" && grep -qxF -- "CORE_GATEWAY_STACK=$marker" <<<"$environ"
}

# Prints KEY's value from a state file of plain KEY=value lines (written with
# state_write), without running the file: a state file is data, never code.
state_read() {
  local file="$1" key="$2" line
  [[ -f "$file" ]] || return 0
  while IFS= read -r line || [[ -n "$line" ]]; do
    if [[ "${line%%=*}" == "$key" ]]; then printf '%s' "${line#*=}"; return 0; fi
  done <"$file"
}

# Writes KEY=value lines (arguments KEY VALUE KEY VALUE ...) to a state file. A value
# with a line break could not be read back line by line, so it is refused.
state_write() {
  local file="$1" tmp; shift
  tmp="$file.tmp.$$"
  : >"$tmp"
  while (( $# >= 2 )); do
    [[ "$2" != *$'\n'* ]] || { rm -f -- "$tmp"; printf 'state value of %s has a line break\n' "$1" >&2; return 1; }
    printf '%s=%s\n' "$1" "$2" >>"$tmp"
    shift 2
  done
  mv -f -- "$tmp" "$file"
}

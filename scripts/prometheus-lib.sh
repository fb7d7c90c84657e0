# Shared by scripts/prometheus-start.sh and scripts/check-ops.ts (sourced, not run).
#
# ensure_prometheus: puts prometheus and promtool on PATH when they are missing, from
# Debian's `prometheus` package (2.42.0 on bookworm), without recommended packages. Measured
# on bookworm: 13 packages, 22.8 MB to download and about 324 MB installed. The package
# itself is 19 MB and 96 MB installed; the libjs-* packages of its web console make up the
# rest, libjs-moment-timezone alone 218 MB. The install took 53 s here. It needs root and
# apt-get; without them it names what to install. The package's own service is left as the
# system starts it (not at all in a container with policy-rc.d). The project's scripts run
# their own Prometheus on loopback ports and never touch that one.

prometheus_tools_present() { command -v prometheus >/dev/null && command -v promtool >/dev/null; }

ensure_prometheus() {
  prometheus_tools_present && return 0
  if [[ "$(id -u)" != 0 ]] || ! command -v apt-get >/dev/null; then
    printf 'prometheus-lib: ERROR: prometheus and promtool are not on PATH; install them (Debian: apt-get install --no-install-recommends prometheus) or run this as root on Debian, where it installs them\n' >&2
    return 1
  fi
  printf 'prometheus-lib: installing Debian'"'"'s prometheus package (prometheus and promtool; about 19 MB)\n' >&2
  local log
  log="$(mktemp)"
  # Two test runs side by side (two clones on one machine) install at the same moment. apt
  # waits for dpkg's lock when told to, but `apt-get update` fails at once on the package
  # lists' lock, so the project's installs queue on a lock of their own first.
  if ! ( flock -w 600 9 && apt-get -o DPkg::Lock::Timeout=300 update &&
         DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y --no-install-recommends prometheus ) \
       9>"${TMPDIR:-/tmp}/core-gateway-apt.lock" >"$log" 2>&1; then
    tail -n 20 "$log" >&2
    rm -f -- "$log"
    printf 'prometheus-lib: ERROR: apt-get could not install prometheus\n' >&2
    return 1
  fi
  rm -f -- "$log"
  prometheus_tools_present || { printf 'prometheus-lib: ERROR: the prometheus package installed no prometheus or promtool on PATH\n' >&2; return 1; }
}

"""Serve ClickHouse's HTTP interface from chDB's libchdb.so until SIGTERM.

Usage: python3 loader.py LIBCHDB [clickhouse-local options...]
(scripts/clickhouse-start.sh passes --path, --listen_host, --http_port and the
logger options.)

The library's command-line entry, chdb_query_cmdline, runs clickhouse-local,
whose listeners live only as long as its query. The query below opens the HTTP
listener and then reads stdin to its end, so the server lives exactly as long
as the engine's stdin stays open. This process owns the only write end of that
stdin and closes it on SIGTERM, SIGINT or SIGHUP; the query then ends and
clickhouse-local shuts down the way it does after any query, with its tables
flushed. The engine leaves SIGTERM at its default action, which would end the
process mid-write, so a plain SIGTERM must never reach it unhandled.
"""

import ctypes
import os
import signal
import sys
import threading

# count() prints a number when stdin ends; a failed statement prints nothing.
# With a --tcp_port the native listener opens too (Distributed tables use it).
QUERY = "SYSTEM START LISTEN HTTP; SELECT count() FROM file('/dev/stdin', LineAsString)"
QUERY_TCP = "SYSTEM START LISTEN HTTP; SYSTEM START LISTEN TCP; SELECT count() FROM file('/dev/stdin', LineAsString)"


def main() -> int:
    if len(sys.argv) < 2:
        print("usage: loader.py LIBCHDB [clickhouse-local options...]", file=sys.stderr)
        return 2
    lib_path = sys.argv[1]

    # A session of our own: the starting shell, its terminal and its process
    # group can go away without taking the server along, and the stop script
    # can clean up by process group without touching its caller.
    try:
        os.setsid()
    except OSError:
        pass  # already a session leader

    read_end, write_end = os.pipe()
    os.dup2(read_end, 0)
    os.close(read_end)

    # The main thread will be inside the engine call, where a Python signal
    # handler cannot run until the call returns. The interpreter's C-level
    # handler still writes to the wakeup fd at once, from whichever thread
    # the kernel picked, and the watcher thread acts on that.
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, lambda *_: None)
        # SA_RESTART: the interrupted thread may be one of the engine's, whose
        # blocking calls do not all expect EINTR.
        signal.siginterrupt(signum, False)

    def close_stdin_on_signal() -> None:
        os.read(wake_r, 1)
        os.close(write_end)

    threading.Thread(target=close_stdin_on_signal, name="stop-watcher", daemon=True).start()

    try:
        lib = ctypes.CDLL(lib_path)
        query_cmdline = lib.chdb_query_cmdline
        result_error = lib.chdb_result_error
        result_length = lib.chdb_result_length
    except (OSError, AttributeError) as error:
        print(f"cannot load {lib_path}: {error}", file=sys.stderr)
        return 1
    query_cmdline.restype = ctypes.c_void_p
    query_cmdline.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
    result_error.restype = ctypes.c_char_p
    result_error.argtypes = [ctypes.c_void_p]
    result_length.restype = ctypes.c_size_t
    result_length.argtypes = [ctypes.c_void_p]

    query = QUERY_TCP if any(a.startswith("--tcp_port=") for a in sys.argv[2:]) else QUERY
    args = [b"clickhouse"] + [os.fsencode(a) for a in sys.argv[2:]] + [b"--query=" + query.encode()]
    argv = (ctypes.c_char_p * (len(args) + 1))(*args, None)
    print(f"clickhouse: serving (pid {os.getpid()})", flush=True)
    result = query_cmdline(len(args), argv)
    if not result:
        print("clickhouse: chdb_query_cmdline returned no result", file=sys.stderr)
        return 1
    error = result_error(result)
    if error:
        print(error.decode("utf-8", "replace").rstrip(), file=sys.stderr)
        return 1
    # A failed statement is printed to stderr by the engine itself and leaves
    # chdb_result_error empty; only the missing count() output tells.
    if result_length(result) == 0:
        print("clickhouse: stopped on the error above", file=sys.stderr)
        return 1
    print("clickhouse: stopped", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

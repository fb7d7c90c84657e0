/*
 * Serve ClickHouse's HTTP interface from chDB's libchdb.so until SIGTERM.
 *
 * Usage: loader LIBCHDB [clickhouse-local options...]
 *
 * The same program as loader.py, for machines without python3;
 * scripts/clickhouse-start.sh compiles it once into its state directory.
 * See loader.py for why the engine's stdin is a pipe that this process closes
 * on SIGTERM, SIGINT or SIGHUP instead of letting the signal end the engine.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* count() prints a number when stdin ends; a failed statement prints nothing.
 * With a --tcp_port the native listener opens too (Distributed tables use it). */
static const char QUERY_OPTION[] =
    "--query=SYSTEM START LISTEN HTTP; SELECT count() FROM file('/dev/stdin', LineAsString)";
static const char QUERY_OPTION_TCP[] =
    "--query=SYSTEM START LISTEN HTTP; SYSTEM START LISTEN TCP; SELECT count() FROM file('/dev/stdin', LineAsString)";

typedef void *(*query_cmdline_fn)(int, char **);
typedef const char *(*result_error_fn)(void *);
typedef size_t (*result_length_fn)(void *);

static int stdin_writer = -1;

/* Runs on whichever thread the kernel picked, possibly one of the engine's;
 * close() is async-signal-safe, and the exchange makes a second signal a no-op. */
static void close_stdin(int signum)
{
    (void)signum;
    int fd = __atomic_exchange_n(&stdin_writer, -1, __ATOMIC_SEQ_CST);
    if (fd >= 0)
        close(fd);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s LIBCHDB [clickhouse-local options...]\n", argv[0]);
        return 2;
    }

    /* Own session: see loader.py. Fails only if already a session leader. */
    (void)setsid();

    int fds[2];
    if (pipe(fds) != 0 || dup2(fds[0], 0) < 0) {
        perror("clickhouse: stdin pipe");
        return 1;
    }
    close(fds[0]);
    fcntl(fds[1], F_SETFD, FD_CLOEXEC);
    stdin_writer = fds[1];

    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = close_stdin;
    /* The interrupted thread may be the engine's; not all of its calls retry on EINTR. */
    action.sa_flags = SA_RESTART;
    sigemptyset(&action.sa_mask);
    sigaction(SIGTERM, &action, NULL);
    sigaction(SIGINT, &action, NULL);
    sigaction(SIGHUP, &action, NULL);

    void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        fprintf(stderr, "cannot load %s: %s\n", argv[1], dlerror());
        return 1;
    }
    query_cmdline_fn query_cmdline = (query_cmdline_fn)dlsym(lib, "chdb_query_cmdline");
    result_error_fn result_error = (result_error_fn)dlsym(lib, "chdb_result_error");
    result_length_fn result_length = (result_length_fn)dlsym(lib, "chdb_result_length");
    if (query_cmdline == NULL || result_error == NULL || result_length == NULL) {
        fprintf(stderr, "%s lacks chdb_query_cmdline/chdb_result_error/chdb_result_length\n", argv[1]);
        return 1;
    }

    int engine_argc = argc; /* "clickhouse", the options after LIBCHDB, the query */
    char **engine_argv = calloc((size_t)engine_argc + 1, sizeof *engine_argv);
    if (engine_argv == NULL) {
        perror("clickhouse: calloc");
        return 1;
    }
    engine_argv[0] = "clickhouse";
    int tcp = 0;
    for (int i = 2; i < argc; i++) {
        engine_argv[i - 1] = argv[i];
        if (strncmp(argv[i], "--tcp_port=", 11) == 0)
            tcp = 1;
    }
    engine_argv[argc - 1] = (char *)(tcp ? QUERY_OPTION_TCP : QUERY_OPTION);

    printf("clickhouse: serving (pid %d)\n", (int)getpid());
    fflush(stdout);
    void *result = query_cmdline(engine_argc, engine_argv);
    if (result == NULL) {
        fprintf(stderr, "clickhouse: chdb_query_cmdline returned no result\n");
        return 1;
    }
    const char *error = result_error(result);
    if (error != NULL && error[0] != '\0') {
        fprintf(stderr, "%s\n", error);
        return 1;
    }
    /* A failed statement is printed to stderr by the engine and leaves the error empty. */
    if (result_length(result) == 0) {
        fprintf(stderr, "clickhouse: stopped on the error above\n");
        return 1;
    }
    printf("clickhouse: stopped\n");
    return 0;
}

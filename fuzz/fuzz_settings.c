/* libFuzzer harness for what mgpu reads from the user before anything
 * runs: the MGPU_* settings (base/config.c), mgpu-run's command line on top
 * of them (src/run/launcher_options.c) and the MPI launchers' variables
 * (src/run/mpi_ranks.c). The input is environment lines "NAME=VALUE" up to
 * a line "--", then one argument per line. Each parser must answer with
 * settings or a one-line error, never read past its strings, and keep its
 * promises: counts and lists in range, a program index inside argv. */
#include "base/config.h"
#include "fuzz/fuzz_input.h"
#include "src/run/launcher_options.h"
#include "src/run/mpi_ranks.h"

#define MAX_LINES 64

static char *names[MAX_LINES], *values[MAX_LINES];
static int nenv;

static const char *fuzz_getenv(const char *name)
{
    for (int i = nenv - 1; i >= 0; i--)
        if (strcmp(names[i], name) == 0)
            return values[i];
    return NULL;
}

static void one_line(int r, const char *err)
{
    if (r != 0)
        fuzz_require(err[0] != '\0' && strchr(err, '\n') == NULL, "an error is one line");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size);
    char *argv[MAX_LINES + 2];
    int argc = 0;
    nenv = 0;
    argv[argc++] = "mgpu-run";
    bool in_env = true;
    for (char *line = text, *next; line != NULL && argc < MAX_LINES; line = next) {
        next = strchr(line, '\n');
        if (next != NULL)
            *next++ = '\0';
        if (in_env && strcmp(line, "--") == 0) {
            in_env = false;
            continue;
        }
        char *eq = strchr(line, '=');
        if (in_env && eq != NULL && nenv < MAX_LINES) {
            *eq = '\0';
            names[nenv] = line;
            values[nenv++] = eq + 1;
        } else if (!in_env) {
            argv[argc++] = line;
        }
    }
    argv[argc] = NULL;

    char err[512] = "";
    struct mgpu_config cfg;
    int r = mgpu_config_parse(&cfg, fuzz_getenv, err, sizeof err);
    one_line(r, err);
    if (r == 0) {
        struct launcher_options o;
        err[0] = '\0';
        int l = launcher_parse(argc, argv, &cfg, &o, err, sizeof err);
        one_line(l, err);
        if (l == 0) {
            fuzz_require(o.program_index >= 0 && o.program_index <= argc,
                         "the program's index is inside argv");
            fuzz_require(o.nprobes >= 0 && o.nprobes <= MGPU_MAX_PROBES, "probes in range");
            fuzz_require(o.gpus_len >= 0 && o.gpus_len <= MGPU_MAX_GPUS, "a list in range");
        }
    }
    struct mgpu_mpi_rank rank;
    err[0] = '\0';
    int m = mgpu_mpi_rank_detect(fuzz_getenv, &rank, err, sizeof err);
    one_line(m, err);
    if (m == 0 && rank.found)
        fuzz_require(rank.local_rank >= 0 && rank.local_rank < rank.local_size,
                     "the local rank is inside the node's");
    free(text);
    return 0;
}

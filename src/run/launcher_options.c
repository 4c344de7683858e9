/* Owns parsing mgpu-run's options and its --help text. Options end at the
 * first argument that is not one, or at "--": the rest is the program's. */
#include "src/run/launcher_options.h"

#include <stdio.h>
#include <string.h>

static int value_of(int argc, char *const argv[], int *i, const char *flag, const char **value,
                    char *err, size_t errlen)
{
    const char *arg = argv[*i];
    size_t n = strlen(flag);
    if (strncmp(arg, flag, n) == 0 && arg[n] == '=') {
        *value = arg + n + 1;
        return 0;
    }
    if (flag[1] != '-' && arg[n] != '\0') { /* -n4 */
        *value = arg + n;
        return 0;
    }
    if (*i + 1 >= argc) {
        snprintf(err, errlen, "%s needs a value; see mgpu-run --help", flag);
        return -1;
    }
    *value = argv[++*i];
    return 0;
}

/* The file name that `flag` takes; `example` goes into the message for an
 * empty one. */
static int file_value(int argc, char *const argv[], int *i, const char *flag, const char *example,
                      const char **out, char *err, size_t errlen)
{
    const char *value;
    if (value_of(argc, argv, i, flag, &value, err, errlen) != 0)
        return -1;
    if (*value == '\0') {
        snprintf(err, errlen, "%s needs a file name, e.g. %s %s", flag, flag, example);
        return -1;
    }
    *out = value;
    return 0;
}

static bool is_flag(const char *arg, const char *flag)
{
    size_t n = strlen(flag);
    if (strncmp(arg, flag, n) != 0)
        return false;
    if (arg[n] == '\0' || arg[n] == '=')
        return true;
    return flag[1] != '-' && strlen(flag) == 2 && flag[1] == 'n'; /* -n4 */
}

int launcher_parse(int argc, char *const argv[], const struct mgpu_config *env,
                   struct launcher_options *o, char *err, size_t errlen)
{
    memset(o, 0, sizeof *o);
    o->ngpus = env->ngpus;
    o->gpus_len = env->gpus_len;
    memcpy(o->gpus, env->gpus, sizeof o->gpus);
    o->count_source = "MGPU_NGPUS=";
    o->list_source = "MGPU_GPUS";
    o->report = env->report;
    o->trace = env->trace_path[0] ? env->trace_path : NULL;
    o->topology = env->topology_path[0] ? env->topology_path : NULL;
    o->verbose = env->verbose;

    bool count_given = false, list_given = false;
    int i;
    for (i = 1; i < argc; i++) {
        const char *arg = argv[i];
        const char *value = NULL;
        if (strcmp(arg, "--") == 0) {
            i++;
            break;
        }
        if (arg[0] != '-' || arg[1] == '\0')
            break;
        if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
            o->help = true;
        } else if (strcmp(arg, "-V") == 0 || strcmp(arg, "--version") == 0) {
            o->version = true;
        } else if (strcmp(arg, "--report") == 0) {
            o->report = true;
        } else if (strcmp(arg, "--blas") == 0) {
            o->host_blas = true;
        } else if (strcmp(arg, "-v") == 0 || strcmp(arg, "--verbose") == 0) {
            o->verbose = o->verbose < 2 ? o->verbose + 1 : 2;
        } else if (strcmp(arg, "-vv") == 0) {
            o->verbose = 2;
        } else if (is_flag(arg, "-n") || is_flag(arg, "--ngpus")) {
            const char *flag = arg[1] == '-' ? "--ngpus" : "-n";
            if (value_of(argc, argv, &i, flag, &value, err, errlen) != 0)
                return -1;
            if (mgpu_parse_gpu_count(value, "-n ", &o->ngpus, err, errlen) != 0)
                return -1;
            o->count_source = "-n ";
            o->gpus_len = 0;
            count_given = true;
        } else if (is_flag(arg, "--gpus")) {
            if (value_of(argc, argv, &i, "--gpus", &value, err, errlen) != 0)
                return -1;
            if (mgpu_parse_gpu_list(value, "--gpus ", o->gpus, MGPU_MAX_GPUS, &o->gpus_len, err,
                                    errlen) != 0)
                return -1;
            o->list_source = "--gpus";
            o->ngpus = 0;
            list_given = true;
        } else if (is_flag(arg, "--trace")) {
            if (file_value(argc, argv, &i, "--trace", "run.json", &o->trace, err, errlen) != 0)
                return -1;
        } else if (is_flag(arg, "--probe")) {
            if (value_of(argc, argv, &i, "--probe", &value, err, errlen) != 0)
                return -1;
            if (o->nprobes == MGPU_MAX_PROBES) {
                snprintf(err, errlen, "more than %d --probe options; merge some probe files",
                         MGPU_MAX_PROBES);
                return -1;
            }
            o->probes[o->nprobes++] = value;
        } else if (is_flag(arg, "--topology")) {
            if (file_value(argc, argv, &i, "--topology", "node.xml", &o->topology, err, errlen) !=
                0)
                return -1;
        } else {
            snprintf(err, errlen, "unknown option %s; see mgpu-run --help", arg);
            return -1;
        }
    }
    if (count_given && list_given) {
        snprintf(err, errlen, "-n and --gpus both choose GPUs; give one of them");
        return -1;
    }
    o->program_index = i < argc ? i : 0;
    return 0;
}

void launcher_print_help(const char *argv0)
{
    printf("Usage: %s [OPTION]... [--] PROGRAM [ARG]...\n"
           "\n"
           "Runs an unmodified CUDA program on the selected GPUs: its device 0 stands for\n"
           "all of them (the others stay visible as devices 1.., see MGPU_DEVICE_COUNT).\n"
           "\n"
           "  -n, --ngpus N    use N GPUs (default: all): the best-linked N, near this\n"
           "                   process, ordered so that neighbours are linked best\n"
           "      --gpus LIST  use exactly these GPUs, in this order, e.g. --gpus 0,2,5\n"
           "      --topology FILE  choose and order the GPUs from this hwloc XML topology\n"
           "                   (lstopo --of xml) instead of this machine's; see mgpu-info\n"
           "      --report     print a report of kernels, memory and calls at exit (stderr)\n"
           "      --trace FILE write a timeline of kernels (Chrome trace JSON) at exit\n"
           "      --probe P    inject a probe into every GPU's rewritten module:\n"
           "                   a built-in tool (launch-latency, block-time, thread-count,\n"
           "                   memory-locality, footprint-check),\n"
           "                   a CUDA C file using mgpu/probe.h (compiled with nvcc), or\n"
           "                   its PTX (nvcc -ptx -rdc=true); tables at exit (stderr)\n"
           "      --blas       run a CPU program's large BLAS GEMMs (cblas_?gemm, ?gemm_) on\n"
           "                   the GPUs, the smaller ones on its CPU BLAS\n"
           "  -v, --verbose    say what mgpu does; twice for every hooked lookup\n"
           "  -h, --help       show this help\n"
           "  -V, --version    show the version\n"
           "\n"
           "The exit status is the program's. Environment variables (options win):\n",
           argv0);
    /* Names as wide as the longest; values in a column of VALUES_WIDTH,
     * and a meaning after longer values on a line of its own. */
    enum { VALUES_WIDTH = 12 };
    int name_width = 0;
    for (const struct mgpu_env_doc *d = mgpu_env_docs; d->name; d++)
        name_width = (int)strlen(d->name) > name_width ? (int)strlen(d->name) : name_width;
    for (const struct mgpu_env_doc *d = mgpu_env_docs; d->name; d++) {
        if ((int)strlen(d->values) <= VALUES_WIDTH)
            printf("  %-*s %-*s %s\n", name_width, d->name, VALUES_WIDTH, d->values, d->meaning);
        else
            printf("  %-*s %s\n  %*s %s\n", name_width, d->name, d->values,
                   name_width + VALUES_WIDTH + 1, "", d->meaning);
    }
}

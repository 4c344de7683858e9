/* Parses and checks the MGPU_* environment variables. Every rejection is one
 * line that says what was wrong and what to write instead. */
#include "base/config.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

const struct mgpu_env_doc mgpu_env_docs[] = {
    {"MGPU_NGPUS", "N", "use N GPUs, chosen by the topology (same as -n N; default: all)"},
    {"MGPU_GPUS", "0,2,5",
     "use exactly these GPUs, in this order (same as --gpus); a GPU listed again, or as 0x4, "
     "stands for several"},
    {"MGPU_REPORT", "0|1", "print the end-of-run report on stderr (same as --report)"},
    {"MGPU_TRACE", "FILE", "write a timeline of kernels in Chrome trace JSON (same as --trace)"},
    {"MGPU_TOPOLOGY", "FILE",
     "choose and order the GPUs from this hwloc XML topology, not this machine's (same as "
     "--topology)"},
    {"MGPU_VERBOSE", "0|1|2", "say what mgpu does (1) and every hooked lookup (2) (same as -v)"},
    {"MGPU_SM_COUNT", "sum|home",
     "multiprocessors of device 0: all GPUs' (default; one GPU's to cuBLAS and NVIDIA's other math "
     "libraries, whose kernels run whole) or the home GPU's"},
    {"MGPU_DEVICE_COUNT", "all|one",
     "devices the program sees: every selected GPU (default) or only device 0"},
    {"MGPU_AUDIT", "0|1",
     "also redirect libcuda loads that bypass LD_LIBRARY_PATH, with LD_AUDIT (default 1)"},
    {"MGPU_CALL_LOG", "0|1",
     "log every driver call the program makes, on stderr (slow; for diagnosis)"},
    {"MGPU_PASSTHROUGH", "lib1,lib2",
     "libraries whose driver lookups bypass mgpu, besides libnccl and libmgpu"},
    {"MGPU_DRIVER", "PATH", "the real libcuda.so.1 (mgpu-run finds it; set only to override)"},
    {"MGPU_SPLIT", "auto|always|never",
     "auto (default): split a kernel launch or cut a cuBLAS GEMM once it was measured faster "
     "so; always: every one that can be (for tests); never: run the program's own modules "
     "untouched, as with one GPU"},
    {"MGPU_FORK_JOIN", "flags|events",
     "how a split launch's slices wait for the program's stream and it for them: sequence "
     "flags in pinned memory (default) or events"},
    {"MGPU_STRIDE_BLOCKS", "share|fill",
     "the blocks of each slice of a grid-stride loop cut by iterations: its share of the "
     "grid (default), or as many as fill its GPU, up to the whole grid (an experiment: more "
     "blocks run than the program launched, which probes see)"},
    {"MGPU_MEMORY", "pool|driver",
     "pool: device allocations get one address on every GPU, pages spread over them "
     "(default); driver: plain allocations on the home GPU"},
    {"MGPU_PLACEMENT", "auto|distributed|home|interleave",
     "where a buffer's 2 MiB pages live: auto (default): on the home GPU at first, as the "
     "plain program would have them, then moved after the kernels that use it (spread, one "
     "contiguous part per GPU, once split launches pay for its copies; back to one GPU after "
     "whole launches there); or always one part per GPU, all on the first GPU, or "
     "round-robin"},
    {"MGPU_SPREAD_MIN", "BYTES[K|M|G]|never",
     "with MGPU_PLACEMENT=auto: buffers of this size or more start spread, one part per GPU, "
     "rather than on the home GPU (default never: a buffer is spread only once a split that "
     "pays needs it)"},
    {"MGPU_MIRROR", "never|always|auto",
     "always: every buffer a split launch only reads gets a replica on each GPU, refreshed "
     "when the program may have written it, and every reduction that can be is privatised "
     "(for tests); auto: per kernel and grid, timed with and without, kept when faster "
     "(default)"},
    {"MGPU_MIRROR_BUDGET", "N%|BYTES[K|M|G]",
     "the memory mirrors' copies may take on each GPU: a share of what it has free when it "
     "first holds one, or a size (default 50%); past it, the copies read least recently go"},
    {"MGPU_PROBES", "[N=]A.ptx,...",
     "probe files compiled to PTX, linked into every GPU's rewritten module (mgpu-run sets it from "
     "--probe)"},
    {"MGPU_PROBE_OUT", "FILE", "write the probes' maps and records as JSON Lines at exit"},
    {"MGPU_RANK", "N",
     "set by mgpu-run under MPI: the rank, named in mgpu's messages, its report and its "
     "trace file (FILE.rankN.json)"},
    {"MGPU_NCCL", "0|1",
     "mirrors' collectives (refreshes, combines of privatised reductions) through NCCL where "
     "libnccl.so.2 loads (default 1); 0: device copies and mgpu's own kernels only"},
    {"MGPU_FOOTPRINTS", "on|off",
     "on (default): the split's estimate takes the bytes each slice reads and writes from the "
     "kernel's footprint (mgpu-ptx list) rather than its share of each buffer, and mirrors "
     "leave out a buffer each slice reads only its own part of; off: shares, as before"},
    {"MGPU_TRY_BUDGET", "P%+Nms|off",
     "with MGPU_SPLIT=auto: what trying other ways may cost (split, mirrored and GEMM cut "
     "trials over the way they replace, placement's moves): at most P % of the GPU time the "
     "program's kernels have run so far plus N ms (default 2%+5ms); a try that does not fit "
     "waits until the program has run longer; off: no limit"},
    {"MGPU_BLAS", "auto|never",
     "auto: a large cuBLAS GEMM of the program becomes one GEMM per GPU, C cut by owner "
     "(default); never: cuBLAS runs as it is, on the home GPU"},
    {"MGPU_BLAS_MIN", "N",
     "the least m*n*k (times the batch count) of a GEMM that is split (default 2^30, a "
     "1024^3 GEMM)"},
    {"MGPU_HOST_BLAS_MIN", "N",
     "with --blas: the least m*n*k of a CPU program's GEMM run on the GPUs (default 2^30); "
     "smaller ones stay on its CPU BLAS"},
    {"MGPU_CUBLAS", "PATH",
     "with --blas: the shared cuBLAS to load (default libcublas.so.13, found by the loader)"},
    {NULL, NULL, NULL},
};

__attribute__((format(printf, 3, 4))) static int fail(char *err, size_t errlen, const char *fmt,
                                                      ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

static int parse_small_int(const char *text, long lo, long hi, long *out)
{
    if (text == NULL || *text == '\0')
        return -1;
    char *end = NULL;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno != 0 || *end != '\0' || !isdigit((unsigned char)text[0]) || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

int mgpu_parse_gpu_count(const char *text, const char *what, int *out, char *err, size_t errlen)
{
    long v;
    if (parse_small_int(text, 1, LONG_MAX, &v) != 0)
        return fail(err, errlen, "%s%s is not a GPU count; give a whole number from 1 up, e.g. 2",
                    what, text ? text : "(empty)");
    if (v > MGPU_MAX_GPUS)
        return fail(err, errlen, "%s%s is more GPUs than mgpu supports; give at most %d", what,
                    text, MGPU_MAX_GPUS);
    *out = (int)v;
    return 0;
}

/* One item of a GPU list: "3", or "3x4" for GPU 3 four times. */
static int parse_gpu_item(const char *tok, long *gpu, long *times)
{
    char index[32];
    const char *x = strchr(tok, 'x');
    size_t n = x != NULL ? (size_t)(x - tok) : strlen(tok);
    if (n == 0 || n >= sizeof index)
        return -1;
    memcpy(index, tok, n);
    index[n] = '\0';
    *times = 1;
    if (parse_small_int(index, 0, 4095, gpu) != 0)
        return -1;
    /* Any count: past MGPU_MAX_GPUS the caller says the limit. */
    return x == NULL ? 0 : parse_small_int(x + 1, 1, LONG_MAX, times);
}

int mgpu_parse_gpu_list(const char *text, const char *what, int *out, int max, int *len, char *err,
                        size_t errlen)
{
    static const char hint[] = "give device indices such as 0,2,5 (0,0,0,0 or 0x4: GPU 0 four "
                               "times)";
    char buf[512];
    if (text == NULL || *text == '\0' || strlen(text) >= sizeof buf)
        return fail(err, errlen, "%s%s is not a GPU list; %s", what, text ? text : "", hint);
    if (text[strlen(text) - 1] == ',' || text[0] == ',' || strstr(text, ",,"))
        return fail(err, errlen, "%s%s is not a GPU list; %s", what, text, hint);
    strcpy(buf, text);
    int n = 0;
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        long gpu, times;
        if (parse_gpu_item(tok, &gpu, &times) != 0)
            return fail(err, errlen, "%s%s is not a GPU list; %s", what, text, hint);
        if (times > max - n)
            return fail(err, errlen, "%s%s lists more GPUs than mgpu supports; list at most %d",
                        what, text, max);
        for (long t = 0; t < times; t++)
            out[n++] = (int)gpu;
    }
    *len = n;
    return 0;
}

int mgpu_parse_bool(const char *text, const char *what, bool *out, char *err, size_t errlen)
{
    static const char *const yes[] = {"1", "yes", "on", "true"};
    static const char *const no[] = {"0", "no", "off", "false"};
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
        if (strcasecmp(text, yes[i]) == 0) {
            *out = true;
            return 0;
        }
        if (strcasecmp(text, no[i]) == 0) {
            *out = false;
            return 0;
        }
    }
    return fail(err, errlen, "%s=%s is not valid; use %s=1 or %s=0", what, text, what, what);
}

/* A size in bytes with an optional K, M or G (powers of 1024), more than 0.
 * Returns 0, or -1 when the text is not one. */
static int parse_bytes(const char *v, size_t *out)
{
    char *end = NULL;
    errno = 0;
    unsigned long long n = strtoull(v, &end, 10);
    if (!isdigit((unsigned char)v[0]) || errno != 0 || end == v)
        return -1;
    unsigned shift = 0;
    if ((*end == 'K' || *end == 'M' || *end == 'G') && end[1] == '\0')
        shift = *end == 'K' ? 10 : *end == 'M' ? 20 : 30;
    else if (*end != '\0')
        return -1;
    if (n == 0 || n > (~0ull >> shift))
        return -1;
    *out = (size_t)(n << shift);
    return 0;
}

/* MGPU_MIRROR_BUDGET: "N%" (1 to 100) of a GPU's free memory, or a size
 * in bytes with an optional K, M or G (powers of 1024). */
static int parse_budget(const char *v, struct mgpu_config *cfg, char *err, size_t errlen)
{
    if (v == NULL || *v == '\0')
        return 0;
    char *end = NULL;
    errno = 0;
    unsigned long long n = strtoull(v, &end, 10);
    if (isdigit((unsigned char)v[0]) && errno == 0 && end != v && strcmp(end, "%") == 0 && n >= 1 &&
        n <= 100) {
        cfg->mirror_budget_percent = (int)n;
        cfg->mirror_budget_bytes = 0;
        return 0;
    }
    if (parse_bytes(v, &cfg->mirror_budget_bytes) != 0)
        return fail(err, errlen,
                    "MGPU_MIRROR_BUDGET=%s is not valid; use a share of free memory such as 50%% "
                    "or a size such as 512M",
                    v);
    return 0;
}

/* The number at v, digits with an optional fraction (2, 0.5), 0 to max,
 * into *out; the text after it in *end. */
static int parse_budget_number(const char *v, double max, double *out, const char **end)
{
    double n = 0.0, scale = 1.0;
    const char *p = v;
    if (!isdigit((unsigned char)*p))
        return -1;
    for (; isdigit((unsigned char)*p) && n <= max; p++)
        n = n * 10.0 + (*p - '0');
    if (*p == '.') {
        if (!isdigit((unsigned char)p[1]))
            return -1;
        for (p++; isdigit((unsigned char)*p); p++)
            if (scale > 1e-9)
                n += (*p - '0') * (scale /= 10.0);
    }
    if (n > max)
        return -1;
    *out = n;
    *end = p;
    return 0;
}

/* MGPU_TRY_BUDGET: "P%+Nms", "P%", "Nms" or "off"; P from 0 to 100, N
 * to a million. */
#define TRY_BUDGET_MS_MAX 1e6
static int parse_try_budget(const char *v, struct mgpu_config *cfg, char *err, size_t errlen)
{
    if (v == NULL || *v == '\0')
        return 0;
    if (strcmp(v, "off") == 0) {
        cfg->try_budget_off = true;
        return 0;
    }
    double percent = 0.0, ms = 0.0;
    const char *at = v, *end;
    bool ok = parse_budget_number(at, TRY_BUDGET_MS_MAX, &percent, &end) == 0;
    if (ok && *end == '%') {
        ok = percent <= 100.0;
        at = end + 1;
        if (*at == '+')
            ok = ok && parse_budget_number(at + 1, TRY_BUDGET_MS_MAX, &ms, &end) == 0 &&
                 strcmp(end, "ms") == 0;
        else
            ok = ok && *at == '\0';
    } else if (ok) {
        ms = percent;
        percent = 0.0;
        ok = strcmp(end, "ms") == 0;
    }
    if (!ok)
        return fail(err, errlen,
                    "MGPU_TRY_BUDGET=%s is not valid; use a share of the program's GPU time and "
                    "milliseconds such as 2%%+5ms (0 to 100 %%, 0 to a million ms), or off",
                    v);
    cfg->try_budget_off = false;
    cfg->try_budget_percent = percent;
    cfg->try_budget_ms = ms;
    return 0;
}

/* MGPU_SPREAD_MIN: a size, as for the budget. */
static int parse_spread_min(const char *v, struct mgpu_config *cfg, char *err, size_t errlen)
{
    if (v == NULL || *v == '\0')
        return 0;
    if (strcmp(v, "never") == 0) {
        cfg->spread_min = SIZE_MAX;
        return 0;
    }
    if (parse_bytes(v, &cfg->spread_min) != 0)
        return fail(err, errlen,
                    "MGPU_SPREAD_MIN=%s is not valid; use a size such as 64M (1 spreads every "
                    "buffer) or never",
                    v);
    return 0;
}

static int parse_bool_var(mgpu_getenv_fn get, const char *name, bool *out, char *err, size_t errlen)
{
    const char *v = get(name);
    if (v == NULL || *v == '\0')
        return 0;
    return mgpu_parse_bool(v, name, out, err, errlen);
}

static int parse_path_var(mgpu_getenv_fn get, const char *name, char out[MGPU_PATH_MAX], char *err,
                          size_t errlen)
{
    const char *v = get(name);
    if (v == NULL || *v == '\0')
        return 0;
    if (strlen(v) >= MGPU_PATH_MAX)
        return fail(err, errlen, "%s is longer than a path may be; give a shorter path", name);
    strcpy(out, v);
    return 0;
}

/* A variable that takes one of `words` (NULL-terminated): *choice is its
 * index, or -1 when the variable is unset. */
static int parse_one_of(mgpu_getenv_fn get, const char *name, const char *const *words, int *choice,
                        char *err, size_t errlen)
{
    const char *v = get(name);
    *choice = -1;
    if (v == NULL || *v == '\0')
        return 0;
    char allowed[256] = "";
    size_t n = 0;
    for (; words[n] != NULL; n++) {
        if (strcmp(v, words[n]) == 0) {
            *choice = (int)n;
            return 0;
        }
    }
    for (size_t i = 0; i < n; i++) {
        size_t used = strlen(allowed);
        snprintf(allowed + used, sizeof allowed - used, "%s%s", words[i],
                 i + 2 < n   ? ", "
                 : i + 1 < n ? " or "
                             : "");
    }
    return fail(err, errlen, "%s=%s is not valid; use %s=%s", name, v, name, allowed);
}

/* NAME=N, a count such as 1e9 (0 or more), into *out when set. */
static int parse_size_var(mgpu_getenv_fn get, const char *name, double *out, char *err,
                          size_t errlen)
{
    const char *v = get(name);
    if (v == NULL || *v == '\0')
        return 0;
    char *end;
    errno = 0;
    double n = strtod(v, &end);
    if (errno != 0 || end == v || *end != '\0' || !(n >= 0))
        return fail(err, errlen, "%s=%s is not valid; use a size such as %s=1e9", name, v, name);
    *out = n;
    return 0;
}

void mgpu_config_defaults(struct mgpu_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->placement = MGPU_PLACEMENT_AUTO;
    cfg->sm_count = MGPU_SM_COUNT_SUM;
    cfg->audit = true;
    cfg->nccl = true;
    cfg->mirror = MGPU_MIRROR_AUTO;
    cfg->mirror_budget_percent = 50;
    cfg->spread_min = SIZE_MAX; /* principle 6: home until a split pays */
    cfg->footprints = true;
    cfg->rank = -1;
    cfg->blas_split = true;
    cfg->blas_split_min = 1073741824.0;
    cfg->host_blas_min = 1073741824.0;
    cfg->try_budget_percent = 2.0;
    cfg->try_budget_ms = 5.0;
}

int mgpu_config_parse(struct mgpu_config *cfg, mgpu_getenv_fn get, char *err, size_t errlen)
{
    mgpu_config_defaults(cfg);

    const char *v = get("MGPU_NGPUS");
    if (v && *v && mgpu_parse_gpu_count(v, "MGPU_NGPUS=", &cfg->ngpus, err, errlen) != 0)
        return -1;
    v = get("MGPU_GPUS");
    if (v && *v &&
        mgpu_parse_gpu_list(v, "MGPU_GPUS=", cfg->gpus, MGPU_MAX_GPUS, &cfg->gpus_len, err,
                            errlen) != 0)
        return -1;
    v = get("MGPU_ENTRIES");
    if (v && *v &&
        mgpu_parse_gpu_list(v, "MGPU_ENTRIES=", cfg->entries, MGPU_MAX_GPUS, &cfg->entries_len, err,
                            errlen) != 0)
        return -1;
    if (cfg->ngpus && cfg->gpus_len)
        return fail(err, errlen, "MGPU_NGPUS and MGPU_GPUS are both set; unset one of them");
    if (parse_bool_var(get, "MGPU_REPORT", &cfg->report, err, errlen) != 0)
        return -1;
    if (parse_bool_var(get, "MGPU_AUDIT", &cfg->audit, err, errlen) != 0)
        return -1;
    if (parse_bool_var(get, "MGPU_CALL_LOG", &cfg->call_log, err, errlen) != 0)
        return -1;
    if (parse_bool_var(get, "MGPU_NCCL", &cfg->nccl, err, errlen) != 0)
        return -1;
    if (parse_budget(get("MGPU_MIRROR_BUDGET"), cfg, err, errlen) != 0 ||
        parse_spread_min(get("MGPU_SPREAD_MIN"), cfg, err, errlen) != 0 ||
        parse_try_budget(get("MGPU_TRY_BUDGET"), cfg, err, errlen) != 0)
        return -1;
    if (parse_size_var(get, "MGPU_BLAS_MIN", &cfg->blas_split_min, err, errlen) != 0 ||
        parse_size_var(get, "MGPU_HOST_BLAS_MIN", &cfg->host_blas_min, err, errlen) != 0)
        return -1;
    v = get("MGPU_RANK");
    if (v && *v) {
        long rank;
        if (parse_small_int(v, 0, (1L << 24) - 1, &rank) != 0)
            return fail(err, errlen,
                        "MGPU_RANK=%s is not a rank; mgpu-run sets it under MPI, "
                        "unset it otherwise",
                        v);
        cfg->rank = (int)rank;
    }

    if (parse_path_var(get, "MGPU_TRACE", cfg->trace_path, err, errlen) != 0 ||
        parse_path_var(get, "MGPU_TOPOLOGY", cfg->topology_path, err, errlen) != 0 ||
        parse_path_var(get, "MGPU_PROBE_OUT", cfg->probe_out, err, errlen) != 0 ||
        parse_path_var(get, "MGPU_NVML_KEPT", cfg->nvml_kept, err, errlen) != 0)
        return -1;
    v = get("MGPU_PROBES");
    if (v && *v) {
        if (strlen(v) >= sizeof cfg->probes)
            return fail(err, errlen, "MGPU_PROBES is too long; give fewer probe files");
        strcpy(cfg->probes, v);
    }

    v = get("MGPU_VERBOSE");
    if (v && *v) {
        long level;
        if (parse_small_int(v, 0, 2, &level) != 0)
            return fail(err, errlen, "MGPU_VERBOSE=%s is not valid; use MGPU_VERBOSE=0, 1 or 2", v);
        cfg->verbose = (int)level;
    }

    int choice;
    static const char *const sm_counts[] = {"sum", "home", NULL};
    if (parse_one_of(get, "MGPU_SM_COUNT", sm_counts, &choice, err, errlen) != 0)
        return -1;
    cfg->sm_count_given = choice >= 0;
    if (choice >= 0)
        cfg->sm_count = choice == 0 ? MGPU_SM_COUNT_SUM : MGPU_SM_COUNT_HOME;
    static const char *const device_counts[] = {"all", "one", NULL};
    if (parse_one_of(get, "MGPU_DEVICE_COUNT", device_counts, &choice, err, errlen) != 0)
        return -1;
    if (choice >= 0)
        cfg->device_count = choice == 0 ? MGPU_DEVICE_COUNT_ALL : MGPU_DEVICE_COUNT_ONE;

    static const char *const split_modes[] = {"auto", "always", "never", NULL};
    if (parse_one_of(get, "MGPU_SPLIT", split_modes, &choice, err, errlen) != 0)
        return -1;
    if (choice >= 0)
        cfg->split = (enum mgpu_split_mode)choice;
    static const char *const blas_modes[] = {"auto", "never", NULL};
    static const char *const footprint_modes[] = {"on", "off", NULL};
    if (parse_one_of(get, "MGPU_FOOTPRINTS", footprint_modes, &choice, err, errlen) != 0)
        return -1;
    if (choice >= 0)
        cfg->footprints = choice == 0;
    if (parse_one_of(get, "MGPU_BLAS", blas_modes, &choice, err, errlen) != 0)
        return -1;
    if (choice >= 0)
        cfg->blas_split = choice == 0;
    static const char *const fork_joins[] = {"flags", "events", NULL};
    if (parse_one_of(get, "MGPU_FORK_JOIN", fork_joins, &choice, err, errlen) != 0)
        return -1;
    if (choice >= 0)
        cfg->fork_join = (enum mgpu_fork_join_mode)choice;
    static const char *const stride_blocks[] = {"share", "fill", NULL};
    if (parse_one_of(get, "MGPU_STRIDE_BLOCKS", stride_blocks, &choice, err, errlen) != 0)
        return -1;
    if (choice >= 0)
        cfg->stride_fill = choice == 1;
    static const char *const memory_modes[] = {"pool", "driver", NULL};
    if (parse_one_of(get, "MGPU_MEMORY", memory_modes, &choice, err, errlen) != 0)
        return -1;
    if (choice >= 0)
        cfg->memory = (enum mgpu_memory_mode)choice;
    static const char *const placements[] = {"distributed", "home", "interleave", "auto", NULL};
    if (parse_one_of(get, "MGPU_PLACEMENT", placements, &choice, err, errlen) != 0)
        return -1;
    if (choice >= 0)
        cfg->placement = (enum mgpu_placement_mode)choice;
    static const char *const mirror_modes[] = {"never", "always", "auto", NULL};
    if (parse_one_of(get, "MGPU_MIRROR", mirror_modes, &choice, err, errlen) != 0)
        return -1;
    if (choice >= 0)
        cfg->mirror = (enum mgpu_mirror_mode)choice;

    v = get("MGPU_PASSTHROUGH");
    if (v && *v) {
        if (strlen(v) >= sizeof cfg->passthrough)
            return fail(err, errlen, "MGPU_PASSTHROUGH is too long; list fewer libraries");
        strcpy(cfg->passthrough, v);
    }
    return 0;
}

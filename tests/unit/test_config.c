/* Unit tests of the MGPU_* environment parser. */
#include "check.h"
#include "base/config.h"

#include <stddef.h>
#include <stdint.h>

static const char *const *current_env;

static const char *fake_getenv(const char *name)
{
    for (const char *const *e = current_env; e && e[0]; e += 2)
        if (strcmp(e[0], name) == 0)
            return e[1];
    return NULL;
}

static int parse(const char *const *env, struct mgpu_config *cfg, char *err, size_t n)
{
    current_env = env;
    err[0] = '\0';
    return mgpu_config_parse(cfg, fake_getenv, err, n);
}

int main(void)
{
    struct mgpu_config cfg;
    char err[256];

    const char *const none[] = {NULL};
    CHECK(parse(none, &cfg, err, sizeof err) == 0);
    CHECK(cfg.ngpus == 0 && cfg.gpus_len == 0 && !cfg.report && cfg.verbose == 0);
    CHECK(cfg.sm_count == MGPU_SM_COUNT_SUM && cfg.audit && cfg.trace_path[0] == '\0');
    CHECK(cfg.topology_path[0] == '\0');
    CHECK(cfg.device_count == MGPU_DEVICE_COUNT_ALL && !cfg.call_log);
    CHECK(cfg.split == MGPU_SPLIT_AUTO && cfg.memory == MGPU_MEMORY_POOL);
    CHECK(cfg.placement == MGPU_PLACEMENT_AUTO && cfg.spread_min == SIZE_MAX);
    CHECK(cfg.mirror == MGPU_MIRROR_AUTO && cfg.nccl);
    CHECK(cfg.fork_join == MGPU_FORK_JOIN_FLAGS);
    CHECK(cfg.blas_split && cfg.blas_split_min == 1073741824.0);
    CHECK(cfg.host_blas_min == 1073741824.0);

    const char *const full[] = {"MGPU_NGPUS",
                                "4",
                                "MGPU_REPORT",
                                "yes",
                                "MGPU_TRACE",
                                "/tmp/t.json",
                                "MGPU_VERBOSE",
                                "2",
                                "MGPU_SM_COUNT",
                                "home",
                                "MGPU_AUDIT",
                                "off",
                                "MGPU_PASSTHROUGH",
                                "libfoo,libbar",
                                "MGPU_DEVICE_COUNT",
                                "one",
                                "MGPU_CALL_LOG",
                                "1",
                                "MGPU_SPLIT",
                                "never",
                                "MGPU_MEMORY",
                                "driver",
                                "MGPU_PLACEMENT",
                                "interleave",
                                "MGPU_TOPOLOGY",
                                "node.xml",
                                "MGPU_FORK_JOIN",
                                "events",
                                "MGPU_MIRROR",
                                "always",
                                "MGPU_NCCL",
                                "0",
                                NULL};
    CHECK(parse(full, &cfg, err, sizeof err) == 0);
    CHECK(cfg.ngpus == 4 && cfg.report && cfg.verbose == 2 && !cfg.audit);
    CHECK(cfg.sm_count == MGPU_SM_COUNT_HOME);
    CHECK(cfg.device_count == MGPU_DEVICE_COUNT_ONE && cfg.call_log);
    CHECK(cfg.split == MGPU_SPLIT_NEVER && cfg.memory == MGPU_MEMORY_DRIVER);
    CHECK(cfg.placement == MGPU_PLACEMENT_INTERLEAVE);
    CHECK(cfg.fork_join == MGPU_FORK_JOIN_EVENTS);
    CHECK(cfg.mirror == MGPU_MIRROR_ALWAYS && !cfg.nccl);
    struct mgpu_config automatic_cfg;
    const char *const automatic[] = {"MGPU_MIRROR", "auto", NULL};
    CHECK(parse(automatic, &automatic_cfg, err, sizeof err) == 0 &&
          automatic_cfg.mirror == MGPU_MIRROR_AUTO);
    CHECK(automatic_cfg.mirror_budget_percent == 50 && automatic_cfg.mirror_budget_bytes == 0);
    struct mgpu_config never_cfg;
    const char *const never[] = {"MGPU_MIRROR", "never", NULL};
    CHECK(parse(never, &never_cfg, err, sizeof err) == 0 && never_cfg.mirror == MGPU_MIRROR_NEVER);
    const char *const share[] = {"MGPU_MIRROR_BUDGET", "25%", NULL};
    CHECK(parse(share, &automatic_cfg, err, sizeof err) == 0 &&
          automatic_cfg.mirror_budget_percent == 25 && automatic_cfg.mirror_budget_bytes == 0);
    const char *const size[] = {"MGPU_MIRROR_BUDGET", "40M", NULL};
    CHECK(parse(size, &automatic_cfg, err, sizeof err) == 0 &&
          automatic_cfg.mirror_budget_bytes == 40u << 20);
    const char *const follow[] = {"MGPU_PLACEMENT", "auto", NULL};
    CHECK(parse(follow, &automatic_cfg, err, sizeof err) == 0 &&
          automatic_cfg.placement == MGPU_PLACEMENT_AUTO);
    const char *const spread[] = {"MGPU_SPREAD_MIN", "1G", NULL};
    CHECK(parse(spread, &automatic_cfg, err, sizeof err) == 0 &&
          automatic_cfg.spread_min == (size_t)1 << 30);
    const char *const spread_never[] = {"MGPU_SPREAD_MIN", "never", NULL};
    CHECK(parse(spread_never, &automatic_cfg, err, sizeof err) == 0 &&
          automatic_cfg.spread_min == SIZE_MAX);
    const char *const ranked[] = {"MGPU_RANK", "12", NULL};
    CHECK(parse(ranked, &automatic_cfg, err, sizeof err) == 0 && automatic_cfg.rank == 12);
    CHECK(parse(follow, &automatic_cfg, err, sizeof err) == 0 && automatic_cfg.rank == -1);
    const char *const blas[] = {"MGPU_BLAS", "never", "MGPU_BLAS_MIN", "1e6", NULL};
    CHECK(parse(blas, &automatic_cfg, err, sizeof err) == 0 && !automatic_cfg.blas_split &&
          automatic_cfg.blas_split_min == 1e6);
    /* The budget for trying: 2 % plus 5 ms unless set; a share, a time,
     * both, or off. */
    CHECK(parse(follow, &automatic_cfg, err, sizeof err) == 0 &&
          automatic_cfg.try_budget_percent == 2.0 && automatic_cfg.try_budget_ms == 5.0 &&
          !automatic_cfg.try_budget_off);
    const char *const tries[] = {"MGPU_TRY_BUDGET", "0.5%+20ms", NULL};
    CHECK(parse(tries, &automatic_cfg, err, sizeof err) == 0 &&
          automatic_cfg.try_budget_percent == 0.5 && automatic_cfg.try_budget_ms == 20.0);
    const char *const tries_share[] = {"MGPU_TRY_BUDGET", "10%", NULL};
    CHECK(parse(tries_share, &automatic_cfg, err, sizeof err) == 0 &&
          automatic_cfg.try_budget_percent == 10.0 && automatic_cfg.try_budget_ms == 0.0);
    const char *const tries_time[] = {"MGPU_TRY_BUDGET", "250ms", NULL};
    CHECK(parse(tries_time, &automatic_cfg, err, sizeof err) == 0 &&
          automatic_cfg.try_budget_percent == 0.0 && automatic_cfg.try_budget_ms == 250.0);
    const char *const tries_off[] = {"MGPU_TRY_BUDGET", "off", NULL};
    CHECK(parse(tries_off, &automatic_cfg, err, sizeof err) == 0 && automatic_cfg.try_budget_off);
    const char *const plain[] = {"MGPU_MIRROR_BUDGET", "4096", NULL};
    CHECK(parse(plain, &automatic_cfg, err, sizeof err) == 0 &&
          automatic_cfg.mirror_budget_bytes == 4096);
    CHECK_STR(cfg.trace_path, "/tmp/t.json");
    CHECK_STR(cfg.topology_path, "node.xml");
    CHECK_STR(cfg.passthrough, "libfoo,libbar");

    const char *const list[] = {"MGPU_GPUS", "3,0,5", NULL};
    CHECK(parse(list, &cfg, err, sizeof err) == 0);
    CHECK(cfg.gpus_len == 3 && cfg.gpus[0] == 3 && cfg.gpus[1] == 0 && cfg.gpus[2] == 5);

    /* A GPU listed again, or as GPUxCOUNT, stands for several of the run's
     * GPUs. */
    const char *const repeated[] = {"MGPU_GPUS", "1,1", NULL};
    CHECK(parse(repeated, &cfg, err, sizeof err) == 0);
    CHECK(cfg.gpus_len == 2 && cfg.gpus[0] == 1 && cfg.gpus[1] == 1);
    const char *const times[] = {"MGPU_GPUS", "0x8", NULL};
    CHECK(parse(times, &cfg, err, sizeof err) == 0 && cfg.gpus_len == 8);
    CHECK(cfg.gpus[0] == 0 && cfg.gpus[7] == 0);
    const char *const mixed[] = {"MGPU_GPUS", "2x2,0,1x3", NULL};
    CHECK(parse(mixed, &cfg, err, sizeof err) == 0 && cfg.gpus_len == 6);
    CHECK(cfg.gpus[0] == 2 && cfg.gpus[1] == 2 && cfg.gpus[2] == 0 && cfg.gpus[3] == 1 &&
          cfg.gpus[5] == 1);
    const char *const most[] = {"MGPU_GPUS", "0x32,1x32", NULL};
    CHECK(parse(most, &cfg, err, sizeof err) == 0 && cfg.gpus_len == MGPU_MAX_GPUS);
    const char *const entries[] = {"MGPU_ENTRIES", "0,0,1,0", NULL};
    CHECK(parse(entries, &cfg, err, sizeof err) == 0 && cfg.entries_len == 4);
    CHECK(cfg.entries[2] == 1 && cfg.entries[3] == 0 && cfg.gpus_len == 0);

    /* Every rejection is one line that names the variable and the fix. */
    static const struct {
        const char *name, *value, *expect;
    } bad[] = {
        {"MGPU_NGPUS", "0", "MGPU_NGPUS=0 is not a GPU count"},
        {"MGPU_NGPUS", "-2", "whole number"},
        {"MGPU_NGPUS", "2x", "MGPU_NGPUS=2x"},
        {"MGPU_NGPUS", "99999999999999999999", "not a GPU count"},
        {"MGPU_NGPUS", "65", "MGPU_NGPUS=65 is more GPUs than mgpu supports; give at most 64"},
        {"MGPU_GPUS", "0,,1", "not a GPU list"},
        {"MGPU_GPUS", "0x0",
         "not a GPU list; give device indices such as 0,2,5 (0,0,0,0 or "
         "0x4: GPU 0 four times)"},
        {"MGPU_GPUS", "0x", "not a GPU list"},
        {"MGPU_GPUS", "x4", "not a GPU list"},
        {"MGPU_GPUS", "0x4x2", "not a GPU list"},
        {"MGPU_GPUS", "0xa", "not a GPU list"},
        {"MGPU_GPUS", "0x65", "MGPU_GPUS=0x65 lists more GPUs than mgpu supports; list at most 64"},
        {"MGPU_GPUS", "0x64,1", "lists more GPUs than mgpu supports; list at most 64"},
        {"MGPU_ENTRIES", "0,,1", "MGPU_ENTRIES=0,,1 is not a GPU list"},
        {"MGPU_GPUS", "a", "give device indices such as 0,2,5"},
        {"MGPU_GPUS", "0,", "not a GPU list"},
        {"MGPU_REPORT", "maybe", "use MGPU_REPORT=1 or MGPU_REPORT=0"},
        {"MGPU_VERBOSE", "3", "use MGPU_VERBOSE=0, 1 or 2"},
        {"MGPU_SM_COUNT", "all", "use MGPU_SM_COUNT=sum or home"},
        {"MGPU_AUDIT", "2", "use MGPU_AUDIT=1"},
        {"MGPU_DEVICE_COUNT", "1", "use MGPU_DEVICE_COUNT=all or one"},
        {"MGPU_CALL_LOG", "lots", "use MGPU_CALL_LOG=1"},
        {"MGPU_SPLIT", "off", "use MGPU_SPLIT=auto, always or never"},
        {"MGPU_MEMORY", "vmm", "use MGPU_MEMORY=pool or driver"},
        {"MGPU_PLACEMENT", "spread", "use MGPU_PLACEMENT=distributed, home, interleave or auto"},
        {"MGPU_FORK_JOIN", "memops", "use MGPU_FORK_JOIN=flags or events"},
        {"MGPU_MIRROR", "sometimes", "use MGPU_MIRROR=never, always or auto"},
        {"MGPU_NCCL", "maybe", "use MGPU_NCCL=1 or MGPU_NCCL=0"},
        {"MGPU_MIRROR_BUDGET", "0%", "use a share of free memory such as 50% or a size"},
        {"MGPU_MIRROR_BUDGET", "101%", "use a share of free memory such as 50% or a size"},
        {"MGPU_MIRROR_BUDGET", "12X", "use a share of free memory such as 50% or a size"},
        {"MGPU_MIRROR_BUDGET", "99999999999G", "use a share of free memory such as 50% or a size"},
        {"MGPU_MIRROR_BUDGET", "-5M", "use a share of free memory such as 50% or a size"},
        {"MGPU_SPREAD_MIN", "0", "MGPU_SPREAD_MIN=0 is not valid; use a size such as 64M"},
        {"MGPU_SPREAD_MIN", "64MB", "MGPU_SPREAD_MIN=64MB is not valid; use a size such as 64M"},
        {"MGPU_RANK", "two", "MGPU_RANK=two is not a rank; mgpu-run sets it under MPI"},
        {"MGPU_BLAS", "always", "use MGPU_BLAS=auto or never"},
        {"MGPU_BLAS_MIN", "big", "use a size such as MGPU_BLAS_MIN=1e9"},
        {"MGPU_BLAS_MIN", "-1", "use a size such as MGPU_BLAS_MIN=1e9"},
        {"MGPU_BLAS_MIN", "nan", "use a size such as MGPU_BLAS_MIN=1e9"},
        {"MGPU_HOST_BLAS_MIN", "1e9x", "use a size such as MGPU_HOST_BLAS_MIN=1e9"},
        {"MGPU_TRY_BUDGET", "2", "such as 2%+5ms"},
        {"MGPU_TRY_BUDGET", "101%", "such as 2%+5ms"},
        {"MGPU_TRY_BUDGET", "2%+5", "such as 2%+5ms"},
        {"MGPU_TRY_BUDGET", "2%5ms", "such as 2%+5ms"},
        {"MGPU_TRY_BUDGET", "2.%", "such as 2%+5ms"},
        {"MGPU_TRY_BUDGET", "-2%", "such as 2%+5ms"},
        {"MGPU_TRY_BUDGET", "1e3ms", "such as 2%+5ms"},
        {"MGPU_TRY_BUDGET", "2000000ms", "such as 2%+5ms"},
        {"MGPU_TRY_BUDGET", "2%+5ms ", "such as 2%+5ms"},
        {"MGPU_TRY_BUDGET", "none", "such as 2%+5ms"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *const env[] = {bad[i].name, bad[i].value, NULL};
        CHECK(parse(env, &cfg, err, sizeof err) == -1);
        CHECK_CONTAINS(err, bad[i].expect);
        CHECK(strchr(err, '\n') == NULL);
    }
    const char *const both[] = {"MGPU_NGPUS", "2", "MGPU_GPUS", "0,1", NULL};
    CHECK(parse(both, &cfg, err, sizeof err) == -1);
    CHECK_CONTAINS(err, "unset one of them");

    static char long_path[MGPU_PATH_MAX + 2];
    memset(long_path, 'a', sizeof long_path - 1);
    const char *const too_long[] = {"MGPU_TOPOLOGY", long_path, NULL};
    CHECK(parse(too_long, &cfg, err, sizeof err) == -1);
    CHECK_STR(err, "MGPU_TOPOLOGY is longer than a path may be; give a shorter path");

    /* An empty value counts as unset. */
    const char *const empty[] = {"MGPU_NGPUS", "", "MGPU_REPORT", "", NULL};
    CHECK(parse(empty, &cfg, err, sizeof err) == 0 && cfg.ngpus == 0 && !cfg.report);

    bool flag = false;
    CHECK(mgpu_parse_bool("TRUE", "X", &flag, err, sizeof err) == 0 && flag);
    CHECK(mgpu_parse_bool("0", "X", &flag, err, sizeof err) == 0 && !flag);
    CHECK_DONE();
}

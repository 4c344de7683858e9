/* Unit tests of mgpu-run's command line and of choosing the GPUs: the
 * request checked, then the topology's choice for a count, or index order
 * when the topology does not match the driver's GPUs. */
#include "check.h"
#include "base/config.h"
#include "src/run/gpu_selection.h"
#include "src/run/launcher_options.h"
#include "topology_models.h"

static struct mgpu_topology topo;

static int parse_args(char **argv, const struct mgpu_config *env, struct launcher_options *o,
                      char *err, size_t n)
{
    int argc = 0;
    while (argv[argc])
        argc++;
    err[0] = '\0';
    return launcher_parse(argc, argv, env, o, err, n);
}

int main(void)
{
    struct mgpu_config env;
    mgpu_config_defaults(&env);
    struct launcher_options o;
    char err[256];

    char *a1[] = {"mgpu-run", "-n", "2", "--report", "-v", "./app", "-n", "7", NULL};
    CHECK(parse_args(a1, &env, &o, err, sizeof err) == 0);
    CHECK(o.ngpus == 2 && o.report && o.verbose == 1 && o.program_index == 5);
    CHECK(!o.host_blas);

    char *blas[] = {"mgpu-run", "--blas", "./cpu_app", "--blas", NULL};
    CHECK(parse_args(blas, &env, &o, err, sizeof err) == 0);
    CHECK(o.host_blas && o.program_index == 2);

    char *a2[] = {"mgpu-run", "--gpus=2,0", "--trace", "t.json", "--", "-weird-name", NULL};
    CHECK(parse_args(a2, &env, &o, err, sizeof err) == 0);
    CHECK(o.gpus_len == 2 && o.gpus[0] == 2 && o.gpus[1] == 0 && o.ngpus == 0);
    CHECK_STR(o.trace, "t.json");
    CHECK(o.program_index == 5);

    char *a3[] = {"mgpu-run", "-n4", "-vv", "prog", NULL};
    CHECK(parse_args(a3, &env, &o, err, sizeof err) == 0 && o.ngpus == 4 && o.verbose == 2);

    char *a4[] = {"mgpu-run", "--ngpus=3", NULL};
    CHECK(parse_args(a4, &env, &o, err, sizeof err) == 0 && o.ngpus == 3 && o.program_index == 0);

    char *a7[] = {"mgpu-run", "--topology", "node.xml", "-n", "2", "prog", NULL};
    CHECK(parse_args(a7, &env, &o, err, sizeof err) == 0);
    CHECK_STR(o.topology, "node.xml");
    CHECK(o.ngpus == 2 && o.program_index == 5);
    char *a8[] = {"mgpu-run", "--topology=other.xml", "prog", NULL};
    CHECK(parse_args(a8, &env, &o, err, sizeof err) == 0);
    CHECK_STR(o.topology, "other.xml");
    CHECK(parse_args(a1, &env, &o, err, sizeof err) == 0 && o.topology == NULL);

    char *help[] = {"mgpu-run", "--help", NULL};
    CHECK(parse_args(help, &env, &o, err, sizeof err) == 0 && o.help);
    char *version[] = {"mgpu-run", "-V", NULL};
    CHECK(parse_args(version, &env, &o, err, sizeof err) == 0 && o.version);

    static const struct {
        char *args[5];
        const char *expect;
    } bad[] = {
        {{"mgpu-run", "--frobnicate", "prog", NULL},
         "unknown option --frobnicate; see mgpu-run --help"},
        {{"mgpu-run", "-n", NULL}, "-n needs a value"},
        {{"mgpu-run", "-n", "zero", "p", NULL}, "-n zero is not a GPU count"},
        {{"mgpu-run", "-n", "0", "p", NULL}, "-n 0 is not a GPU count"},
        {{"mgpu-run", "--gpus", "1,x", "p", NULL}, "--gpus 1,x is not a GPU list"},
        {{"mgpu-run", "--gpus", "0x0", "p", NULL}, "--gpus 0x0 is not a GPU list"},
        {{"mgpu-run", "-n", "2", "--gpus", "0,1"}, "give one of them"},
        {{"mgpu-run", "--trace=", "p", NULL}, "--trace needs a file name"},
        {{"mgpu-run", "--topology=", "p", NULL}, "--topology needs a file name"},
        {{"mgpu-run", "--topology", NULL}, "--topology needs a value"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *args[6] = {0};
        memcpy(args, bad[i].args, sizeof bad[i].args);
        CHECK(parse_args(args, &env, &o, err, sizeof err) == -1);
        CHECK_CONTAINS(err, bad[i].expect);
    }

    /* The environment gives defaults; the command line wins. */
    env.ngpus = 3;
    env.report = true;
    char *a5[] = {"mgpu-run", "prog", NULL};
    CHECK(parse_args(a5, &env, &o, err, sizeof err) == 0 && o.ngpus == 3 && o.report);
    CHECK_STR(o.count_source, "MGPU_NGPUS=");
    char *a6[] = {"mgpu-run", "--gpus", "1", "prog", NULL};
    CHECK(parse_args(a6, &env, &o, err, sizeof err) == 0 && o.ngpus == 0 && o.gpus_len == 1);
    snprintf(env.topology_path, sizeof env.topology_path, "env.xml");
    CHECK(parse_args(a5, &env, &o, err, sizeof err) == 0);
    CHECK_STR(o.topology, "env.xml");
    CHECK(parse_args(a8, &env, &o, err, sizeof err) == 0);
    CHECK_STR(o.topology, "other.xml");

    int out[MGPU_MAX_GPUS], len = 0;
    CHECK(gpu_select(8, 0, "-n ", NULL, 0, "--gpus", out, &len, err, sizeof err) == 0 && len == 8);
    CHECK(out[0] == 0 && out[7] == 7);
    CHECK(gpu_select(8, 3, "-n ", NULL, 0, "--gpus", out, &len, err, sizeof err) == 0 && len == 3);
    CHECK(gpu_select(8, 9, "-n ", NULL, 0, "--gpus", out, &len, err, sizeof err) == -1);
    CHECK_STR(err, "-n 9 asks for 9 GPUs but this machine has 8; use -n 8 or fewer, or --gpus 0x9 "
                   "to run 9 slices on GPU 0");
    CHECK(gpu_select(2, 4, "MGPU_NGPUS=", NULL, 0, "--gpus", out, &len, err, sizeof err) == -1);
    CHECK_CONTAINS(err, "use MGPU_NGPUS=2 or fewer");
    int list[] = {5, 2};
    CHECK(gpu_select(8, 0, "-n ", list, 2, "--gpus", out, &len, err, sizeof err) == 0);
    CHECK(len == 2 && out[0] == 5 && out[1] == 2);
    int outside[] = {1, 8};
    CHECK(gpu_select(8, 0, "-n ", outside, 2, "--gpus", out, &len, err, sizeof err) == -1);
    CHECK_STR(err, "--gpus lists GPU 8 but this machine has GPUs 0 to 7; list GPUs from 0 to 7");
    CHECK(gpu_select(0, 0, "-n ", NULL, 0, "--gpus", out, &len, err, sizeof err) == -1);

    /* A GPU listed several times: the program's driver sees each device
     * once, in the order they first appear, and MGPU_ENTRIES maps the run's
     * GPUs onto them. */
    int repeated[] = {3, 3, 1, 3, 0};
    CHECK(gpu_select(4, 0, "-n ", repeated, 5, "--gpus", out, &len, err, sizeof err) == 0);
    CHECK(len == 5 && out[0] == 3 && out[1] == 3 && out[4] == 0);
    int devices[MGPU_MAX_GPUS], entries[MGPU_MAX_GPUS];
    CHECK(gpu_select_devices(out, len, devices, entries) == 3);
    CHECK(devices[0] == 3 && devices[1] == 1 && devices[2] == 0);
    CHECK(entries[0] == 0 && entries[1] == 0 && entries[2] == 1 && entries[3] == 0 &&
          entries[4] == 2);
    CHECK(gpu_select(1, 4, "-n ", NULL, 0, "--gpus", out, &len, err, sizeof err) == -1);
    CHECK_STR(err, "-n 4 asks for 4 GPUs but this machine has 1; use -n 1 or fewer, or --gpus 0x4 "
                   "to run 4 slices on GPU 0");

    /* A count takes the topology's choice: the NVLink pair 2-3, and for
     * three GPUs the pair next to each other. */
    model_all_linked(&topo, 4, MGPU_LINK_PHB);
    model_add_nvlink(&topo, 2, 3, 4);
    CHECK(gpu_select(4, 2, "-n ", NULL, 0, "--gpus", out, &len, err, sizeof err) == 0);
    CHECK(gpu_select_by_topology(&topo, 4, NULL, len, out, err, sizeof err) == 0);
    CHECK(out[0] == 2 && out[1] == 3);
    CHECK(gpu_select_by_topology(&topo, 4, NULL, 3, out, err, sizeof err) == 0);
    CHECK(out[0] == 0 && out[1] == 2 && out[2] == 3);
    CHECK(gpu_select_by_topology(&topo, 4, NULL, 4, out, err, sizeof err) == 0);
    CHECK(out[0] == 0 && out[1] == 1 && out[2] == 2 && out[3] == 3);
    /* A topology that is not the driver's leaves index order. */
    CHECK(gpu_select(8, 2, "-n ", NULL, 0, "--gpus", out, &len, err, sizeof err) == 0);
    CHECK(gpu_select_by_topology(&topo, 8, NULL, 2, out, err, sizeof err) == -1);
    CHECK_STR(err, "the topology (a test model) has 4 GPUs but the driver sees 8");
    CHECK(out[0] == 0 && out[1] == 1);
    /* Bus ids, where both say them, must be the driver's. */
    char bus_ids[4][MGPU_BUS_ID_LEN] = {"0000:03:00.0", "", "0000:06:00.0", "0000:06:00.0"};
    for (int i = 0; i < 4; i++)
        snprintf(topo.gpus[i].bus_id, sizeof topo.gpus[i].bus_id, "0000:%02x:00.0", 3 + i);
    CHECK(gpu_select_by_topology(&topo, 4, bus_ids, 2, out, err, sizeof err) == -1);
    CHECK_STR(err, "GPU 2 of the topology (a test model) is at 0000:05:00.0 but the driver's GPU 2 "
                   "is at 0000:06:00.0; it describes another machine");
    snprintf(bus_ids[2], sizeof bus_ids[2], "0000:05:00.0");
    CHECK(gpu_select_by_topology(&topo, 4, bus_ids, 2, out, err, sizeof err) == 0);
    CHECK(out[0] == 2 && out[1] == 3);
    topo.gpus[3].cuda_index = 7;
    CHECK(gpu_select_by_topology(&topo, 4, NULL, 2, out, err, sizeof err) == -1);
    CHECK_CONTAINS(err, "has a GPU 7 but the driver's are 0 to 3");
    CHECK_DONE();
}

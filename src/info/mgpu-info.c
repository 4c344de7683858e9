/* mgpu-info: shows the node as mgpu sees it (GPUs, the links between them,
 * NUMA placement) and the decisions mgpu takes from it for each GPU count:
 * which GPUs, in what order, with what weights. --topology shows them for
 * an hwloc XML topology of any machine. */
#include <build_config.h>

#include "base/config.h"
#include "base/driver_locate.h"
#include "partition/gpu_choice.h"
#include "src/info/trace_merge.h"
#include "partition/link_measure.h"
#include "partition/link_model.h"
#include "partition/rank_groups.h"
#include "base/real_driver.h"
#include "partition/topology.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef MGPU_PKGLIBDIR
#error "MGPU_PKGLIBDIR must name the directory of the installed shim"
#endif

#define EXIT_USAGE 2

struct info_options {
    const char *topology;    /* NULL: this machine */
    int ngpus;               /* 0: every count */
    int gpus[MGPU_MAX_GPUS]; /* --gpus: the decision for this list only */
    int gpus_len;
    bool bandwidth;        /* --bandwidth: measure the copy bandwidths */
    int ranks;             /* --ranks L: the GPUs of L MPI ranks on this node; 0: not asked */
    const char *merge_out; /* --merge-traces OUT IN...: the ranks' traces into one */
    const char *const *merge_inputs;
    int nmerge;
    bool help, version;
};

__attribute__((format(printf, 1, 2))) static void say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("mgpu-info: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static void usage(void)
{
    printf("Usage: mgpu-info [--topology FILE.xml] [-n N | --gpus LIST] [--bandwidth] "
           "[--ranks L]\n"
           "\n"
           "Shows the GPUs of this machine (or of an hwloc XML topology), the links\n"
           "between them, their NUMA placement, and which GPUs mgpu-run -n N takes, in\n"
           "what order, with what share of the work.\n"
           "\n"
           "  --topology FILE  read an hwloc XML topology (lstopo --of xml) instead of this\n"
           "                   machine; MGPU_TOPOLOGY=FILE does the same\n"
           "  -n, --ngpus N    show only the decision for N GPUs\n"
           "      --gpus LIST  show only the decision for these GPUs, e.g. --gpus 0,0,0,0\n"
           "                   or 0x4 (GPU 0 four times: four slices on one GPU)\n"
           "      --bandwidth  measure the copy bandwidth between this machine's GPUs (of\n"
           "                   --gpus LIST, or all), as MGPU_PLACEMENT=auto's cost model\n"
           "                   does: 64 MiB copies, the best of three\n"
           "      --ranks L    the GPUs each of L MPI ranks on this node takes under\n"
           "                   mpirun ... mgpu-run: disjoint groups by topology\n"
           "      --merge-traces OUT.json IN.json...\n"
           "                   the per-rank traces of an MPI run (--trace t.json wrote\n"
           "                   t.rank0.json, t.rank1.json, ...) as one file, a process per rank\n"
           "  -h, --help       show this help\n"
           "  -V, --version    show the version\n");
}

/* "--flag=value", "--flag value", "-nVALUE", "-n VALUE" */
static const char *option_value(int argc, char **argv, int *i, const char *flag)
{
    const char *arg = argv[*i];
    size_t n = strlen(flag);
    if (strncmp(arg, flag, n) != 0)
        return NULL;
    if (arg[n] == '=')
        return arg + n + 1;
    if (arg[n] != '\0')
        return flag[1] != '-' ? arg + n : NULL;
    if (*i + 1 >= argc) {
        say("%s needs a value; see mgpu-info --help", flag);
        exit(EXIT_USAGE);
    }
    return argv[++*i];
}

static const char *env_get(const char *name)
{
    return getenv(name);
}

/* The command line on top of MGPU_TOPOLOGY (the command line wins). */
static void parse_options(int argc, char **argv, const struct mgpu_config *env,
                          struct info_options *o)
{
    memset(o, 0, sizeof *o);
    if (env->topology_path[0])
        o->topology = env->topology_path;
    char err[256];
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i], *value;
        if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
            o->help = true;
        } else if (strcmp(arg, "-V") == 0 || strcmp(arg, "--version") == 0) {
            o->version = true;
        } else if (strcmp(arg, "--bandwidth") == 0) {
            o->bandwidth = true;
        } else if (strcmp(arg, "--merge-traces") == 0) {
            if (i + 2 >= argc) {
                say("--merge-traces needs OUT.json and the ranks' files; see mgpu-info --help");
                exit(EXIT_USAGE);
            }
            o->merge_out = argv[i + 1];
            o->merge_inputs = (const char *const *)&argv[i + 2];
            o->nmerge = argc - i - 2;
            break;
        } else if ((value = option_value(argc, argv, &i, "--ranks")) != NULL) {
            if (mgpu_parse_gpu_count(value, "--ranks ", &o->ranks, err, sizeof err) != 0) {
                say("%s", err);
                exit(EXIT_USAGE);
            }
        } else if ((value = option_value(argc, argv, &i, "--topology")) != NULL) {
            if (*value == '\0') {
                say("--topology needs a file name, e.g. --topology node.xml");
                exit(EXIT_USAGE);
            }
            o->topology = value;
        } else if ((value = option_value(argc, argv, &i, "--ngpus")) != NULL ||
                   (value = option_value(argc, argv, &i, "-n")) != NULL) {
            if (mgpu_parse_gpu_count(value, "-n ", &o->ngpus, err, sizeof err) != 0) {
                say("%s", err);
                exit(EXIT_USAGE);
            }
        } else if ((value = option_value(argc, argv, &i, "--gpus")) != NULL) {
            if (mgpu_parse_gpu_list(value, "--gpus ", o->gpus, MGPU_MAX_GPUS, &o->gpus_len, err,
                                    sizeof err) != 0) {
                say("%s", err);
                exit(EXIT_USAGE);
            }
        } else {
            say("unknown option %s; see mgpu-info --help", arg);
            exit(EXIT_USAGE);
        }
    }
}

static int load_this_machine(struct mgpu_topology *t, char *err, size_t errlen)
{
    char driver[4096];
    if (mgpu_driver_locate(MGPU_PKGLIBDIR "/libcuda.so.1", driver, sizeof driver, err, errlen) !=
            0 ||
        mgpu_driver_load(driver, err, errlen) != 0)
        return -1;
    CUresult r = mgpu_drv.cuInit(0);
    if (r != CUDA_SUCCESS) {
        snprintf(err, errlen, "the CUDA driver does not start (%s)", mgpu_cu_error_name(r));
        return -1;
    }
    return mgpu_topology_load_machine(t, err, errlen);
}

static void print_gpus(const struct mgpu_topology *t)
{
    int name_width = 4;
    for (int i = 0; i < t->gpu_count; i++)
        if ((int)strlen(t->gpus[i].name) > name_width)
            name_width = (int)strlen(t->gpus[i].name);
    printf("GPU  bus id        %-*s  SMs  clock     memory     NUMA  socket  CPUs\n", name_width,
           "name");
    for (int i = 0; i < t->gpu_count; i++) {
        const struct mgpu_gpu *g = &t->gpus[i];
        char sms[16] = "?", clock[16] = "?", memory[24] = "?", numa[16] = "?", socket[16] = "?";
        if (g->multiprocessors > 0)
            snprintf(sms, sizeof sms, "%d", g->multiprocessors);
        if (g->clock_khz > 0)
            snprintf(clock, sizeof clock, "%d MHz", g->clock_khz / 1000);
        if (g->memory_bytes > 0)
            snprintf(memory, sizeof memory, "%.1f GiB", (double)g->memory_bytes / (1 << 30));
        if (g->numa_node >= 0)
            snprintf(numa, sizeof numa, "%d", g->numa_node);
        if (g->package >= 0)
            snprintf(socket, sizeof socket, "%d", g->package);
        printf("%-4d %-13s %-*s  %-4s %-9s %-10s %-5s %-7s %s\n", g->cuda_index,
               g->bus_id[0] ? g->bus_id : "?", name_width, g->name[0] ? g->name : "?", sms, clock,
               memory, numa, socket, g->cpus[0] ? g->cpus : "?");
    }
}

static void print_links(const struct mgpu_topology *t)
{
    printf("\nlinks:\n     ");
    for (int j = 0; j < t->gpu_count; j++)
        printf(j + 1 < t->gpu_count ? " GPU%-2d" : " GPU%d", t->gpus[j].cuda_index);
    printf("\n");
    for (int i = 0; i < t->gpu_count; i++) {
        printf("GPU%-2d", t->gpus[i].cuda_index);
        for (int j = 0; j < t->gpu_count; j++) {
            char label[16];
            mgpu_link_label(&t->links[i][j], label, sizeof label);
            printf(j + 1 < t->gpu_count ? " %-5s" : " %s", label);
        }
        printf("\n");
    }
    printf("  X = itself, NV# = NVLink with # links (NV: count unknown), PIX = one PCIe switch,\n"
           "  PXB = several PCIe switches, PHB = one PCIe host bridge, NODE = host bridges of one\n"
           "  NUMA node, SYS = across sockets, PCI = PCIe (path unknown), none = no peer access\n");
}

static void print_numa(const struct mgpu_topology *t)
{
    printf("\nNUMA nodes:\n");
    for (int n = 0; n < t->numa_count; n++) {
        const struct mgpu_numa_node *node = &t->numa[n];
        printf("  node %d", node->os_index);
        if (node->package >= 0)
            printf(" (socket %d)", node->package);
        printf(": CPUs %s; GPUs", node->cpus[0] ? node->cpus : "none");
        int shown = 0;
        for (int i = 0; i < t->gpu_count; i++)
            if (t->gpus[i].numa_node == node->os_index) {
                printf("%s%d", shown ? "," : " ", t->gpus[i].cuda_index);
                shown++;
            }
        printf("%s\n", shown ? "" : " none");
    }
    if (!t->this_machine)
        printf("  this process: not on this topology (the XML of another machine)\n");
    else if (t->process_numa >= 0 && t->numa_count > 1)
        printf("  this process: bound to NUMA node %d\n", t->process_numa);
    else if (t->process_package >= 0 && t->package_count > 1)
        printf("  this process: bound to socket %d\n", t->process_package);
    else
        printf("  this process: may run on any CPU\n");
}

static const char *plural(int n, const char *one, const char *many)
{
    return n == 1 ? one : many;
}

/* One decision: the GPUs in slice order, their weights, the worst link. */
static void print_choice(const char *what, const struct mgpu_gpu_choice *c, int width,
                         int weights_width)
{
    char gpus[MGPU_MAX_GPUS * 4] = "", weights[MGPU_MAX_GPUS * 8] = "";
    size_t gl = 0, wl = 0;
    for (int i = 0; i < c->count; i++) {
        gl += (size_t)snprintf(gpus + gl, sizeof gpus - gl, "%s%d", i ? "," : "", c->gpus[i]);
        wl += (size_t)snprintf(weights + wl, sizeof weights - wl, "%s%.3f", i ? "," : "",
                               c->weights[i]);
    }
    char worst[16] = "-";
    if (c->count > 1)
        mgpu_link_label(&c->worst_link, worst, sizeof worst);
    printf("  %s GPUs %-*s  weights %-*s  worst link %s\n", what, width, gpus, weights_width,
           weights, worst);
}

/* `width`: the longest GPU list of the decisions shown, so that they line up */
static void print_decision(const struct mgpu_topology *t, int k, int width)
{
    struct mgpu_gpu_choice c;
    char err[256], what[16];
    if (mgpu_choose_gpus(t, k, &c, err, sizeof err) != 0) {
        say("%s", err);
        exit(EXIT_USAGE);
    }
    snprintf(what, sizeof what, "-n %-2d", k);
    print_choice(what, &c, width, 6 * t->gpu_count - 1);
}

/* --bandwidth: the cost model's links between the listed GPUs (all when
 * none are), measured on this machine. */
static int print_bandwidths(const struct mgpu_topology *t, const int *list, int len)
{
    int entries[MGPU_MAX_GPUS], devices[MGPU_MAX_GPUS], ndevices = 0;
    int n = len > 0 ? len : t->gpu_count < MGPU_MAX_GPUS ? t->gpu_count : MGPU_MAX_GPUS;
    for (int i = 0; i < n; i++) {
        entries[i] = len > 0 ? list[i] : t->gpus[i].cuda_index;
        bool seen = false;
        for (int d = 0; d < ndevices && !seen; d++)
            seen = devices[d] == entries[i];
        if (!seen)
            devices[ndevices++] = entries[i];
    }
    static double gbps[MGPU_MAX_GPUS][MGPU_MAX_GPUS];
    static struct mgpu_link_model m;
    char err[256];
    if (mgpu_link_measure(devices, ndevices, false, false, NULL, gbps, err, sizeof err) != 0 ||
        mgpu_link_model_build(&m, entries, n, devices, ndevices, gbps) != 0) {
        say("%s", err[0] ? err : "no bandwidth model for these GPUs");
        return EXIT_FAILURE;
    }
    printf("copy bandwidth between the GPUs (%zu MiB copies, the best of three; * modelled: "
           "entries of one device, a twelfth of local):\n",
           MGPU_LINK_MEASURE_BYTES >> 20);
    char lines[MGPU_MAX_GPUS][512];
    int nlines = mgpu_link_model_describe(&m, lines, MGPU_MAX_GPUS);
    for (int i = 0; i < nlines; i++)
        printf("  %s\n", lines[i]);
    return 0;
}

/* --ranks L: each local rank's group, as mgpu-run takes it under MPI. */
static int print_ranks(const struct mgpu_topology *t, int ranks)
{
    struct mgpu_rank_groups g;
    char err[256];
    if (mgpu_rank_groups(t, ranks, &g, err, sizeof err) != 0) {
        say("%s", err);
        return EXIT_USAGE;
    }
    printf("%d MPI ranks on this node (%s): %d GPU%s each, in local-rank order\n", ranks, t->source,
           g.share, g.share == 1 ? "" : "s");
    for (int r = 0; r < ranks; r++) {
        printf("  local rank %d: GPUs", r);
        for (int i = 0; i < g.share; i++)
            printf("%s%d", i ? "," : " ", g.order[r * g.share + i]);
        printf("\n");
    }
    if (g.left_out > 0) {
        printf("  left out:");
        for (int i = ranks * g.share; i < t->gpu_count; i++)
            printf("%s%d", i > ranks * g.share ? "," : " ", g.order[i]);
        printf(" (%d GPUs do not divide among %d ranks)\n", t->gpu_count, ranks);
    }
    return 0;
}

/* --gpus: the GPUs as listed; where one stands for several of the run's
 * GPUs, which device each slice runs on. */
static void print_listed(const struct mgpu_topology *t, const int *list, int len)
{
    struct mgpu_gpu_choice c;
    char err[256];
    if (mgpu_gpus_as_listed(t, list, len, &c, err, sizeof err) != 0) {
        say("%s", err);
        exit(EXIT_USAGE);
    }
    print_choice("--gpus", &c, 0, 0);
    int devices = 0;
    for (int i = 0; i < len; i++) {
        bool first = true;
        for (int j = 0; j < i; j++)
            first = first && list[j] != list[i];
        devices += first;
    }
    if (devices < len)
        printf("  %d GPUs on %d device%s: each GPU its own slice of every launch, part of every "
               "buffer, rewritten module and worker, on the device listed; results as on %d GPUs, "
               "no faster\n",
               len, devices, devices == 1 ? "" : "s", len);
}

int main(int argc, char **argv)
{
    static struct mgpu_config env;
    char err[512];
    if (mgpu_config_parse(&env, env_get, err, sizeof err) != 0) {
        say("%s", err);
        return EXIT_USAGE;
    }
    struct info_options opt;
    parse_options(argc, argv, &env, &opt);
    if (opt.help) {
        usage();
        return 0;
    }
    if (opt.version) {
        printf("mgpu-info %s\n", PACKAGE_VERSION);
        return 0;
    }
    if (opt.merge_out != NULL) {
        if (mgpu_trace_merge(opt.merge_out, opt.merge_inputs, opt.nmerge, err, sizeof err) != 0) {
            say("%s", err);
            return EXIT_FAILURE;
        }
        printf("merged %d trace%s into %s\n", opt.nmerge, opt.nmerge == 1 ? "" : "s",
               opt.merge_out);
        return 0;
    }
    static struct mgpu_topology t;
    if (opt.topology != NULL) {
        if (mgpu_topology_load_xml(&t, opt.topology, err, sizeof err) != 0) {
            say("%s", err);
            return EXIT_FAILURE;
        }
    } else if (load_this_machine(&t, err, sizeof err) != 0) {
        say("no GPU to show: %s; or give an hwloc XML topology with --topology FILE.xml", err);
        return EXIT_FAILURE;
    }
    int width = 0;
    for (int i = 0; i < t.gpu_count; i++)
        width += snprintf(NULL, 0, "%s%d", i ? "," : "", t.gpus[i].cuda_index);
    if (opt.ngpus > 0 && opt.gpus_len > 0) {
        say("-n and --gpus both choose GPUs; give one of them");
        return EXIT_USAGE;
    }
    if (opt.ranks > 0)
        return print_ranks(&t, opt.ranks);
    if (opt.bandwidth) {
        if (!t.this_machine || opt.topology != NULL) {
            say("--bandwidth measures this machine's GPUs; leave out --topology");
            return EXIT_USAGE;
        }
        return print_bandwidths(&t, opt.gpus, opt.gpus_len);
    }
    if (opt.gpus_len > 0) {
        print_listed(&t, opt.gpus, opt.gpus_len);
        return 0;
    }
    if (opt.ngpus > 0) {
        print_decision(&t, opt.ngpus, width);
        return 0;
    }
    printf("topology: %s; %d %s, %d %s, %d NUMA %s\n", t.source, t.gpu_count,
           plural(t.gpu_count, "GPU", "GPUs"), t.package_count,
           plural(t.package_count, "socket", "sockets"), t.numa_count,
           plural(t.numa_count, "node", "nodes"));
    if (t.note[0])
        printf("note: %s\n", t.note);
    printf("\n");
    print_gpus(&t);
    print_links(&t);
    print_numa(&t);
    printf("\ndecisions (the GPUs of -n N in slice order, the first is home; their weights):\n");
    for (int k = 1; k <= t.gpu_count; k++)
        print_decision(&t, k, width);
    return 0;
}

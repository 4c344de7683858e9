/* Unit test of the topology model and the decisions taken from it, on the
 * hand-written machines of tests/topology/ (two sockets of PCIe switches;
 * an NVSwitch box; NVLink pairs) and on models built here (a hybrid cube
 * mesh, a pair without peer access, 32 GPUs in NVLink islands): which GPUs
 * -n k takes, their order and weights; the weight rule alone; where the
 * process runs, from hwloc's view of its binding; one-line errors for a
 * missing, corrupt or GPU-less file; and binding a thread near a PCI device
 * of this machine. */
#include "check.h"
#include "partition/gpu_choice.h"
#include "partition/hwloc_open.h"
#include "partition/rank_groups.h"
#include "partition/thread_binding.h"
#include "partition/topology.h"
#include "topology_models.h"

#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

#ifndef MGPU_TEST_TOPOLOGY_DIR
#error "MGPU_TEST_TOPOLOGY_DIR must name tests/topology in the source tree"
#endif

static struct mgpu_topology topo;

static void load(const char *name)
{
    char path[1024], err[512] = "";
    snprintf(path, sizeof path, "%s/%s", MGPU_TEST_TOPOLOGY_DIR, name);
    if (mgpu_topology_load_xml(&topo, path, err, sizeof err) != 0) {
        fprintf(stderr, "cannot load %s: %s\n", path, err);
        exit(1);
    }
}

static struct mgpu_gpu_choice choose(int k)
{
    struct mgpu_gpu_choice c;
    char err[256] = "";
    if (mgpu_choose_gpus(&topo, k, &c, err, sizeof err) != 0) {
        fprintf(stderr, "mgpu_choose_gpus(%d): %s\n", k, err);
        exit(1);
    }
    return c;
}

/* "0,1,2" for the GPUs of a choice */
static const char *gpus_of(const struct mgpu_gpu_choice *c)
{
    static char text[MGPU_TOPOLOGY_MAX_GPUS * 4];
    size_t len = 0;
    text[0] = '\0';
    for (int i = 0; i < c->count; i++)
        len += (size_t)snprintf(text + len, sizeof text - len, "%s%d", i ? "," : "", c->gpus[i]);
    return text;
}

static const char *label(int i, int j)
{
    static char text[16];
    mgpu_link_label(&topo.links[i][j], text, sizeof text);
    return text;
}

static bool near(double a, double b)
{
    return a - b < 1e-9 && b - a < 1e-9;
}

static void test_two_sockets_of_pcie_switches(void)
{
    load("two-socket-pcie.xml");
    CHECK(topo.gpu_count == 8 && topo.numa_count == 2 && topo.package_count == 2);
    CHECK(!topo.this_machine && topo.process_numa == -1 && topo.process_package == -1);
    const struct mgpu_gpu *g0 = &topo.gpus[0], *g4 = &topo.gpus[4], *g7 = &topo.gpus[7];
    CHECK(g0->cuda_index == 0 && g7->cuda_index == 7);
    CHECK_STR(g0->bus_id, "0000:03:00.0");
    CHECK_STR(g0->name, "NVIDIA L40S");
    CHECK(g0->multiprocessors == 142 && g0->clock_khz == 2520000);
    CHECK(g0->memory_bytes == 47173632ULL * 1024);
    CHECK(g0->numa_node == 0 && g0->package == 0);
    CHECK_STR(g0->cpus, "0,2,4,6");
    CHECK(g4->numa_node == 1 && g4->package == 1);
    CHECK_STR(g4->cpus, "1,3,5,7");
    CHECK_STR(g4->bus_id, "0000:83:00.0");
    CHECK_STR(g7->name, "NVIDIA L4");
    CHECK(g7->multiprocessors == 58 && g7->clock_khz == 2040000);
    CHECK_STR(topo.numa[1].cpus, "1,3,5,7");
    CHECK(topo.numa[1].os_index == 1 && topo.numa[1].package == 1);

    CHECK_STR(label(0, 0), "X");
    CHECK_STR(label(0, 1), "PIX"); /* one switch */
    CHECK_STR(label(2, 3), "PIX");
    CHECK_STR(label(0, 2), "PHB"); /* two switches under one host bridge */
    CHECK_STR(label(1, 3), "PHB");
    CHECK_STR(label(0, 4), "SYS"); /* the other socket */
    CHECK_STR(label(7, 3), "SYS");
    CHECK_STR(label(6, 7), "PIX");

    struct mgpu_gpu_choice c = choose(2);
    CHECK_STR(gpus_of(&c), "0,1"); /* one switch pair */
    CHECK(c.worst_link.link_class == MGPU_LINK_PIX);
    c = choose(3);
    CHECK_STR(gpus_of(&c), "0,1,2");
    c = choose(4);
    CHECK_STR(gpus_of(&c), "0,1,2,3"); /* one socket, switch pairs adjacent */
    CHECK(c.worst_link.link_class == MGPU_LINK_PHB);
    CHECK(near(c.weights[0], 0.25) && near(c.weights[3], 0.25));
    c = choose(6); /* one socket and a switch pair of the other */
    CHECK_STR(gpus_of(&c), "0,1,2,3,4,5");
    CHECK(c.worst_link.link_class == MGPU_LINK_SYS);
    c = choose(8);
    CHECK_STR(gpus_of(&c), "0,1,2,3,4,5,6,7");

    /* GPU 7 is smaller: its weight follows SMs x clock. */
    double big = 142.0 * 2520000, small = 58.0 * 2040000, total = 7 * big + small;
    CHECK(near(c.weights[0], big / total) && near(c.weights[7], small / total));
    double sum = 0;
    for (int i = 0; i < 8; i++)
        sum += c.weights[i];
    CHECK(near(sum, 1));

    /* A process bound to socket 1 gets socket 1's GPUs first. */
    topo.process_numa = 1;
    topo.process_package = 1;
    c = choose(4);
    CHECK_STR(gpus_of(&c), "4,5,6,7");
    CHECK(c.near_process == 4);
    CHECK(near(c.weights[0], big / (3 * big + small)));
    CHECK(near(c.weights[3], small / (3 * big + small)));
    c = choose(2);
    CHECK_STR(gpus_of(&c), "4,5");
    c = choose(8);
    CHECK_STR(gpus_of(&c), "4,5,6,7,0,1,2,3");
    c = choose(1);
    CHECK_STR(gpus_of(&c), "4");
    CHECK(c.worst_link.link_class == MGPU_LINK_SELF && near(c.weights[0], 1));
}

/* The GPUs of rank r of L, as "a,b,c". */
static const char *group_of(const struct mgpu_rank_groups *g, int r)
{
    static char text[MGPU_TOPOLOGY_MAX_GPUS * 4];
    size_t used = 0;
    text[0] = '\0';
    for (int i = 0; i < g->share; i++)
        used += (size_t)snprintf(text + used, sizeof text - used, "%s%d", i ? "," : "",
                                 g->order[r * g->share + i]);
    return text;
}

/* MPI ranks on one node: disjoint groups by topology, the same in every
 * rank wherever it runs; a rank per GPU at most. */
static void test_rank_groups(void)
{
    char err[256];
    struct mgpu_rank_groups g;
    load("two-socket-pcie.xml");
    topo.process_numa = topo.process_package = 1; /* a rank bound to socket 1 */
    CHECK(mgpu_rank_groups(&topo, 2, &g, err, sizeof err) == 0);
    CHECK(g.share == 4 && g.left_out == 0);
    CHECK_STR(group_of(&g, 0), "0,1,2,3"); /* a socket each, rank 0 first */
    CHECK_STR(group_of(&g, 1), "4,5,6,7");
    CHECK(mgpu_rank_groups(&topo, 4, &g, err, sizeof err) == 0);
    CHECK_STR(group_of(&g, 1), "2,3"); /* a PCIe switch each */
    CHECK_STR(group_of(&g, 3), "6,7");
    CHECK(mgpu_rank_groups(&topo, 3, &g, err, sizeof err) == 0);
    CHECK(g.share == 2 && g.left_out == 2);
    CHECK(mgpu_rank_groups(&topo, 8, &g, err, sizeof err) == 0 && g.share == 1);
    CHECK(mgpu_rank_groups(&topo, 9, &g, err, sizeof err) == -1);
    CHECK_CONTAINS(err, "9 ranks on a node of 8 GPUs: each rank needs one");
    CHECK(mgpu_rank_groups(&topo, 0, &g, err, sizeof err) == -1);

    load("nvlink-pairs.xml");
    CHECK(mgpu_rank_groups(&topo, 2, &g, err, sizeof err) == 0);
    CHECK_STR(group_of(&g, 0), "0,1"); /* an NVLink pair each */
    CHECK_STR(group_of(&g, 1), "2,3");
}

static void test_nvswitch_box(void)
{
    load("nvswitch-8gpu.xml");
    CHECK(topo.gpu_count == 8);
    CHECK_STR(topo.gpus[5].name, "NVIDIA H200");
    CHECK(topo.gpus[3].numa_node == 0 && topo.gpus[4].numa_node == 1);
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 8; j++)
            if (i != j) {
                CHECK(topo.links[i][j].link_class == MGPU_LINK_NVLINK);
                CHECK(topo.links[i][j].nvlink_mbps == 450000);
            }
    CHECK_STR(label(0, 7), "NV18");
    /* Every pair alike: every decision is index order with equal weights. */
    for (int k = 1; k <= 8; k++) {
        struct mgpu_gpu_choice c = choose(k);
        CHECK(c.count == k);
        for (int i = 0; i < k; i++) {
            CHECK(c.gpus[i] == i);
            CHECK(near(c.weights[i], 1.0 / k));
        }
        CHECK(c.worst_link.link_class == (k == 1 ? MGPU_LINK_SELF : MGPU_LINK_NVLINK));
    }
}

static void test_nvlink_pairs(void)
{
    load("nvlink-pairs.xml");
    CHECK(topo.gpu_count == 4 && topo.numa_count == 1 && topo.package_count == 1);
    CHECK_STR(topo.gpus[2].bus_id, "0000:ca:00.0");
    CHECK_STR(topo.gpus[2].cpus, "0-7");
    CHECK_STR(label(0, 1), "NV12");
    CHECK(topo.links[2][3].nvlink_mbps == 300000);
    CHECK_STR(label(1, 2), "NODE"); /* between host bridges of one NUMA node */
    CHECK_STR(label(0, 3), "NODE");

    struct mgpu_gpu_choice c = choose(2);
    CHECK_STR(gpus_of(&c), "0,1");
    CHECK(c.worst_link.link_class == MGPU_LINK_NVLINK);
    c = choose(4);
    CHECK_STR(gpus_of(&c), "0,1,2,3"); /* both pairs adjacent */

    /* Without the 0-1 bridge, the remaining NVLink pair wins. */
    topo.links[0][1].link_class = topo.links[1][0].link_class = MGPU_LINK_NODE;
    c = choose(2);
    CHECK_STR(gpus_of(&c), "2,3");
    c = choose(3);
    CHECK_STR(gpus_of(&c), "0,2,3"); /* the pair, then the lowest index */
    /* and a pair the driver refuses peer access to is avoided */
    topo.links[2][3].link_class = topo.links[3][2].link_class = MGPU_LINK_NO_PEER;
    c = choose(4);
    CHECK(c.worst_link.link_class == MGPU_LINK_NO_PEER);
    CHECK(c.gpus[0] != 2 || c.gpus[1] != 3);
    for (int i = 0; i + 1 < 4; i++)
        CHECK(!((c.gpus[i] == 2 && c.gpus[i + 1] == 3) || (c.gpus[i] == 3 && c.gpus[i + 1] == 2)));
}

static void test_hybrid_cube_mesh(void)
{
    /* Two fully linked quads, 0-3 and 4-7, and i linked to i+4: index order
     * would put the PCIe pair 3-4 side by side. */
    model_all_linked(&topo, 8, MGPU_LINK_SYS);
    for (int q = 0; q < 8; q += 4)
        for (int i = q; i < q + 4; i++)
            for (int j = i + 1; j < q + 4; j++)
                model_add_nvlink(&topo, i, j, 1);
    for (int i = 0; i < 4; i++)
        model_add_nvlink(&topo, i, i + 4, 1);
    struct mgpu_gpu_choice c = choose(8);
    CHECK_STR(gpus_of(&c), "0,1,2,3,7,4,5,6");
    c = choose(4);
    CHECK_STR(gpus_of(&c), "0,1,2,3");
    CHECK(c.worst_link.link_class == MGPU_LINK_NVLINK);
    /* More links win over fewer. */
    model_add_nvlink(&topo, 5, 6, 2);
    c = choose(2);
    CHECK_STR(gpus_of(&c), "5,6");
    CHECK_STR(label(5, 6), "NV2");
}

static void test_many_gpus(void)
{
    /* 32 GPUs in four NVLink islands of 8 (GPU i in island i % 4): too many
     * sets to try them all, so the set is grown and improved by swaps. */
    model_all_linked(&topo, 32, MGPU_LINK_SYS);
    for (int i = 0; i < 32; i++)
        for (int j = i + 1; j < 32; j++)
            if (i % 4 == j % 4)
                model_add_nvlink(&topo, i, j, 18);
    struct mgpu_gpu_choice c = choose(8);
    CHECK_STR(gpus_of(&c), "0,4,8,12,16,20,24,28");
    CHECK(c.worst_link.link_class == MGPU_LINK_NVLINK);
    c = choose(16);
    CHECK_STR(gpus_of(&c), "0,4,8,12,16,20,24,28,1,5,9,13,17,21,25,29");
    c = choose(32);
    CHECK(c.count == 32 && c.gpus[0] == 0 && c.gpus[7] == 28 && c.gpus[8] == 1);
}

static void test_weights(void)
{
    double w[4];
    int sms[] = {100, 50, 100, 50}, clocks[] = {1000, 1000, 500, 2000};
    mgpu_gpu_weights(2, sms, clocks, w);
    CHECK(near(w[0], 2.0 / 3) && near(w[1], 1.0 / 3));
    mgpu_gpu_weights(4, sms, clocks, w);
    CHECK(near(w[0], 1.0 / 3) && near(w[1], 1.0 / 6) && near(w[2], 1.0 / 6) && near(w[3], 1.0 / 3));
    mgpu_gpu_weights(2, sms, NULL, w); /* clocks unknown: SMs alone */
    CHECK(near(w[0], 2.0 / 3) && near(w[1], 1.0 / 3));
    int some_clocks[] = {1000, 0};
    mgpu_gpu_weights(2, sms, some_clocks, w);
    CHECK(near(w[0], 2.0 / 3));
    int some_sms[] = {100, 0};
    mgpu_gpu_weights(2, some_sms, clocks, w); /* SMs unknown: equal */
    CHECK(near(w[0], 0.5) && near(w[1], 0.5));
    mgpu_gpu_weights(3, NULL, NULL, w);
    CHECK(near(w[0], 1.0 / 3) && near(w[2], 1.0 / 3));
    mgpu_gpu_weights(1, sms, clocks, w);
    CHECK(near(w[0], 1));
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (f == NULL || fputs(text, f) < 0 || fclose(f) != 0) {
        perror(path);
        exit(1);
    }
}

static void expect_load_error(const char *path, const char *expect)
{
    char err[512] = "";
    CHECK(mgpu_topology_load_xml(&topo, path, err, sizeof err) == -1);
    CHECK_CONTAINS(err, expect);
    CHECK(strchr(err, '\n') == NULL);
    CHECK(err[0] != '\0');
}

static void test_bad_input(void)
{
    expect_load_error("/nonexistent/node.xml", "cannot read the topology /nonexistent/node.xml");
    expect_load_error("/nonexistent/node.xml", "lstopo --of xml");

    char dir[] = "/tmp/mgpu-topology.XXXXXX", path[64];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/corrupt.xml", dir);
    write_file(path, "<?xml version=\"1.0\"?>\n<topology version=\"2.0\">\n  <object type=\"Mach");
    expect_load_error(path, "is not an hwloc XML topology");
    write_file(path, "not XML at all\n");
    expect_load_error(path, "make it again with lstopo --of xml");
    write_file(path, "<?xml version=\"1.0\"?>\n<topology version=\"2.0\">\n"
                     "  <object type=\"Machine\" os_index=\"0\" cpuset=\"0x1\" complete_cpuset="
                     "\"0x1\" nodeset=\"0x1\" complete_nodeset=\"0x1\" gp_index=\"1\">\n"
                     "    <object type=\"NUMANode\" os_index=\"0\" cpuset=\"0x1\" "
                     "complete_cpuset=\"0x1\" nodeset=\"0x1\" complete_nodeset=\"0x1\" "
                     "gp_index=\"3\"/>\n"
                     "    <object type=\"PU\" os_index=\"0\" cpuset=\"0x1\" complete_cpuset=\"0x1\""
                     " nodeset=\"0x1\" complete_nodeset=\"0x1\" gp_index=\"2\"/>\n"
                     "  </object>\n</topology>\n");
    expect_load_error(path, "has no NVIDIA GPU");
    unlink(path);
    rmdir(dir);

    struct mgpu_gpu_choice c;
    char err[256];
    load("nvlink-pairs.xml");
    CHECK(mgpu_choose_gpus(&topo, 5, &c, err, sizeof err) == -1);
    CHECK_CONTAINS(err, "-n 5 asks for 5 GPUs but the topology");
    CHECK_CONTAINS(err, "has 4; use -n 4 or fewer");
    CHECK(mgpu_choose_gpus(&topo, 0, &c, err, sizeof err) == -1);

    char bus[MGPU_BUS_ID_LEN];
    CHECK(mgpu_bus_id_normalise("0000:3B:00.0", bus) == 0);
    CHECK_STR(bus, "0000:3b:00.0");
    CHECK(mgpu_bus_id_normalise("00000000:C1:00.1", bus) == 0);
    CHECK_STR(bus, "0000:c1:00.1");
    CHECK(mgpu_bus_id_normalise("0000:3b:00.0x", bus) == -1);
    CHECK(mgpu_bus_id_normalise("GPU-1234", bus) == -1);
    CHECK(mgpu_bus_id_normalise("0000:3b:0.0", bus) == -1);

    struct mgpu_link l = {.link_class = MGPU_LINK_NVLINK};
    char text[16];
    mgpu_link_label(&l, text, sizeof text);
    CHECK_STR(text, "NV"); /* NVLink known from the driver, count unknown */
    l.link_class = MGPU_LINK_NO_PEER;
    mgpu_link_label(&l, text, sizeof text);
    CHECK_STR(text, "none");
}

static bool allowed_cpu(int cpu)
{
    cpu_set_t set;
    return sched_getaffinity(0, sizeof set, &set) == 0 && CPU_ISSET(cpu, &set);
}

static void bind_to_cpu(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    CHECK(sched_setaffinity(0, sizeof set, &set) == 0);
}

/* With HWLOC_THISSYSTEM=1, hwloc takes the XML for this machine: the
 * process's real binding, CPU 0 or CPU 1, falls in socket 0 or socket 1 of
 * the two-socket machine (its CPUs alternate between the sockets). */
static void test_process_place(void)
{
    cpu_set_t saved;
    CHECK(sched_getaffinity(0, sizeof saved, &saved) == 0);
    setenv("HWLOC_THISSYSTEM", "1", 1);
    if (allowed_cpu(0)) {
        bind_to_cpu(0);
        load("two-socket-pcie.xml");
        CHECK(topo.this_machine && topo.process_numa == 0 && topo.process_package == 0);
        struct mgpu_gpu_choice c = choose(2);
        CHECK_STR(gpus_of(&c), "0,1");
        CHECK(c.near_process == 2);
        CHECK(sched_setaffinity(0, sizeof saved, &saved) == 0);
    }
    if (allowed_cpu(1)) {
        bind_to_cpu(1);
        load("two-socket-pcie.xml");
        CHECK(topo.process_numa == 1 && topo.process_package == 1);
        struct mgpu_gpu_choice c = choose(4);
        CHECK_STR(gpus_of(&c), "4,5,6,7");
        CHECK(sched_setaffinity(0, sizeof saved, &saved) == 0);
    } else {
        printf("note: CPU 1 is not available; socket 1 of the XML is not tried\n");
    }
    unsetenv("HWLOC_THISSYSTEM");
}

static void test_thread_binding(void)
{
    char err[256] = "";
    CHECK(mgpu_bind_thread_near_gpu("ffff:ff:1f.7", err, sizeof err) == -1);
    CHECK_CONTAINS(err, "hwloc does not see the PCI device ffff:ff:1f.7");
    CHECK(strchr(err, '\n') == NULL);

    /* Any PCI device of this machine stands in for a GPU. */
    hwloc_topology_t machine;
    if (mgpu_hwloc_open(&machine, NULL, MGPU_HWLOC_PCI, err, sizeof err) != 0) {
        printf("note: no hwloc topology of this machine (%s); binding not tried\n", err);
        return;
    }
    hwloc_obj_t pci = hwloc_get_next_pcidev(machine, NULL);
    if (pci == NULL) {
        printf("note: hwloc sees no PCI device here; binding not tried\n");
        hwloc_topology_destroy(machine);
        return;
    }
    char bus[MGPU_BUS_ID_LEN];
    snprintf(bus, sizeof bus, "%04x:%02x:%02x.%x", (unsigned)pci->attr->pcidev.domain,
             (unsigned)pci->attr->pcidev.bus, (unsigned)pci->attr->pcidev.dev,
             (unsigned)pci->attr->pcidev.func);
    hwloc_obj_t near_cpus = hwloc_get_non_io_ancestor_obj(machine, pci);
    cpu_set_t saved;
    CHECK(sched_getaffinity(0, sizeof saved, &saved) == 0);
    bind_to_cpu(0);
    if (mgpu_bind_thread_near_gpu(bus, err, sizeof err) != 0) {
        fprintf(stderr, "binding near %s: %s\n", bus, err);
        CHECK(!"mgpu_bind_thread_near_gpu failed");
    }
    cpu_set_t now;
    CHECK(sched_getaffinity(0, sizeof now, &now) == 0);
    /* bound to the CPUs near the device that the process may use, no others */
    for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
        bool is_near = hwloc_bitmap_isset(near_cpus->cpuset, (unsigned)cpu);
        if (CPU_ISSET(cpu, &now))
            CHECK(is_near);
        else if (CPU_ISSET(cpu, &saved))
            CHECK(!is_near);
    }
    CHECK(sched_setaffinity(0, sizeof saved, &saved) == 0);
    hwloc_topology_destroy(machine);
}

int main(void)
{
    test_two_sockets_of_pcie_switches();
    test_nvswitch_box();
    test_nvlink_pairs();
    test_rank_groups();
    test_hybrid_cube_mesh();
    test_many_gpus();
    test_weights();
    test_bad_input();
    test_process_place();
    test_thread_binding();
    CHECK_DONE();
}

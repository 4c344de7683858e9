/* Owns what mgpu reads from hwloc: the GPUs of an XML topology, and for each
 * GPU with a bus id its NUMA node, socket and nearby CPUs, the PCIe path
 * between two GPUs, NVLink bandwidths (hwloc's "NVLinkBandwidth" matrix),
 * the NUMA nodes, and where the process runs. */
#include "partition/topology_hwloc.h"

#include "base/monotonic_clock.h"

#include "partition/hwloc_open.h"
#include "partition/sysfs_places.h"

#include <errno.h>
#include <hwloc/linux.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One GPU as hwloc shows it: its PCI device and the OS devices that the
 * CUDA and NVML backends hang under it. */
struct hwloc_gpu {
    hwloc_obj_t pci;
    hwloc_obj_t cuda; /* "cudaN", or NULL */
    hwloc_obj_t nvml; /* "nvmlN", or NULL */
    int cuda_number, nvml_number;
};

static void format_bus_id(hwloc_obj_t pci, char out[MGPU_BUS_ID_LEN])
{
    snprintf(out, MGPU_BUS_ID_LEN, "%04x:%02x:%02x.%x", (unsigned)pci->attr->pcidev.domain,
             (unsigned)pci->attr->pcidev.bus, (unsigned)pci->attr->pcidev.dev,
             (unsigned)pci->attr->pcidev.func);
}

static hwloc_obj_t find_pci(hwloc_topology_t h, const char *bus_id)
{
    unsigned domain, bus, dev, func;
    if (sscanf(bus_id, "%x:%x:%x.%x", &domain, &bus, &dev, &func) != 4)
        return NULL;
    return hwloc_get_pcidev_by_busid(h, domain, bus, dev, func);
}

/* The N of "cudaN" for prefix "cuda"; -1 when the name is not that. */
static int numbered_name(const char *name, const char *prefix)
{
    size_t n = strlen(prefix);
    if (name == NULL || strncmp(name, prefix, n) != 0 || name[n] < '0' || name[n] > '9')
        return -1;
    char *end;
    long v = strtol(name + n, &end, 10);
    return *end == '\0' && v <= INT_MAX ? (int)v : -1;
}

static const char *info_of(hwloc_obj_t o, const char *name)
{
    return o != NULL ? hwloc_obj_get_info_by_name(o, name) : NULL;
}

static long long number_info(hwloc_obj_t o, const char *name)
{
    const char *text = info_of(o, name);
    if (text == NULL)
        return 0;
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    return errno == 0 && end != text && *end == '\0' && v > 0 ? v : 0;
}

static struct hwloc_gpu *gpu_entry(struct hwloc_gpu *found, int *count, hwloc_obj_t pci)
{
    for (int i = 0; i < *count; i++)
        if (found[i].pci == pci)
            return &found[i];
    if (*count == MGPU_TOPOLOGY_MAX_GPUS)
        return NULL;
    struct hwloc_gpu *g = &found[(*count)++];
    *g = (struct hwloc_gpu){.pci = pci, .cuda_number = -1, .nvml_number = -1};
    return g;
}

static int by_cuda_number(const void *a, const void *b)
{
    return ((const struct hwloc_gpu *)a)->cuda_number - ((const struct hwloc_gpu *)b)->cuda_number;
}

static int by_nvml_number(const void *a, const void *b)
{
    return ((const struct hwloc_gpu *)a)->nvml_number - ((const struct hwloc_gpu *)b)->nvml_number;
}

/* The NVIDIA display and 3D controllers, for topologies made without the
 * CUDA and NVML backends (Debian's hwloc has neither). */
static int list_nvidia_pci(hwloc_topology_t h, struct hwloc_gpu *found)
{
    int count = 0;
    for (hwloc_obj_t pci = NULL; (pci = hwloc_get_next_pcidev(h, pci)) != NULL;)
        if (pci->attr->pcidev.vendor_id == 0x10de && (pci->attr->pcidev.class_id >> 8) == 0x03 &&
            count < MGPU_TOPOLOGY_MAX_GPUS)
            gpu_entry(found, &count, pci);
    return count; /* hwloc lists PCI devices in bus order */
}

static int list_xml_gpus(hwloc_topology_t h, struct mgpu_topology *t, char *err, size_t errlen)
{
    struct hwloc_gpu found[MGPU_TOPOLOGY_MAX_GPUS];
    int count = 0, with_cuda = 0, with_nvml = 0;
    for (hwloc_obj_t os = NULL; (os = hwloc_get_next_osdev(h, os)) != NULL;) {
        int cuda = numbered_name(os->name, "cuda"), nvml = numbered_name(os->name, "nvml");
        if ((cuda < 0 && nvml < 0) || os->parent == NULL ||
            os->parent->type != HWLOC_OBJ_PCI_DEVICE)
            continue;
        struct hwloc_gpu *g = gpu_entry(found, &count, os->parent);
        if (g == NULL) {
            snprintf(err, errlen, "%s has more than %d GPUs; mgpu handles up to %d", t->source,
                     MGPU_TOPOLOGY_MAX_GPUS, MGPU_TOPOLOGY_MAX_GPUS);
            return -1;
        }
        if (cuda >= 0) {
            for (int i = 0; i < count; i++)
                if (found[i].cuda_number == cuda) {
                    snprintf(err, errlen, "%s names cuda%d twice; fix the file", t->source, cuda);
                    return -1;
                }
            g->cuda = os;
            g->cuda_number = cuda;
            with_cuda++;
        } else {
            g->nvml = os;
            g->nvml_number = nvml;
            with_nvml++;
        }
    }
    if (with_cuda > 0) {
        /* The CUDA devices are the GPUs; an NVML-only device is not one
         * CUDA can use. */
        int kept = 0;
        for (int i = 0; i < count; i++)
            if (found[i].cuda != NULL)
                found[kept++] = found[i];
        count = kept;
        qsort(found, (size_t)count, sizeof found[0], by_cuda_number);
    } else if (with_nvml > 0) {
        qsort(found, (size_t)count, sizeof found[0], by_nvml_number);
    } else {
        count = list_nvidia_pci(h, found);
    }
    if (count == 0) {
        snprintf(err, errlen,
                 "%s has no NVIDIA GPU (no cudaN or nvmlN device, no NVIDIA display or 3D "
                 "PCI device); give the topology of a machine with GPUs",
                 t->source);
        return -1;
    }
    t->gpu_count = count;
    for (int i = 0; i < count; i++) {
        struct mgpu_gpu *g = &t->gpus[i];
        const struct hwloc_gpu *f = &found[i];
        g->cuda_index = f->cuda != NULL ? f->cuda_number : i;
        format_bus_id(f->pci, g->bus_id);
        const char *model = info_of(f->cuda, "GPUModel");
        if (model == NULL)
            model = info_of(f->nvml, "GPUModel");
        if (model == NULL)
            model = info_of(f->pci, "PCIDevice");
        if (model != NULL)
            snprintf(g->name, sizeof g->name, "%s", model);
        else
            snprintf(g->name, sizeof g->name, "NVIDIA GPU [10de:%04x]",
                     (unsigned)f->pci->attr->pcidev.device_id);
        g->multiprocessors = (int)number_info(f->cuda, "CUDAMultiProcessors");
        g->memory_bytes = (unsigned long long)number_info(f->cuda, "CUDAGlobalMemorySize") * 1024;
        /* hwloc records no clock; mgpu's own attribute gives one to test
         * machines, and the driver gives it on this machine. */
        g->clock_khz = (int)number_info(f->cuda, "MGPUClockKHz");
    }
    return 0;
}

static int index_of(hwloc_obj_t o)
{
    return (int)(o->os_index != HWLOC_UNKNOWN_INDEX ? o->os_index : o->logical_index);
}

/* The socket of a CPU-side object: its Package ancestor, or, above the
 * packages, the only package that shares CPUs with it. */
static int package_of(hwloc_topology_t h, hwloc_obj_t obj)
{
    hwloc_obj_t p = obj->type == HWLOC_OBJ_PACKAGE
                        ? obj
                        : hwloc_get_ancestor_obj_by_type(h, HWLOC_OBJ_PACKAGE, obj);
    if (p != NULL)
        return index_of(p);
    hwloc_obj_t only = NULL;
    int sharing = 0;
    for (hwloc_obj_t q = NULL; (q = hwloc_get_next_obj_by_type(h, HWLOC_OBJ_PACKAGE, q)) != NULL;)
        if (obj->cpuset != NULL && hwloc_bitmap_intersects(q->cpuset, obj->cpuset)) {
            only = q;
            sharing++;
        }
    return sharing == 1 ? index_of(only) : -1;
}

static void cpu_list(hwloc_const_bitmap_t set, char *out, size_t outlen)
{
    if (set == NULL || hwloc_bitmap_list_snprintf(out, outlen, set) < 0)
        out[0] = '\0';
}

/* g's place from `near`, the smallest object of CPUs that holds its PCI
 * device. */
static void place_at(hwloc_topology_t h, hwloc_obj_t near, struct mgpu_gpu *g)
{
    cpu_list(near->cpuset, g->cpus, sizeof g->cpus);
    g->numa_node = near->nodeset != NULL && hwloc_bitmap_weight(near->nodeset) == 1
                       ? hwloc_bitmap_first(near->nodeset)
                       : -1;
    g->package = package_of(h, near);
}

static void read_place(hwloc_topology_t h, hwloc_obj_t pci, struct mgpu_gpu *g)
{
    hwloc_obj_t near = hwloc_get_non_io_ancestor_obj(h, pci);
    if (near != NULL)
        place_at(h, near, g);
}

static hwloc_obj_t common_ancestor(hwloc_obj_t a, hwloc_obj_t b)
{
    for (hwloc_obj_t x = a; x != NULL; x = x->parent)
        for (hwloc_obj_t y = b; y != NULL; y = y->parent)
            if (x == y)
                return x;
    return NULL;
}

static int bridges_between(hwloc_obj_t device, hwloc_obj_t ancestor)
{
    int n = 0;
    for (hwloc_obj_t o = device->parent; o != NULL && o != ancestor; o = o->parent)
        if (o->type == HWLOC_OBJ_BRIDGE)
            n++;
    return n;
}

/* nvidia-smi's classes, from where the two PCI paths meet. A PCIe switch
 * shows as an upstream bridge over one downstream bridge per port, so two
 * GPUs behind one switch meet at a bridge with one bridge below it on each
 * side. */
static enum mgpu_link_class pci_path_class(hwloc_topology_t h, hwloc_obj_t a, hwloc_obj_t b)
{
    hwloc_obj_t meet = common_ancestor(a, b);
    if (meet == NULL)
        return MGPU_LINK_PCIE;
    if (meet->type == HWLOC_OBJ_BRIDGE && meet->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_HOST)
        return MGPU_LINK_PHB;
    if (meet->type == HWLOC_OBJ_BRIDGE || meet->type == HWLOC_OBJ_PCI_DEVICE)
        return bridges_between(a, meet) <= 1 && bridges_between(b, meet) <= 1 ? MGPU_LINK_PIX
                                                                              : MGPU_LINK_PXB;
    hwloc_obj_t near_a = hwloc_get_non_io_ancestor_obj(h, a);
    hwloc_obj_t near_b = hwloc_get_non_io_ancestor_obj(h, b);
    if (near_a == NULL || near_b == NULL || near_a->nodeset == NULL || near_b->nodeset == NULL)
        return MGPU_LINK_SYS;
    return hwloc_bitmap_intersects(near_a->nodeset, near_b->nodeset) ? MGPU_LINK_NODE
                                                                     : MGPU_LINK_SYS;
}

/* The GPU that a matrix object stands for: a GPU's OS device or its PCI
 * device. */
static int gpu_of_object(const struct mgpu_topology *t, hwloc_obj_t o)
{
    if (o != NULL && o->type == HWLOC_OBJ_OS_DEVICE)
        o = o->parent;
    if (o == NULL || o->type != HWLOC_OBJ_PCI_DEVICE)
        return -1;
    char bus_id[MGPU_BUS_ID_LEN];
    format_bus_id(o, bus_id);
    for (int i = 0; i < t->gpu_count; i++)
        if (strcmp(t->gpus[i].bus_id, bus_id) == 0)
            return i;
    return -1;
}

static void read_nvlink(hwloc_topology_t h, struct mgpu_topology *t)
{
    unsigned nr = 1;
    struct hwloc_distances_s *d = NULL;
    if (hwloc_distances_get_by_name(h, "NVLinkBandwidth", &nr, &d, 0) != 0 || nr == 0)
        return;
    if (d->kind & HWLOC_DISTANCES_KIND_HETEROGENEOUS_TYPES) {
        /* GPUs joined through NVSwitch ports: merge the ports into one
         * switch, then connect every pair of GPUs across it. */
        hwloc_distances_transform(h, d, HWLOC_DISTANCES_TRANSFORM_MERGE_SWITCH_PORTS, NULL, 0);
        hwloc_distances_transform(h, d, HWLOC_DISTANCES_TRANSFORM_TRANSITIVE_CLOSURE, NULL, 0);
    }
    int *gpu = malloc(d->nbobjs * sizeof *gpu);
    if (gpu != NULL) {
        for (unsigned k = 0; k < d->nbobjs; k++)
            gpu[k] = gpu_of_object(t, d->objs[k]);
        for (unsigned x = 0; x < d->nbobjs; x++)
            for (unsigned y = 0; y < d->nbobjs; y++) {
                int i = gpu[x], j = gpu[y];
                hwloc_uint64_t mbps = d->values[x * d->nbobjs + y];
                if (i < 0 || j < 0 || i == j || mbps == 0)
                    continue;
                struct mgpu_link *l = &t->links[i][j], *back = &t->links[j][i];
                if (mbps > l->nvlink_mbps)
                    l->nvlink_mbps = back->nvlink_mbps = mbps;
                l->link_class = back->link_class = MGPU_LINK_NVLINK;
            }
        free(gpu);
    }
    hwloc_distances_release(h, d);
}

static void read_numa_nodes(hwloc_topology_t h, struct mgpu_topology *t)
{
    t->numa_count = 0;
    for (hwloc_obj_t n = NULL; (n = hwloc_get_next_obj_by_type(h, HWLOC_OBJ_NUMANODE, n)) != NULL &&
                               t->numa_count < MGPU_TOPOLOGY_MAX_NUMA;) {
        struct mgpu_numa_node *node = &t->numa[t->numa_count++];
        node->os_index = index_of(n);
        node->package = package_of(h, n);
        cpu_list(n->cpuset, node->cpus, sizeof node->cpus);
    }
    t->package_count = hwloc_get_nbobjs_by_type(h, HWLOC_OBJ_PACKAGE);
}

/* Only meaningful when the topology is this machine's: the XML of another
 * machine says nothing about where this process runs. The calling thread's
 * binding stands for the process's: the launcher and mgpu-info decide on
 * their one thread, which taskset or numactl bind with the rest. */
static void read_process_place(hwloc_topology_t h, struct mgpu_topology *t)
{
    t->process_numa = t->process_package = -1;
    t->this_machine = hwloc_topology_is_thissystem(h);
    if (!t->this_machine)
        return;
    hwloc_bitmap_t bound = hwloc_bitmap_alloc();
    if (bound == NULL)
        return;
    if (hwloc_get_cpubind(h, bound, HWLOC_CPUBIND_THREAD) == 0) {
        hwloc_bitmap_and(bound, bound, hwloc_topology_get_topology_cpuset(h));
        if (!hwloc_bitmap_iszero(bound)) {
            for (hwloc_obj_t n = NULL;
                 (n = hwloc_get_next_obj_by_type(h, HWLOC_OBJ_NUMANODE, n)) != NULL;)
                if (hwloc_bitmap_isincluded(bound, n->cpuset)) {
                    t->process_numa = index_of(n);
                    break;
                }
            for (hwloc_obj_t p = NULL;
                 (p = hwloc_get_next_obj_by_type(h, HWLOC_OBJ_PACKAGE, p)) != NULL;)
                if (hwloc_bitmap_isincluded(bound, p->cpuset)) {
                    t->process_package = index_of(p);
                    break;
                }
        }
    }
    hwloc_bitmap_free(bound);
}

/* Fills everything hwloc knows about t's GPUs; returns how many of them it
 * could not find. */
static int read_places(hwloc_topology_t h, struct mgpu_topology *t, int *first_missing)
{
    hwloc_obj_t pci[MGPU_TOPOLOGY_MAX_GPUS];
    int missing = 0;
    for (int i = 0; i < t->gpu_count; i++) {
        pci[i] = t->gpus[i].bus_id[0] ? find_pci(h, t->gpus[i].bus_id) : NULL;
        if (pci[i] != NULL)
            read_place(h, pci[i], &t->gpus[i]);
        else if (missing++ == 0)
            *first_missing = i;
    }
    for (int i = 0; i < t->gpu_count; i++)
        for (int j = i + 1; j < t->gpu_count; j++)
            if (pci[i] != NULL && pci[j] != NULL)
                t->links[i][j].link_class = t->links[j][i].link_class =
                    pci_path_class(h, pci[i], pci[j]);
    read_nvlink(h, t);
    read_numa_nodes(h, t);
    read_process_place(h, t);
    return missing;
}

int mgpu_topology_load_xml(struct mgpu_topology *t, const char *path, char *err, size_t errlen)
{
    mgpu_topology_clear(t);
    snprintf(t->source, sizeof t->source, "%s", path);
    hwloc_topology_t h;
    if (mgpu_hwloc_open(&h, path, MGPU_HWLOC_PCI, err, errlen) != 0)
        return -1;
    int r = list_xml_gpus(h, t, err, errlen);
    if (r == 0) {
        int first_missing = -1;
        read_places(h, t, &first_missing);
    }
    hwloc_topology_destroy(h);
    return r;
}

/* read_places without hwloc's PCI tree: each GPU's place from the CPUs the
 * kernel lists as near its PCI device (SYSFS/bus/pci/devices/ID/local_cpus,
 * SYSFS being /sys or MGPU_SYSFS for the tests), the PCIe paths between
 * GPUs left unknown. Returns how many GPUs have no such list. */
static int read_places_near_cpus(hwloc_topology_t h, struct mgpu_topology *t, int *first_missing)
{
    const char *sysfs = getenv("MGPU_SYSFS");
    hwloc_bitmap_t near_cpus = hwloc_bitmap_alloc();
    int missing = 0;
    for (int i = 0; i < t->gpu_count; i++) {
        char path[256];
        snprintf(path, sizeof path, "%s/bus/pci/devices/%s/local_cpus",
                 sysfs != NULL ? sysfs : "/sys", t->gpus[i].bus_id);
        hwloc_obj_t near = NULL;
        if (near_cpus != NULL && t->gpus[i].bus_id[0] &&
            hwloc_linux_read_path_as_cpumask(path, near_cpus) == 0) {
            hwloc_bitmap_and(near_cpus, near_cpus, hwloc_topology_get_topology_cpuset(h));
            if (!hwloc_bitmap_iszero(near_cpus))
                near = hwloc_get_obj_covering_cpuset(h, near_cpus);
        }
        if (near != NULL)
            place_at(h, near, &t->gpus[i]);
        else if (missing++ == 0)
            *first_missing = i;
    }
    hwloc_bitmap_free(near_cpus);
    read_numa_nodes(h, t);
    read_process_place(h, t);
    return missing;
}

int mgpu_topology_read_machine_places(struct mgpu_topology *t, bool pci_paths, char *why,
                                      size_t whylen)
{
    hwloc_topology_t h;
    if (mgpu_hwloc_open(&h, NULL, pci_paths ? MGPU_HWLOC_PCI_NVML : MGPU_HWLOC_CPUS, why, whylen) !=
        0)
        return -1;
    int first_missing = -1;
    int missing =
        pci_paths ? read_places(h, t, &first_missing) : read_places_near_cpus(h, t, &first_missing);
    hwloc_topology_destroy(h);
    if (missing > 0) {
        snprintf(why, whylen,
                 pci_paths ? "hwloc does not see the PCI device of %d GPU(s) (GPU %d, %s); their "
                             "place and PCIe paths are unknown"
                           : "the kernel lists no CPUs near the PCI device of %d GPU(s) (GPU %d, "
                             "%s); their place is unknown",
                 missing, t->gpus[first_missing].cuda_index,
                 t->gpus[first_missing].bus_id[0] ? t->gpus[first_missing].bus_id : "no bus id");
        return -1;
    }
    return 0;
}

void mgpu_topology_place_and_link(struct mgpu_topology *t,
                                  const int (*peer)[MGPU_TOPOLOGY_MAX_GPUS],
                                  const bool (*nvlink)[MGPU_TOPOLOGY_MAX_GPUS], bool pci_paths)
{
    long long begin = mgpu_monotonic_ns();
    /* Without PCIe paths to read, and every GPU as near every CPU as the
     * next, hwloc would tell nothing that decides (tens of ms on 4 x H200). */
    t->places_alike = !pci_paths && mgpu_sysfs_places_alike(t);
    if (t->places_alike ||
        mgpu_topology_read_machine_places(t, pci_paths, t->note, sizeof t->note) == 0)
        t->note[0] = '\0';
    t->places_ms = mgpu_ms_since(begin);
    for (int i = 0; i < t->gpu_count; i++)
        for (int j = 0; j < t->gpu_count; j++) {
            struct mgpu_link *l = &t->links[i][j];
            if (i == j)
                continue;
            if (peer[i][j] == 0 || peer[j][i] == 0)
                l->link_class = MGPU_LINK_NO_PEER;
            else if (nvlink[i][j] && nvlink[j][i])
                l->link_class = MGPU_LINK_NVLINK;
        }
}

/* The node as mgpu sees it: its GPUs, where each sits (NUMA node, socket,
 * nearby CPUs) and how each pair is linked. Plain data, so that every
 * decision taken from it (partition/gpu_choice.h) is a pure function that
 * tests can check on machines that are not present. Loaded from hwloc (this
 * machine, or an hwloc XML file) and, on this machine, the CUDA driver. */
#ifndef MGPU_TOPOLOGY_H
#define MGPU_TOPOLOGY_H

#include <stdbool.h>
#include <stddef.h>

#define MGPU_TOPOLOGY_MAX_GPUS 64
#define MGPU_TOPOLOGY_MAX_NUMA 64
#define MGPU_BUS_ID_LEN 16 /* "0000:3b:00.0" and its NUL */

/* How two GPUs reach each other, from worst to best (the order matters: the
 * choice compares classes). The names are nvidia-smi's (`topo -m`). */
enum mgpu_link_class {
    MGPU_LINK_NO_PEER, /* the driver refuses peer access */
    MGPU_LINK_SYS,     /* PCIe and the interconnect between NUMA nodes (sockets) */
    MGPU_LINK_NODE,    /* PCIe between host bridges of one NUMA node */
    MGPU_LINK_PCIE,    /* PCIe, path unknown (hwloc does not see the devices) */
    MGPU_LINK_PHB,     /* PCIe through one host bridge */
    MGPU_LINK_PXB,     /* PCIe through several switches, not the host bridge */
    MGPU_LINK_PIX,     /* PCIe behind one switch */
    MGPU_LINK_NVLINK,  /* NVLink, direct or through NVSwitches */
    MGPU_LINK_SELF,
};

struct mgpu_gpu {
    int cuda_index;                  /* the driver's device ordinal */
    char bus_id[MGPU_BUS_ID_LEN];    /* "0000:3b:00.0"; empty when unknown */
    char name[96];                   /* empty when unknown */
    int multiprocessors;             /* 0 when unknown */
    int clock_khz;                   /* 0 when unknown */
    unsigned long long memory_bytes; /* 0 when unknown */
    int numa_node;                   /* OS index of the NUMA node it is attached to; -1 unknown */
    int package;                     /* OS index of its socket; -1 unknown */
    char cpus[256];                  /* the CPUs near it, as a list ("0-15,32-47"); empty unknown */
};

struct mgpu_link {
    enum mgpu_link_class link_class;
    int nvlink_lanes;               /* NVLink links joining the pair; 0 when unknown */
    unsigned long long nvlink_mbps; /* NVLink bandwidth one way, MB/s; 0 when unknown */
    int perf_rank;       /* the driver's P2P performance rank (lower is better); -1 unknown */
    bool native_atomics; /* the driver says peer atomics are native */
};

struct mgpu_numa_node {
    int os_index;
    int package; /* -1 when unknown */
    char cpus[256];
};

struct mgpu_topology {
    char source[256]; /* "this machine" or the XML file */
    int gpu_count;
    struct mgpu_gpu gpus[MGPU_TOPOLOGY_MAX_GPUS]; /* in CUDA index order */
    struct mgpu_link links[MGPU_TOPOLOGY_MAX_GPUS][MGPU_TOPOLOGY_MAX_GPUS];
    int numa_count;
    struct mgpu_numa_node numa[MGPU_TOPOLOGY_MAX_NUMA];
    int package_count;
    bool this_machine; /* false for the XML of another machine */
    /* Where the process may run: the one NUMA node / socket holding all the
     * CPUs it is bound to, or -1 (anywhere, or unknown when !this_machine). */
    int process_numa, process_package;
    char note[256];   /* what could not be learnt, for mgpu-info; empty when nothing */
    double places_ms; /* what reading this machine's places took; 0: not read */
    bool places_alike; /* they came from sysfs, alike for every GPU, hwloc not loaded */
};

/* An empty model: no GPU, everything unknown. */
void mgpu_topology_clear(struct mgpu_topology *t);

/* Loads an hwloc XML topology (hwloc 2 format). The GPUs are its OS devices
 * named cudaN (N is the CUDA index) or nvmlN, else its NVIDIA display and 3D
 * PCI devices in bus order. Returns 0, or -1 with a one-line message naming
 * the fix. */
int mgpu_topology_load_xml(struct mgpu_topology *t, const char *path, char *err, size_t errlen);

/* Loads this machine: the GPUs the CUDA driver shows (mgpu_drv, loaded and
 * initialised by the caller), their links from the driver, and their place
 * from hwloc. A failing hwloc leaves the places unknown (said in t->note).
 * Returns 0, or -1 with a one-line message. Defined in topology_driver.c. */
int mgpu_topology_load_machine(struct mgpu_topology *t, char *err, size_t errlen);

/* "0000:3B:00.0", "00000000:3b:00.0" -> "0000:3b:00.0". Returns 0, or -1
 * when `text` is not a PCI bus id. */
int mgpu_bus_id_normalise(const char *text, char out[MGPU_BUS_ID_LEN]);

/* nvidia-smi's short name of a link: "X", "NV18" (or "NV" with the count
 * unknown), "PIX", "PXB", "PHB", "NODE", "SYS", "PCI", "none". */
void mgpu_link_label(const struct mgpu_link *l, char *out, size_t outlen);

/* Orders links: greater is better. The class first, then the NVLink
 * bandwidth, then the driver's performance rank. */
long long mgpu_link_quality(const struct mgpu_link *l);

/* The position of the GPU with this CUDA index, or -1. */
int mgpu_topology_find_cuda(const struct mgpu_topology *t, int cuda_index);

#endif

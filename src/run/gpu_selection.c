/* Owns choosing the GPUs of a run from the request and the device count:
 * checking the request, then taking the topology's decision when the user
 * gave a count rather than a list. */
#include "src/run/gpu_selection.h"

#include "partition/gpu_choice.h"
#include "partition/rank_groups.h"

#include <stdio.h>
#include <string.h>

int gpu_select(int device_count, int ngpus, const char *count_source, const int *list, int list_len,
               const char *list_source, int *out, int *out_len, char *err, size_t errlen)
{
    if (device_count <= 0) {
        snprintf(err, errlen, "no GPU is visible; check nvidia-smi and CUDA_VISIBLE_DEVICES");
        return -1;
    }
    if (list_len > 0) {
        for (int i = 0; i < list_len; i++) {
            if (list[i] >= device_count) {
                snprintf(
                    err, errlen,
                    "%s lists GPU %d but this machine has GPUs 0 to %d; list GPUs from 0 to %d",
                    list_source, list[i], device_count - 1, device_count - 1);
                return -1;
            }
            out[i] = list[i];
        }
        *out_len = list_len;
        return 0;
    }
    int n = ngpus > 0 ? ngpus : device_count;
    if (n > device_count) {
        snprintf(err, errlen,
                 "%s%d asks for %d GPUs but this machine has %d; use %s%d or fewer, or --gpus "
                 "0x%d to run %d slices on GPU 0",
                 count_source, ngpus, ngpus, device_count, count_source, device_count, ngpus,
                 ngpus);
        return -1;
    }
    for (int i = 0; i < n; i++)
        out[i] = i;
    *out_len = n;
    return 0;
}

/* Whether t describes the driver's GPUs. */
static int topology_matches(const struct mgpu_topology *t, int device_count,
                            const char (*driver_bus_ids)[MGPU_BUS_ID_LEN], char *why,
                            size_t whylen)
{
    if (t->gpu_count != device_count) {
        snprintf(why, whylen, "the topology (%s) has %d GPUs but the driver sees %d", t->source,
                 t->gpu_count, device_count);
        return -1;
    }
    for (int i = 0; i < t->gpu_count; i++)
        if (t->gpus[i].cuda_index < 0 || t->gpus[i].cuda_index >= device_count) {
            snprintf(why, whylen, "the topology (%s) has a GPU %d but the driver's are 0 to %d",
                     t->source, t->gpus[i].cuda_index, device_count - 1);
            return -1;
        }
    for (int i = 0; driver_bus_ids != NULL && i < t->gpu_count; i++) {
        const struct mgpu_gpu *g = &t->gpus[i];
        const char *driver = driver_bus_ids[g->cuda_index];
        if (g->bus_id[0] && driver[0] && strcmp(g->bus_id, driver) != 0) {
            snprintf(why, whylen,
                     "GPU %d of the topology (%s) is at %s but the driver's GPU %d is at %s; it "
                     "describes another machine",
                     g->cuda_index, t->source, g->bus_id, g->cuda_index, driver);
            return -1;
        }
    }
    return 0;
}

int gpu_select_by_topology(const struct mgpu_topology *t, int device_count,
                           const char (*driver_bus_ids)[MGPU_BUS_ID_LEN], int n, int *out,
                           char *why, size_t whylen)
{
    struct mgpu_gpu_choice choice;
    if (topology_matches(t, device_count, driver_bus_ids, why, whylen) != 0 ||
        mgpu_choose_gpus(t, n, &choice, why, whylen) != 0)
        return -1;
    for (int i = 0; i < n; i++)
        out[i] = choice.gpus[i];
    return 0;
}

int gpu_select_for_rank(const struct mgpu_topology *t, int device_count,
                        const char (*driver_bus_ids)[MGPU_BUS_ID_LEN], int local_rank,
                        int local_size, int ngpus, const char *count_source, int *out,
                        int *out_len, char *err, size_t errlen)
{
    struct mgpu_rank_groups groups;
    if (topology_matches(t, device_count, driver_bus_ids, err, errlen) != 0 ||
        mgpu_rank_groups(t, local_size, &groups, err, errlen) != 0)
        return -1;
    if (ngpus > groups.share) {
        snprintf(err, errlen,
                 "%s%d asks for more than this rank's share: %d GPU%s on this node among %d "
                 "ranks, %d each; give %s%d or fewer, or the GPUs themselves with --gpus",
                 count_source, ngpus, t->gpu_count, t->gpu_count == 1 ? "" : "s", local_size,
                 groups.share, count_source, groups.share);
        return -1;
    }
    *out_len = ngpus > 0 ? ngpus : groups.share;
    for (int i = 0; i < *out_len; i++)
        out[i] = groups.order[local_rank * groups.share + i];
    return 0;
}

int gpu_select_devices(const int *chosen, int n, int *devices, int *entries)
{
    int ndevices = 0;
    for (int i = 0; i < n; i++) {
        int d = 0;
        while (d < ndevices && devices[d] != chosen[i])
            d++;
        if (d == ndevices)
            devices[ndevices++] = chosen[i];
        entries[i] = d;
    }
    return ndevices;
}

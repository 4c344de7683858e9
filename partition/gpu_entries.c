/* Owns the arithmetic of the run's GPU entries (see gpu_entries.h): making
 * them from a list, which device stands for which entries, their labels
 * and their shares of a split launch. */
#include "partition/gpu_entries.h"

#include <stdio.h>
#include <string.h>

int mgpu_gpu_entries_make(const int *list, int len, int device_count, struct mgpu_gpu_entries *out,
                          char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (device_count <= 0) {
        snprintf(err, errlen, "the driver sees no GPU; check nvidia-smi and CUDA_VISIBLE_DEVICES");
        return -1;
    }
    if (len > MGPU_MAX_GPUS) {
        snprintf(err, errlen, "%d GPUs listed; list at most %d", len, MGPU_MAX_GPUS);
        return -1;
    }
    if (len == 0) {
        out->count = device_count < MGPU_MAX_GPUS ? device_count : MGPU_MAX_GPUS;
        for (int g = 0; g < out->count; g++)
            out->device[g] = g;
        out->devices = out->count;
        return 0;
    }
    for (int g = 0; g < len; g++) {
        if (list[g] >= MGPU_MAX_GPUS) {
            snprintf(err, errlen, "GPU %d is listed but mgpu takes devices 0 to %d; list lower ones",
                     list[g], MGPU_MAX_GPUS - 1);
            memset(out, 0, sizeof *out);
            return -1;
        }
        if (list[g] < 0 || list[g] >= device_count) {
            snprintf(err, errlen,
                     "GPU %d is listed but the driver's GPUs are 0 to %d; list GPUs from 0 to %d",
                     list[g], device_count - 1, device_count - 1);
            memset(out, 0, sizeof *out);
            return -1;
        }
        out->device[g] = list[g];
    }
    out->count = len;
    for (int g = 0; g < len; g++)
        out->devices += mgpu_gpu_entries_first_on_device(out, g);
    return 0;
}

bool mgpu_gpu_entries_repeated(const struct mgpu_gpu_entries *e)
{
    return e->devices < e->count;
}

int mgpu_gpu_entries_sharing(const struct mgpu_gpu_entries *e, int g)
{
    int n = 0;
    for (int h = 0; h < e->count; h++)
        n += e->device[h] == e->device[g];
    return n;
}

bool mgpu_gpu_entries_first_on_device(const struct mgpu_gpu_entries *e, int g)
{
    for (int h = 0; h < g; h++)
        if (e->device[h] == e->device[g])
            return false;
    return true;
}

int mgpu_gpu_entries_distinct(const struct mgpu_gpu_entries *e, int out[MGPU_MAX_GPUS])
{
    int n = 0;
    for (int g = 0; g < e->count; g++)
        if (mgpu_gpu_entries_first_on_device(e, g))
            out[n++] = e->device[g];
    return n;
}

void mgpu_gpu_entries_label(const struct mgpu_gpu_entries *e, int g, char *out, size_t outlen)
{
    if (mgpu_gpu_entries_repeated(e))
        snprintf(out, outlen, "GPU %d (device %d)", g, e->device[g]);
    else
        snprintf(out, outlen, "GPU %d", g);
}

/* A device whose weight is unknown (not positive) makes every device
 * count alike, as mgpu_gpu_weights does for unknown figures. */
void mgpu_gpu_entries_weights(const struct mgpu_gpu_entries *e, const double *device_weight,
                              double out[MGPU_MAX_GPUS])
{
    bool known = true;
    for (int g = 0; g < e->count; g++)
        known = known && device_weight[e->device[g]] > 0;
    double total = 0;
    for (int g = 0; g < e->count; g++)
        if (mgpu_gpu_entries_first_on_device(e, g))
            total += known ? device_weight[e->device[g]] : 1.0;
    for (int g = 0; g < e->count; g++)
        out[g] = (known ? device_weight[e->device[g]] : 1.0) / total / mgpu_gpu_entries_sharing(e, g);
}

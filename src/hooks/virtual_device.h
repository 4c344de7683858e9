/* The one device the program sees, standing for all the selected GPUs. */
#ifndef MGPU_VIRTUAL_DEVICE_H
#define MGPU_VIRTUAL_DEVICE_H

#include <stddef.h>

struct mgpu_gpu_summary {
    int gpu_count;    /* the run's GPUs (entries; gpu_entries.h) */
    int device_count; /* the distinct devices they stand on */
    int sm_sum;       /* the devices' multiprocessors together */
    int sm_home;
    int sm_seen;    /* what device 0 reports to the program */
    size_t mem_sum; /* the devices' memory together, bytes */
    char home_name[256];
};

/* Fills out once the driver is initialised; returns 0, or -1 before that. */
int mgpu_virtual_device_summary(struct mgpu_gpu_summary *out);

#endif

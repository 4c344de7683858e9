/* cuGetProcAddress, the way the CUDA runtime and NCCL find every driver entry
 * point: counts of what was handed out, for the report. */
#ifndef MGPU_PROCADDRESS_HOOKS_H
#define MGPU_PROCADDRESS_HOOKS_H

struct mgpu_lookup_stats {
    unsigned long lookups; /* successful lookups seen */
    unsigned long hooked;  /* answered with one of mgpu's hooks */
    unsigned long passed;  /* from a pass-through library, answered with the driver's */
};

void mgpu_lookup_stats_get(struct mgpu_lookup_stats *out);

#endif

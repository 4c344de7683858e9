/* Device memory the program allocated through the driver, for the report. */
#ifndef MGPU_MEMORY_STATS_H
#define MGPU_MEMORY_STATS_H

#include <stddef.h>
#include <stdint.h>

struct mgpu_memory_totals {
    unsigned long allocations;
    unsigned long frees;
    unsigned long long bytes_allocated; /* over the whole run */
    unsigned long long live_bytes;      /* still allocated */
    unsigned long long peak_bytes;      /* most live at once */
};

void mgpu_memory_note_alloc(uint64_t ptr, size_t bytes);
void mgpu_memory_note_free(uint64_t ptr);
void mgpu_memory_totals_get(struct mgpu_memory_totals *out);

#endif

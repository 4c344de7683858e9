/* Owns the fake GPU's counts of live objects of every kind, the sets of
 * live handles the other files check handles against, and the leak report:
 * FAKE_CUDA_LEAK_REPORT=FILE writes "kind count" lines at exit. */
#include "fake_gpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static atomic_long live[FAKE_KINDS];

static const char *const kind_names[FAKE_KINDS] = {
    [FAKE_PHYSICAL] = "physical",
    [FAKE_PHYSICAL_BYTES] = "physical_bytes",
    [FAKE_MAPPING] = "mappings",
    [FAKE_RESERVATION] = "reservations",
    [FAKE_DEVICE_ALLOCATION] = "device_allocations",
    [FAKE_HOST_ALLOCATION] = "host_allocations",
    [FAKE_STREAM] = "streams",
    [FAKE_EVENT] = "events",
    [FAKE_MODULE] = "modules",
    [FAKE_PRIMARY_RETAIN] = "primary_retains",
    [FAKE_CONTEXT] = "contexts",
};

void fake_live(enum fake_kind kind, long delta)
{
    atomic_fetch_add(&live[kind], delta);
}

bool fake_handles_add(struct fake_handles *set, void *handle)
{
    pthread_mutex_lock(&set->lock);
    bool ok = true;
    if (set->count == set->capacity) {
        size_t capacity = set->capacity ? 2 * set->capacity : 64;
        void **grown = realloc(set->items, capacity * sizeof *grown);
        if (grown == NULL)
            ok = false;
        else
            set->items = grown, set->capacity = capacity;
    }
    if (ok)
        set->items[set->count++] = handle;
    pthread_mutex_unlock(&set->lock);
    return ok;
}

bool fake_handles_remove(struct fake_handles *set, void *handle)
{
    pthread_mutex_lock(&set->lock);
    bool found = false;
    for (size_t i = 0; i < set->count && !found; i++)
        if (set->items[i] == handle) {
            set->items[i] = set->items[--set->count];
            found = true;
        }
    pthread_mutex_unlock(&set->lock);
    return found;
}

bool fake_handles_has(struct fake_handles *set, void *handle)
{
    if (handle == NULL)
        return false;
    pthread_mutex_lock(&set->lock);
    bool found = false;
    for (size_t i = 0; i < set->count && !found; i++)
        found = set->items[i] == handle;
    pthread_mutex_unlock(&set->lock);
    return found;
}

/* The process's threads, from /proc: a worker thread left running shows. */
static long live_threads(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long threads = -1;
    while (f != NULL && fgets(line, sizeof line, f) != NULL)
        if (strncmp(line, "Threads:", 8) == 0)
            threads = strtol(line + 8, NULL, 10);
    if (f != NULL)
        fclose(f);
    return threads;
}

/* An ELF destructor runs in _dl_fini, which exit() calls after every
 * atexit handler, mgpu's release of its memory pool among them. */
__attribute__((destructor)) static void write_leak_report(void)
{
    const char *path = getenv("FAKE_CUDA_LEAK_REPORT");
    FILE *f = path != NULL ? fopen(path, "w") : NULL;
    if (f == NULL)
        return;
    for (int k = 0; k < FAKE_KINDS; k++)
        fprintf(f, "%s %ld\n", kind_names[k], atomic_load(&live[k]));
    fprintf(f, "threads %ld\n", live_threads());
    fclose(f);
}

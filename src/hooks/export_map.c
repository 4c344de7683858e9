/* Owns the map from the driver's entry points to the shim's exports (an open
 * addressing table filled once while the shim resolves its slots). With it,
 * cuGetProcAddress answers with the same address dlsym on libcuda.so.1
 * gives, as the real driver does. */
#include "src/hooks/export_map.h"

#include <pthread.h>
#include <stdint.h>

#define MAP_SIZE 4096 /* a power of two, well above the driver's ~640 exports */

static struct {
    const void *real;
    void *exported;
} map[MAP_SIZE];
static pthread_rwlock_t map_lock = PTHREAD_RWLOCK_INITIALIZER;

static size_t slot_of(const void *p)
{
    uint64_t x = (uint64_t)(uintptr_t)p;
    x ^= x >> 29;
    x *= 0xbf58476d1ce4e5b9ULL;
    return (size_t)(x ^ (x >> 32)) & (MAP_SIZE - 1);
}

void mgpu_export_map_add(void *real, void *exported)
{
    if (real == NULL || exported == NULL)
        return;
    pthread_rwlock_wrlock(&map_lock);
    size_t i = slot_of(real);
    for (size_t probes = 0; probes < MAP_SIZE; probes++, i = (i + 1) & (MAP_SIZE - 1)) {
        if (map[i].real == NULL || map[i].real == real) {
            map[i].real = real;
            map[i].exported = exported;
            break;
        }
    }
    pthread_rwlock_unlock(&map_lock);
}

void *mgpu_export_map_find(const void *real)
{
    void *found = NULL;
    pthread_rwlock_rdlock(&map_lock);
    size_t i = slot_of(real);
    for (size_t probes = 0; probes < MAP_SIZE && map[i].real != NULL;
         probes++, i = (i + 1) & (MAP_SIZE - 1)) {
        if (map[i].real == real) {
            found = map[i].exported;
            break;
        }
    }
    pthread_rwlock_unlock(&map_lock);
    return found;
}

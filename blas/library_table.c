/* Owns the tables of libraries the interposer's calls reach
 * (interposer.h): one per half of libmgpu-blas.so, cuBLAS's and
 * cuBLASLt's. */
#include "blas/interposer.h"

static struct mgpu_interposed_library *entry(struct mgpu_library_table *t, int i)
{
    return (struct mgpu_interposed_library *)((char *)t->entries + (size_t)i * t->size);
}

const struct mgpu_blas_library *mgpu_library_table_find(struct mgpu_library_table *t,
                                                        const struct mgpu_scope_definition *def,
                                                        const struct mgpu_blas_library *api)
{
    int n = atomic_load_explicit(&t->count, memory_order_acquire);
    for (int i = 0; i < n; i++)
        if (entry(t, i)->dl == def->library)
            return &entry(t, i)->api;
    pthread_mutex_lock(&t->lock);
    struct mgpu_interposed_library *found = NULL;
    n = atomic_load_explicit(&t->count, memory_order_relaxed);
    for (int i = 0; i < n && found == NULL; i++)
        if (entry(t, i)->dl == def->library)
            found = entry(t, i);
    if (found == NULL && n < t->max) {
        found = entry(t, n);
        found->dl = def->library;
        found->api = *api;
        found->api.path = def->library_path;
        atomic_store_explicit(&t->count, n + 1, memory_order_release);
    }
    pthread_mutex_unlock(&t->lock);
    return found != NULL ? &found->api : NULL;
}

/* Owns the list of hook tables and the lookups over them. */
#include "src/hooks/hook_table.h"

#include "base/real_driver.h"

#include <string.h>


static const struct mgpu_hook *const all_tables[] = {
    mgpu_procaddress_hooks, mgpu_virtual_device_hooks,
    mgpu_launch_hooks,      mgpu_memory_hooks,
    mgpu_context_hooks,     mgpu_module_hooks,
    mgpu_link_hooks,        mgpu_copy_hooks,
    mgpu_pointer_hooks,     mgpu_sync_hooks,
    mgpu_host_function_hooks,
    mgpu_write_hooks,       mgpu_ipc_hooks,
    mgpu_peer_hooks,
};
#define TABLE_COUNT (sizeof all_tables / sizeof all_tables[0])

void mgpu_hooks_bind(void)
{
    for (size_t t = 0; t < TABLE_COUNT; t++)
        for (const struct mgpu_hook *h = all_tables[t]; h->name; h++)
            *h->real = mgpu_driver_symbol(h->name);
}

const struct mgpu_hook *mgpu_hook_find(const char *name)
{
    for (size_t t = 0; t < TABLE_COUNT; t++)
        for (const struct mgpu_hook *h = all_tables[t]; h->name; h++)
            if (*h->real != NULL && strcmp(h->name, name) == 0)
                return h;
    return NULL;
}

const struct mgpu_hook *mgpu_hook_find_by_real(const void *real)
{
    if (real == NULL)
        return NULL;
    for (size_t t = 0; t < TABLE_COUNT; t++)
        for (const struct mgpu_hook *h = all_tables[t]; h->name; h++)
            if (*h->real == real)
                return h;
    return NULL;
}

void mgpu_hooks_for_each_called(void (*fn)(const char *name, unsigned long calls, void *ctx),
                                void *ctx)
{
    for (size_t t = 0; t < TABLE_COUNT; t++)
        for (const struct mgpu_hook *h = all_tables[t]; h->name; h++) {
            unsigned long n = atomic_load_explicit(h->calls, memory_order_relaxed);
            if (n)
                fn(h->name, n, ctx);
        }
}

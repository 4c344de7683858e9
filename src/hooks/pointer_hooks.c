/* Owns the hooks that inspect a device pointer: cuPointerGetAttribute,
 * cuPointerGetAttributes and cuMemGetAddressRange. For an address in the
 * memory pool they answer as the driver does for a plain allocation: the
 * first time, mgpu makes a plain allocation of each kind (cuMemAlloc,
 * cuMemAllocAsync), asks the driver every attribute of it, and keeps the
 * answers (result code and bytes written) as templates. The answers that
 * depend on the allocation (its start and size, context, ids, pool) come
 * from the pool's record; the rest from the template. An address in the
 * pool's range that is no allocation of the program's gets the driver's
 * answers for an address it never allocated. Other addresses pass through. */
#include "src/hooks/hook_table.h"
#include "memory/memory_pool.h"
#include "base/real_driver.h"

#include <cuda.h>
#include <cudaTypedefs.h>
#include <pthread.h>
#include <string.h>

MGPU_DECLARE_HOOK(cuPointerGetAttribute, PFN_cuPointerGetAttribute_v4000);
MGPU_DECLARE_HOOK(cuPointerGetAttributes, PFN_cuPointerGetAttributes_v7000);
MGPU_DECLARE_HOOK(cuMemGetAddressRange_v2, PFN_cuMemGetAddressRange_v3020);

#define ATTRIBUTE_LAST CU_POINTER_ATTRIBUTE_IS_HW_DECOMPRESS_CAPABLE
#define VALUE_MAX 32
/* An address no driver allocation ever has, for the "unknown pointer" answers. */
#define NEVER_ALLOCATED ((CUdeviceptr)256)

struct answer {
    CUresult result;
    size_t size; /* bytes the driver writes */
    unsigned char value[VALUE_MAX];
};

struct pointer_template {
    bool ready;
    struct answer single[ATTRIBUTE_LAST + 1]; /* cuPointerGetAttribute */
    struct answer batch[ATTRIBUTE_LAST + 1];  /* cuPointerGetAttributes of that one */
    CUresult range_result;                    /* cuMemGetAddressRange */
};

enum template_kind { PLAIN, STREAM_ORDERED, UNKNOWN_POINTER, TEMPLATE_KINDS };

static pthread_mutex_t templates_lock = PTHREAD_MUTEX_INITIALIZER;
static struct pointer_template templates[TEMPLATE_KINDS];

static CUresult query(void *value, CUpointer_attribute attribute, CUdeviceptr ptr, bool batch)
{
    return batch ? real_cuPointerGetAttributes(1, &attribute, &value, ptr)
                 : real_cuPointerGetAttribute(value, attribute, ptr);
}

/* The driver's answer to one attribute, asked alone or as a batch of one
 * (it refuses some attributes in a batch that it answers alone, and the
 * other way round), with how many bytes it writes: found by filling with
 * two patterns and seeing what changed. */
static struct answer ask(CUpointer_attribute attribute, CUdeviceptr ptr, bool batch)
{
    struct answer a;
    unsigned char first[VALUE_MAX], second[VALUE_MAX];
    memset(first, 0xab, sizeof first);
    memset(second, 0x54, sizeof second);
    a.result = query(first, attribute, ptr, batch);
    query(second, attribute, ptr, batch);
    a.size = 0;
    for (size_t i = 0; i < VALUE_MAX; i++)
        if (first[i] != 0xab || second[i] != 0x54)
            a.size = i + 1;
    memcpy(a.value, first, sizeof a.value);
    return a;
}

static void ask_all(struct pointer_template *t, CUdeviceptr ptr)
{
    for (int i = 1; i <= ATTRIBUTE_LAST; i++) {
        t->single[i] = ask((CUpointer_attribute)i, ptr, false);
        t->batch[i] = ask((CUpointer_attribute)i, ptr, true);
    }
    CUdeviceptr base;
    size_t size;
    t->range_result = real_cuMemGetAddressRange_v2(&base, &size, ptr);
}

static bool ask_about_new_allocation(struct pointer_template *t, enum template_kind kind)
{
    const size_t bytes = (size_t)3 << 20;
    CUdeviceptr ptr = 0;
    if (kind == PLAIN) {
        if (mgpu_drv.cuMemAlloc(&ptr, bytes) != CUDA_SUCCESS)
            return false;
        ask_all(t, ptr);
        mgpu_drv.cuMemFree(ptr);
        return true;
    }
    if (mgpu_drv.cuMemAllocAsync == NULL || mgpu_drv.cuMemFreeAsync == NULL ||
        mgpu_drv.cuMemAllocAsync(&ptr, bytes, CU_STREAM_LEGACY) != CUDA_SUCCESS)
        return false;
    mgpu_drv.cuStreamSynchronize(CU_STREAM_LEGACY);
    ask_all(t, ptr);
    mgpu_drv.cuMemFreeAsync(ptr, CU_STREAM_LEGACY);
    mgpu_drv.cuStreamSynchronize(CU_STREAM_LEGACY);
    return true;
}

/* Asked in the home GPU's primary context, where the pool's allocations
 * live, whichever context the program has current. */
static bool make_template(enum template_kind kind)
{
    CUcontext home = mgpu_pool_home_context();
    if (home == NULL || mgpu_drv.cuCtxPushCurrent(home) != CUDA_SUCCESS)
        return false;
    bool made = true;
    if (kind == UNKNOWN_POINTER)
        ask_all(&templates[kind], NEVER_ALLOCATED);
    else
        made = ask_about_new_allocation(&templates[kind], kind);
    CUcontext popped;
    mgpu_drv.cuCtxPopCurrent(&popped);
    return made;
}

static const struct pointer_template *template_of(enum template_kind kind)
{
    pthread_mutex_lock(&templates_lock);
    if (!templates[kind].ready)
        templates[kind].ready = make_template(kind);
    const struct pointer_template *t = templates[kind].ready ? &templates[kind] : NULL;
    pthread_mutex_unlock(&templates_lock);
    return t;
}

/* The value of an attribute that depends on the allocation; false for the
 * others, which the template answers. A stream-ordered allocation belongs
 * to no context and lies in a mapping of its pool's: those come from the
 * template too. */
static bool own_value(CUpointer_attribute attribute, CUdeviceptr address,
                      const struct mgpu_pool_block *b, unsigned char out[VALUE_MAX])
{
    unsigned long long u;
    size_t mapping;
    switch (attribute) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
        if (b->mempool != NULL)
            return false;
        memcpy(out, &b->context, sizeof b->context);
        return true;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
        memcpy(out, &address, sizeof address);
        return true;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
    case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR:
        memcpy(out, &b->start, sizeof b->start);
        return true;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
        memcpy(out, &b->bytes, sizeof b->bytes);
        return true;
    case CU_POINTER_ATTRIBUTE_MAPPING_SIZE:
        /* cuMemAlloc maps whole 2 MiB pages. */
        if (b->mempool != NULL)
            return false;
        mapping = (b->bytes + ((size_t)2 << 20) - 1) / ((size_t)2 << 20) * ((size_t)2 << 20);
        memcpy(out, &mapping, sizeof mapping);
        return true;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
    case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID:
        u = b->id;
        memcpy(out, &u, sizeof u);
        return true;
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
        memcpy(out, &b->mempool, sizeof b->mempool);
        return true;
    default:
        return false;
    }
}

/* Which template answers for `address`, and its record when it is one of
 * the program's allocations. NULL when the pool does not hold it. */
static const struct pointer_template *lookup(CUdeviceptr address, struct mgpu_pool_block *b,
                                             bool *is_allocation)
{
    if (!mgpu_pool_holds(address))
        return NULL;
    *is_allocation = mgpu_pool_find(address, b);
    enum template_kind kind = !*is_allocation ? UNKNOWN_POINTER
                              : b->mempool    ? STREAM_ORDERED
                                              : PLAIN;
    return template_of(kind);
}

static CUresult CUDAAPI hook_cuPointerGetAttribute(void *data, CUpointer_attribute attribute,
                                                   CUdeviceptr ptr)
{
    MGPU_HOOK_ENTRY(cuPointerGetAttribute);
    struct mgpu_pool_block b;
    bool is_allocation = false;
    const struct pointer_template *t = lookup(ptr, &b, &is_allocation);
    if (t == NULL || data == NULL || attribute < 1 || attribute > ATTRIBUTE_LAST)
        return real_cuPointerGetAttribute(data, attribute, ptr);
    const struct answer *a = &t->single[attribute];
    if (a->result != CUDA_SUCCESS)
        return a->result;
    unsigned char value[VALUE_MAX];
    memcpy(value, a->value, VALUE_MAX);
    if (is_allocation)
        own_value(attribute, ptr, &b, value);
    memcpy(data, value, a->size);
    return CUDA_SUCCESS;
}

static CUresult CUDAAPI hook_cuPointerGetAttributes(unsigned count, CUpointer_attribute *attributes,
                                                    void **data, CUdeviceptr ptr)
{
    MGPU_HOOK_ENTRY(cuPointerGetAttributes);
    struct mgpu_pool_block b;
    bool is_allocation = false;
    const struct pointer_template *t = lookup(ptr, &b, &is_allocation);
    if (t == NULL || attributes == NULL || data == NULL)
        return real_cuPointerGetAttributes(count, attributes, data, ptr);
    for (unsigned i = 0; i < count; i++) {
        CUpointer_attribute attribute = attributes[i];
        if (attribute < 1 || attribute > ATTRIBUTE_LAST)
            return real_cuPointerGetAttributes(count, attributes, data, ptr);
    }
    for (unsigned i = 0; i < count; i++)
        if (t->batch[attributes[i]].result != CUDA_SUCCESS)
            return t->batch[attributes[i]].result;
    for (unsigned i = 0; i < count; i++) {
        const struct answer *a = &t->batch[attributes[i]];
        unsigned char value[VALUE_MAX];
        memcpy(value, a->value, VALUE_MAX);
        if (is_allocation)
            own_value(attributes[i], ptr, &b, value);
        if (data[i] != NULL)
            memcpy(data[i], value, a->size);
    }
    return CUDA_SUCCESS;
}

static CUresult CUDAAPI hook_cuMemGetAddressRange_v2(CUdeviceptr *base, size_t *size,
                                                     CUdeviceptr ptr)
{
    MGPU_HOOK_ENTRY(cuMemGetAddressRange_v2);
    struct mgpu_pool_block b;
    bool is_allocation = false;
    const struct pointer_template *t = lookup(ptr, &b, &is_allocation);
    if (t == NULL)
        return real_cuMemGetAddressRange_v2(base, size, ptr);
    if (!is_allocation)
        return t->range_result;
    if (base != NULL)
        *base = b.start;
    if (size != NULL)
        *size = b.bytes;
    return CUDA_SUCCESS;
}

const struct mgpu_hook mgpu_pointer_hooks[] = {
    MGPU_HOOK(cuPointerGetAttribute),
    MGPU_HOOK(cuPointerGetAttributes),
    MGPU_HOOK(cuMemGetAddressRange_v2),
    MGPU_HOOK_END,
};

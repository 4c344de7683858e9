/* Owns the cuLink* hooks: each link's inputs are kept (copied) until the
 * program destroys the link; see link_hooks.h. A link with more than one
 * input, or with an input that carries no PTX, is recorded with the reason
 * mgpu does not rewrite it. */
#include "src/hooks/link_hooks.h"

#include "src/hooks/hook_table.h"
#include "modules/program_image.h"
#include "modules/program_modules.h"

#include <cuda.h>
#include <cudaTypedefs.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

MGPU_DECLARE_HOOK(cuLinkCreate_v2, PFN_cuLinkCreate_v6050);
MGPU_DECLARE_HOOK(cuLinkAddData_v2, PFN_cuLinkAddData_v6050);
MGPU_DECLARE_HOOK(cuLinkAddFile_v2, PFN_cuLinkAddFile_v6050);
MGPU_DECLARE_HOOK(cuLinkComplete, PFN_cuLinkComplete_v5050);
MGPU_DECLARE_HOOK(cuLinkDestroy, PFN_cuLinkDestroy_v5050);

struct link_record {
    struct link_record *next;
    CUlinkState state;
    int inputs;
    void *input; /* the first input, copied */
    size_t input_size;
    char refused[160];
    const void *output; /* from cuLinkComplete */
};

static pthread_mutex_t links_lock = PTHREAD_MUTEX_INITIALIZER;
static struct link_record *links;

static struct link_record *find_link(CUlinkState state)
{
    struct link_record *l = links;
    while (l != NULL && l->state != state)
        l = l->next;
    return l;
}

static const char *input_kind(CUjitInputType type)
{
    switch (type) {
    case CU_JIT_INPUT_CUBIN:
        return "a cubin";
    case CU_JIT_INPUT_OBJECT:
        return "a host object";
    case CU_JIT_INPUT_LIBRARY:
        return "a library";
    default:
        return "LTO IR";
    }
}

/* Records one input: `data` (or the file `path`) of `size` bytes. */
static void add_input(CUlinkState state, CUjitInputType type, const void *data, size_t size,
                      const char *path)
{
    pthread_mutex_lock(&links_lock);
    struct link_record *l = find_link(state);
    if (l != NULL && ++l->inputs > 1) {
        free(l->input);
        l->input = NULL;
        snprintf(l->refused, sizeof l->refused,
                 "the module is linked from %d inputs; mgpu rewrites links of one PTX input only",
                 l->inputs);
    } else if (l != NULL && type != CU_JIT_INPUT_PTX && type != CU_JIT_INPUT_FATBINARY) {
        snprintf(l->refused, sizeof l->refused, "the module is linked from %s, which has no PTX",
                 input_kind(type));
    } else if (l != NULL) {
        char err[120];
        int rc;
        if (path != NULL)
            rc = mgpu_program_image_read_file(path, &l->input, &l->input_size, err, sizeof err);
        else if (type == CU_JIT_INPUT_PTX && (l->input = malloc(size + 1)) != NULL) {
            memcpy(l->input, data, size);
            ((char *)l->input)[size] = '\0';
            l->input_size = size;
            rc = 0;
        } else if (type == CU_JIT_INPUT_PTX) {
            snprintf(err, sizeof err, "out of memory");
            rc = -1;
        } else {
            rc = mgpu_program_image_copy(data, &l->input, &l->input_size, err, sizeof err);
        }
        if (rc != 0)
            snprintf(l->refused, sizeof l->refused, "the link's input: %s", err);
    }
    pthread_mutex_unlock(&links_lock);
}

static CUresult CUDAAPI hook_cuLinkCreate_v2(unsigned noptions, CUjit_option *options,
                                             void **values, CUlinkState *state)
{
    MGPU_HOOK_ENTRY(cuLinkCreate_v2);
    CUresult r = real_cuLinkCreate_v2(noptions, options, values, state);
    if (r != CUDA_SUCCESS || !mgpu_program_modules_wanted())
        return r;
    struct link_record *l = calloc(1, sizeof *l);
    if (l != NULL) {
        l->state = *state;
        pthread_mutex_lock(&links_lock);
        l->next = links;
        links = l;
        pthread_mutex_unlock(&links_lock);
    }
    return r;
}

static CUresult CUDAAPI hook_cuLinkAddData_v2(CUlinkState state, CUjitInputType type, void *data,
                                              size_t size, const char *name, unsigned noptions,
                                              CUjit_option *options, void **values)
{
    MGPU_HOOK_ENTRY(cuLinkAddData_v2);
    CUresult r = real_cuLinkAddData_v2(state, type, data, size, name, noptions, options, values);
    if (r == CUDA_SUCCESS)
        add_input(state, type, data, size, NULL);
    return r;
}

static CUresult CUDAAPI hook_cuLinkAddFile_v2(CUlinkState state, CUjitInputType type,
                                              const char *path, unsigned noptions,
                                              CUjit_option *options, void **values)
{
    MGPU_HOOK_ENTRY(cuLinkAddFile_v2);
    CUresult r = real_cuLinkAddFile_v2(state, type, path, noptions, options, values);
    if (r == CUDA_SUCCESS)
        add_input(state, type, NULL, 0, path);
    return r;
}

static CUresult CUDAAPI hook_cuLinkComplete(CUlinkState state, void **cubin, size_t *size)
{
    MGPU_HOOK_ENTRY(cuLinkComplete);
    CUresult r = real_cuLinkComplete(state, cubin, size);
    if (r == CUDA_SUCCESS) {
        pthread_mutex_lock(&links_lock);
        struct link_record *l = find_link(state);
        if (l != NULL)
            l->output = *cubin;
        pthread_mutex_unlock(&links_lock);
    }
    return r;
}

static CUresult CUDAAPI hook_cuLinkDestroy(CUlinkState state)
{
    MGPU_HOOK_ENTRY(cuLinkDestroy);
    pthread_mutex_lock(&links_lock);
    for (struct link_record **p = &links; *p != NULL; p = &(*p)->next)
        if ((*p)->state == state) {
            struct link_record *l = *p;
            *p = l->next;
            free(l->input);
            free(l);
            break;
        }
    pthread_mutex_unlock(&links_lock);
    return real_cuLinkDestroy(state);
}

bool mgpu_link_capture_lookup(const void *image, const void **input, const char **refused)
{
    bool found = false;
    pthread_mutex_lock(&links_lock);
    for (struct link_record *l = links; l != NULL && !found; l = l->next)
        if (l->output != NULL && l->output == image) {
            found = true;
            *input = l->refused[0] ? NULL : l->input;
            *refused = l->refused[0] ? l->refused : NULL;
            if (*input == NULL && *refused == NULL)
                *refused = "the link had no input";
        }
    pthread_mutex_unlock(&links_lock);
    return found;
}

const struct mgpu_hook mgpu_link_hooks[] = {
    MGPU_HOOK(cuLinkCreate_v2), MGPU_HOOK(cuLinkAddData_v2), MGPU_HOOK(cuLinkAddFile_v2),
    MGPU_HOOK(cuLinkComplete),  MGPU_HOOK(cuLinkDestroy),    MGPU_HOOK_END,
};

/* The libcuda.so.1 that programs load under mgpu-run. Owns the export slots:
 * at load it asks the runtime (libmgpu) for each exported name's target, so
 * that every driver call of the program jumps straight to mgpu's hook or to
 * the real driver. A call that arrives before that (from another library's
 * constructor) resolves its slot on the way, with all argument registers
 * kept; with MGPU_CALL_LOG=1 every call takes that way and is logged. */
#include "src/shim/driver_exports.h"

#include "src/runtime.h"

#include <cuda.h>
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static pthread_once_t resolve_once = PTHREAD_ONCE_INIT;
static void **call_log_targets; /* with MGPU_CALL_LOG=1: slots stay unresolved */

/* What a slot jumps to when the driver does not have the function: every
 * driver function returns a CUresult, so this fits them all. */
static CUresult CUDAAPI missing_in_driver(void)
{
    return CUDA_ERROR_NOT_SUPPORTED;
}

static void resolve_all(void)
{
    char self[PATH_MAX] = "";
    Dl_info info;
    if (dladdr((void *)mgpu_export_slots, &info) && info.dli_fname &&
        realpath(info.dli_fname, self) == NULL)
        self[0] = '\0';
    mgpu_runtime_start(self[0] ? self : NULL);
    if (mgpu_runtime_logs_calls())
        call_log_targets = calloc(mgpu_export_count, sizeof *call_log_targets);
    for (unsigned i = 0; i < mgpu_export_count; i++) {
        void *driver = NULL;
        void *target =
            mgpu_runtime_resolve_export(mgpu_export_names[i], mgpu_export_addresses[i], &driver);
        target = target ? target : (void *)missing_in_driver;
        mgpu_export_driver[i] = driver ? driver : (void *)missing_in_driver;
        if (call_log_targets)
            call_log_targets[i] = target;
        else
            mgpu_export_slots[i] = target;
    }
}

__attribute__((constructor)) static void shim_load(void)
{
    pthread_once(&resolve_once, resolve_all);
}

void *mgpu_shim_resolve_slot(unsigned index)
{
    pthread_once(&resolve_once, resolve_all);
    if (index >= mgpu_export_count)
        abort();
    if (call_log_targets) {
        fprintf(stderr, "mgpu: call %s\n", mgpu_export_names[index]);
        return call_log_targets[index];
    }
    return mgpu_export_slots[index];
}

/* The first call through an unresolved slot lands here with the slot's index
 * in %r11: keep the argument registers, resolve, and jump on. */
__asm__(".text\n"
        ".globl mgpu_export_first_call\n"
        ".hidden mgpu_export_first_call\n"
        ".type mgpu_export_first_call, @function\n"
        "mgpu_export_first_call:\n"
        "    pushq %rbp\n"
        "    movq %rsp, %rbp\n"
        "    subq $192, %rsp\n"
        "    andq $-16, %rsp\n"
        "    movq %rdi, 0(%rsp)\n"
        "    movq %rsi, 8(%rsp)\n"
        "    movq %rdx, 16(%rsp)\n"
        "    movq %rcx, 24(%rsp)\n"
        "    movq %r8, 32(%rsp)\n"
        "    movq %r9, 40(%rsp)\n"
        "    movq %rax, 48(%rsp)\n"
        "    movq %r10, 56(%rsp)\n"
        "    movdqa %xmm0, 64(%rsp)\n"
        "    movdqa %xmm1, 80(%rsp)\n"
        "    movdqa %xmm2, 96(%rsp)\n"
        "    movdqa %xmm3, 112(%rsp)\n"
        "    movdqa %xmm4, 128(%rsp)\n"
        "    movdqa %xmm5, 144(%rsp)\n"
        "    movdqa %xmm6, 160(%rsp)\n"
        "    movdqa %xmm7, 176(%rsp)\n"
        "    movl %r11d, %edi\n"
        "    call mgpu_shim_resolve_slot\n"
        "    movq %rax, %r11\n"
        "    movq 0(%rsp), %rdi\n"
        "    movq 8(%rsp), %rsi\n"
        "    movq 16(%rsp), %rdx\n"
        "    movq 24(%rsp), %rcx\n"
        "    movq 32(%rsp), %r8\n"
        "    movq 40(%rsp), %r9\n"
        "    movq 48(%rsp), %rax\n"
        "    movq 56(%rsp), %r10\n"
        "    movdqa 64(%rsp), %xmm0\n"
        "    movdqa 80(%rsp), %xmm1\n"
        "    movdqa 96(%rsp), %xmm2\n"
        "    movdqa 112(%rsp), %xmm3\n"
        "    movdqa 128(%rsp), %xmm4\n"
        "    movdqa 144(%rsp), %xmm5\n"
        "    movdqa 160(%rsp), %xmm6\n"
        "    movdqa 176(%rsp), %xmm7\n"
        "    movq %rbp, %rsp\n"
        "    popq %rbp\n"
        "    jmp *%r11\n"
        ".size mgpu_export_first_call, .-mgpu_export_first_call\n");

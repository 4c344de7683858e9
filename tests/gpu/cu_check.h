/* The GPU test programs' check of a driver call: CU(call) runs it and, when
 * it fails, prints "PROGRAM: MODE FAIL: call returned ERROR" (its file and
 * line with no program named) and exits 1. A program names itself and its
 * mode in cu_check_program and cu_check_mode. C and C++; with nvcc, also
 * cu_kernel, a kernel's driver handle. */
#ifndef MGPU_TEST_CU_CHECK_H
#define MGPU_TEST_CU_CHECK_H

#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>

static const char *cu_check_program = NULL;
static const char *cu_check_mode = "";

static inline void cu_check(CUresult r, const char *call, const char *file, int line)
{
    if (r == CUDA_SUCCESS)
        return;
    const char *name = "?";
    cuGetErrorName(r, &name);
    if (cu_check_program != NULL)
        printf("%s: %s%sFAIL: %s returned %s\n", cu_check_program, cu_check_mode,
               cu_check_mode[0] ? " " : "", call, name);
    else
        printf("FAIL: %s:%d: %s: %s\n", file, line, call, name);
    exit(1);
}

#define CU(call) cu_check((call), #call, __FILE__, __LINE__)

#ifdef __CUDACC__
#include <cuda_runtime.h>

/* The driver's handle of one of the program's own kernels (`symbol`, as
 * the CUDA runtime names it); failing, the same one-line FAIL as CU(). */
static inline CUfunction cu_kernel(const void *symbol)
{
    cudaFunction_t f;
    cu_check(cudaGetFuncBySymbol(&f, symbol) == cudaSuccess ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND,
             "cudaGetFuncBySymbol", __FILE__, __LINE__);
    return (CUfunction)f;
}
#endif

#endif

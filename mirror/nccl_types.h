/* The few NCCL types and values mgpu passes to the NCCL it loads at run
 * time (libnccl.so.2, with dlopen): declared here from NCCL's documented
 * interface (nccl.h of NCCL 2), so that building mgpu needs no NCCL. The
 * values are NCCL's ABI, unchanged across NCCL 2's versions. */
#ifndef MGPU_NCCL_TYPES_H
#define MGPU_NCCL_TYPES_H

#include <cuda_runtime_api.h>

typedef struct ncclComm *ncclComm_t;

typedef enum { ncclSuccess = 0 } ncclResult_t;

typedef enum { ncclSum = 0, ncclProd = 1, ncclMax = 2, ncclMin = 3 } ncclRedOp_t;

typedef enum {
    ncclInt8 = 0,
    ncclUint8 = 1,
    ncclInt32 = 2,
    ncclUint32 = 3,
    ncclInt64 = 4,
    ncclUint64 = 5,
    ncclFloat16 = 6,
    ncclFloat32 = 7,
    ncclFloat64 = 8
} ncclDataType_t;

#endif

/* The driver's events, stubbed for the unit tests of the cost-model
 * policies: an event is a counter value, every record and query succeeds,
 * and every timing measures stub_elapsed_ms. The test defines mgpu_drv. */
#ifndef MGPU_TEST_EVENT_STUBS_H
#define MGPU_TEST_EVENT_STUBS_H

#include "base/real_driver.h"

#include <stdint.h>

static float stub_elapsed_ms;
static uintptr_t stub_events;

static CUresult CUDAAPI stub_event_create(CUevent *e, unsigned flags)
{
    (void)flags;
    *e = (CUevent)++stub_events;
    return CUDA_SUCCESS;
}

static CUresult CUDAAPI stub_event_record(CUevent e, CUstream s)
{
    (void)e;
    (void)s;
    return CUDA_SUCCESS;
}

static CUresult CUDAAPI stub_event_query(CUevent e)
{
    (void)e;
    return CUDA_SUCCESS;
}

static CUresult CUDAAPI stub_event_elapsed(float *ms, CUevent start, CUevent stop)
{
    (void)start;
    (void)stop;
    *ms = stub_elapsed_ms;
    return CUDA_SUCCESS;
}

static void stub_events_install(void)
{
    mgpu_drv.cuEventCreate = stub_event_create;
    mgpu_drv.cuEventRecord = stub_event_record;
    mgpu_drv.cuEventQuery = stub_event_query;
    mgpu_drv.cuEventElapsedTime = stub_event_elapsed;
}

#endif

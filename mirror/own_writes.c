/* Owns the per-thread mark of mgpu's own library calls (own_writes.h). */
#include "mirror/own_writes.h"

static _Thread_local int own_calls;

void mgpu_own_writes_begin(void)
{
    own_calls++;
}

void mgpu_own_writes_end(void)
{
    own_calls--;
}

bool mgpu_own_writes_active(void)
{
    return own_calls > 0;
}

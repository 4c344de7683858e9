/* Owns the mark of the driver's callback thread (callback_thread.h). */
#include "base/callback_thread.h"

static _Thread_local int callbacks_running; /* nested: a callback may run another's code */

bool mgpu_on_callback_thread(void)
{
    return callbacks_running > 0;
}

void mgpu_callback_enter(void)
{
    callbacks_running++;
}

void mgpu_callback_leave(void)
{
    callbacks_running--;
}

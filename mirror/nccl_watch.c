/* Owns reading the audit module's mark of the program's NCCL (see
 * nccl_watch.h). */
#include "mirror/nccl_watch.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static const volatile char *mark;
static pthread_once_t found = PTHREAD_ONCE_INIT;

/* The mark counts only where the audit module was loaded: a process that
 * inherited MGPU_NCCL_SEEN without LD_AUDIT has nothing writing it. */
static void find_mark(void)
{
    const char *seen = getenv("MGPU_NCCL_SEEN");
    const char *audit = getenv("LD_AUDIT");
    if (seen != NULL && (seen[0] == 'w' || seen[0] == '1') && audit != NULL &&
        strstr(audit, "mgpu_audit") != NULL)
        mark = seen;
}

bool mgpu_nccl_watched(void)
{
    pthread_once(&found, find_mark);
    return mark != NULL;
}

bool mgpu_nccl_bound_by_program(void)
{
    pthread_once(&found, find_mark);
    return mark != NULL && mark[0] == '1';
}

/* Owns the fake GPU's count of driver calls and the injected failure:
 * FAKE_CUDA_FAIL_CALL=K makes the K-th call after the first cuInit fail
 * (counted over every entry point and thread of the process), and
 * FAKE_CUDA_FAIL_LOG names a file that gets "K cuName" for it;
 * FAKE_CUDA_CALL_COUNT names a file that gets the number of calls at exit,
 * so that a sweep knows how many there are to fail, and FAKE_CUDA_CALL_LOG
 * one that gets "K cuName" for every call, so that a sweep can fail those
 * of one stretch of the run. */
#include "fake_gpu.h"

#include <stdio.h>
#include <stdlib.h>

static atomic_bool counting;
static atomic_ulong calls;
static unsigned long fail_at; /* 0: none */
static FILE *call_log;
static pthread_mutex_t call_log_lock = PTHREAD_MUTEX_INITIALIZER;

void fake_calls_start(void)
{
    if (atomic_load(&counting))
        return;
    const char *k = getenv("FAKE_CUDA_FAIL_CALL");
    fail_at = k != NULL ? strtoul(k, NULL, 10) : 0;
    const char *log = getenv("FAKE_CUDA_CALL_LOG");
    if (log != NULL)
        call_log = fopen(log, "w");
    atomic_store(&counting, true);
}

unsigned long fake_calls_total(void)
{
    return atomic_load(&calls);
}

bool fake_call_fails(const char *name)
{
    if (!atomic_load_explicit(&counting, memory_order_relaxed))
        return false;
    unsigned long n = atomic_fetch_add(&calls, 1) + 1;
    if (call_log != NULL) {
        pthread_mutex_lock(&call_log_lock);
        fprintf(call_log, "%lu %s\n", n, name);
        fflush(call_log);
        pthread_mutex_unlock(&call_log_lock);
    }
    if (n != fail_at)
        return false;
    const char *log = getenv("FAKE_CUDA_FAIL_LOG");
    FILE *f = log != NULL ? fopen(log, "a") : NULL;
    if (f != NULL) {
        fprintf(f, "%lu %s\n", n, name);
        fclose(f);
    }
    return true;
}

/* After mgpu's own work at exit (its atexit handlers run before the ELF
 * destructors of the libraries), so the count is the whole run's. */
__attribute__((destructor)) static void write_call_count(void)
{
    const char *path = getenv("FAKE_CUDA_CALL_COUNT");
    FILE *f = path != NULL ? fopen(path, "w") : NULL;
    if (f == NULL)
        return;
    fprintf(f, "%lu\n", fake_calls_total());
    fclose(f);
}

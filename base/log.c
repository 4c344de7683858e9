/* Owns mgpu's diagnostic output: level filtering and the "mgpu: " prefix
 * ("mgpu[rank N]: " under MPI).
 * Each message is formatted into one buffer and written with one write(2) so
 * that lines from several threads or processes do not interleave. */
#include "base/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

static int current_level = MGPU_LOG_QUIET;
static char prefix[32] = "mgpu: ";

void mgpu_log_set_level(int level)
{
    current_level = level;
}
int mgpu_log_level(void)
{
    return current_level;
}

void mgpu_log_set_rank(int rank)
{
    if (rank >= 0)
        snprintf(prefix, sizeof prefix, "mgpu[rank %d]: ", rank);
}

static void emit(const char *kind, const char *fmt, va_list ap)
{
    char line[1024];
    int n = snprintf(line, sizeof line, "%s%s", prefix, kind);
    if (n < 0)
        return;
    int m = vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    if (m < 0)
        return;
    size_t len = (size_t)n + (size_t)m;
    if (len > sizeof line - 2)
        len = sizeof line - 2;
    line[len++] = '\n';
    ssize_t written = write(STDERR_FILENO, line, len);
    (void)written;
}

#define DEFINE_LOGGER(fn, kind, min_level)                                                         \
    void fn(const char *fmt, ...)                                                                  \
    {                                                                                              \
        if (current_level < (min_level))                                                           \
            return;                                                                                \
        va_list ap;                                                                                \
        va_start(ap, fmt);                                                                         \
        emit(kind, fmt, ap);                                                                       \
        va_end(ap);                                                                                \
    }

DEFINE_LOGGER(mgpu_error, "error: ", MGPU_LOG_QUIET)
DEFINE_LOGGER(mgpu_warn, "warning: ", MGPU_LOG_QUIET)
DEFINE_LOGGER(mgpu_info, "", MGPU_LOG_INFO)
DEFINE_LOGGER(mgpu_debug, "", MGPU_LOG_DEBUG)

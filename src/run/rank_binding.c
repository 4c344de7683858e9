/* Owns binding an MPI rank's process near its GPUs (see rank_binding.h). */
#include "src/run/rank_binding.h"

#include <ctype.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Adds the CPUs of a list ("0-3,8,10-11") to set; false when malformed. */
static bool add_cpu_list(const char *list, cpu_set_t *set)
{
    const char *p = list;
    while (*p) {
        char *end;
        if (!isdigit((unsigned char)*p))
            return false;
        long first = strtol(p, &end, 10), last = first;
        p = end;
        if (*p == '-') {
            if (!isdigit((unsigned char)p[1]))
                return false;
            last = strtol(p + 1, &end, 10);
            p = end;
        }
        if (first < 0 || last < first || last >= CPU_SETSIZE)
            return false;
        for (long c = first; c <= last; c++)
            CPU_SET((int)c, set);
        if (*p == ',')
            p++;
        else if (*p != '\0')
            return false;
    }
    return true;
}

static void format_cpus(const cpu_set_t *set, char *out, size_t outlen)
{
    size_t used = 0;
    out[0] = '\0';
    for (int c = 0; c < CPU_SETSIZE && used < outlen; c++)
        if (CPU_ISSET(c, set))
            used += (size_t)snprintf(out + used, outlen - used, "%s%d", used ? "," : "", c);
}

int mgpu_bind_rank_near_gpus(const struct mgpu_topology *t, const int *gpus, int n, char *out,
                             size_t outlen)
{
    cpu_set_t near, allowed;
    CPU_ZERO(&near);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < t->gpu_count; j++)
            if (t->gpus[j].cuda_index == gpus[i] && t->gpus[j].cpus[0] &&
                !add_cpu_list(t->gpus[j].cpus, &near)) {
                snprintf(out, outlen, "GPU %d's CPU list '%s' is not understood", gpus[i],
                         t->gpus[j].cpus);
                return 0;
            }
    if (CPU_COUNT(&near) == 0) {
        snprintf(out, outlen, "no CPU is known to be near its GPUs");
        return 0;
    }
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) {
        snprintf(out, outlen, "its CPUs cannot be read (%s)", strerror(errno));
        return -1;
    }
    CPU_AND(&near, &near, &allowed);
    if (CPU_COUNT(&near) == 0) {
        snprintf(out, outlen, "none of the CPUs near its GPUs is allowed to it");
        return 0;
    }
    format_cpus(&near, out, outlen);
    if (sched_setaffinity(0, sizeof near, &near) != 0) {
        snprintf(out, outlen, "binding to CPUs near its GPUs failed (%s)", strerror(errno));
        return -1;
    }
    return 1;
}

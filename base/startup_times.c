/* Owns the start-up times by phase (startup_times.h). */
#include "base/startup_times.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

static atomic_llong phase_ns[MGPU_STARTUP_PHASES];

static const char *const phase_names[MGPU_STARTUP_PHASES] = {
    "driver initialisation", "library", "pool", "contexts", "peer access", "rewritten modules",
    "link measurement",      "NCCL",
};

void mgpu_startup_add(enum mgpu_startup_phase phase, long long ns)
{
    if (phase >= 0 && phase < MGPU_STARTUP_PHASES && ns > 0)
        atomic_fetch_add(&phase_ns[phase], ns);
}

size_t mgpu_startup_describe(char *line, size_t len)
{
    const char *launcher_text = getenv("MGPU_LAUNCHER_NS");
    long long launcher = launcher_text != NULL ? atoll(launcher_text) : 0;
    long long total = launcher > 0 ? launcher : 0;
    /* The driver's own initialisation is the program's, with or without
     * mgpu: said apart from mgpu's total. */
    for (int p = MGPU_STARTUP_DRIVER + 1; p < MGPU_STARTUP_PHASES; p++)
        total += atomic_load(&phase_ns[p]);
    long long driver = atomic_load(&phase_ns[MGPU_STARTUP_DRIVER]);
    if (len == 0)
        return 0;
    line[0] = '\0';
    if (total <= 0 && driver <= 0)
        return 0;
    size_t used = (size_t)snprintf(line, len, "start-up: %.1f ms in mgpu (", (double)total * 1e-6);
    const char *sep = "";
    if (launcher > 0 && used < len) {
        used += (size_t)snprintf(line + used, len - used, "launcher %.1f", (double)launcher * 1e-6);
        sep = ", ";
    }
    for (int p = MGPU_STARTUP_DRIVER + 1; p < MGPU_STARTUP_PHASES && used < len; p++) {
        long long ns = atomic_load(&phase_ns[p]);
        if (ns <= 0)
            continue;
        used += (size_t)snprintf(line + used, len - used, "%s%s %.1f", sep, phase_names[p],
                                 (double)ns * 1e-6);
        sep = ", ";
    }
    if (used < len)
        used += (size_t)snprintf(line + used, len - used, ")");
    if (driver > 0 && used < len)
        used +=
            (size_t)snprintf(line + used, len - used, "; the driver's own initialisation %.1f ms",
                             (double)driver * 1e-6);
    return used < len ? used : len - 1;
}

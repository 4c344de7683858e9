/* Owns the cost model's arithmetic over links (see link_model.h). */
#include "partition/link_model.h"

#include <stdio.h>

int mgpu_link_model_build(struct mgpu_link_model *m, const int *entry_device, int nentries,
                          const int *devices, int ndevices,
                          const double device_gbps[][MGPU_MAX_GPUS])
{
    if (nentries < 1 || nentries > MGPU_MAX_GPUS || ndevices < 1 || ndevices > MGPU_MAX_GPUS)
        return -1;
    int index[MGPU_MAX_GPUS];
    for (int i = 0; i < nentries; i++) {
        index[i] = -1;
        for (int d = 0; d < ndevices; d++)
            if (devices[d] == entry_device[i])
                index[i] = d;
        if (index[i] < 0)
            return -1;
    }
    m->nentries = nentries;
    for (int i = 0; i < nentries; i++)
        for (int j = 0; j < nentries; j++) {
            double local = device_gbps[index[j]][index[j]];
            double gbps = device_gbps[index[i]][index[j]];
            m->modelled[i][j] = i != j && index[i] == index[j];
            if (m->modelled[i][j])
                gbps = local / MGPU_LINK_SAME_DEVICE_SHARE;
            if (!(gbps > 0))
                return -1;
            m->gbps[i][j] = gbps;
        }
    return 0;
}

static bool valid(const struct mgpu_link_model *m, const struct mgpu_link_move *v)
{
    return v->from >= 0 && v->from < m->nentries && v->to >= 0 && v->to < m->nentries;
}

double mgpu_link_copy_seconds(const struct mgpu_link_model *m, const struct mgpu_link_move *moves,
                              size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++)
        if (valid(m, &moves[i]) && moves[i].from != moves[i].to)
            s += (double)moves[i].bytes / (m->gbps[moves[i].from][moves[i].to] * 1e9);
    return s;
}

/* Seconds per byte that entry `to` spends reading entry `from`'s memory
 * beyond reading its own. */
static double extra_per_byte(const struct mgpu_link_model *m, int from, int to)
{
    if (from == to)
        return 0.0;
    double remote = 1.0 / (m->gbps[from][to] * 1e9), local = 1.0 / (m->gbps[to][to] * 1e9);
    return remote > local ? remote - local : 0.0;
}

double mgpu_link_launch_read_seconds(const struct mgpu_link_model *m, size_t bytes, int holder,
                                     int runner, const double *spread_share)
{
    int n = m->nentries;
    double b = (double)bytes;
    if (holder >= n || runner >= n || (holder < 0 && runner < 0))
        return 0.0; /* split along the spread it reads: each slice at home */
    if (runner >= 0 && holder >= 0)
        return b * extra_per_byte(m, holder, runner);
    if (runner >= 0) {
        double s = 0.0;
        for (int h = 0; h < n; h++)
            s += spread_share[h] * b * extra_per_byte(m, h, runner);
        return s;
    }
    double slowest = 0.0, sent = 0.0, fastest = 0.0;
    for (int e = 0; e < n; e++) {
        if (e == holder)
            continue;
        double slice = spread_share[e] * b * extra_per_byte(m, holder, e);
        slowest = slice > slowest ? slice : slowest;
        sent += spread_share[e] * b;
        fastest = m->gbps[holder][e] > fastest ? m->gbps[holder][e] : fastest;
    }
    double ports = fastest > 0.0 ? sent / (fastest * 1e9) : 0.0;
    return ports > slowest ? ports : slowest;
}

int mgpu_link_model_describe(const struct mgpu_link_model *m, char (*lines)[512], int max)
{
    int n = 0;
    for (int j = 0; j < m->nentries && n < max; j++) {
        size_t used = (size_t)snprintf(lines[n], 512, "to GPU %d:", j);
        for (int i = 0; i < m->nentries && used < 512; i++)
            used += (size_t)snprintf(lines[n] + used, 512 - used, "%s from %d %.0f GB/s%s",
                                     i ? "," : "", i, m->gbps[i][j], m->modelled[i][j] ? "*" : "");
        n++;
    }
    return n;
}

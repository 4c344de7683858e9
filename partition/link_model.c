/* Owns the cost model's arithmetic over links (see link_model.h). */
#include "link_model.h"

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

double mgpu_link_read_saving(const struct mgpu_link_model *m, const struct mgpu_link_move *moves,
                             size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++) {
        const struct mgpu_link_move *v = &moves[i];
        if (!valid(m, v) || v->from == v->to)
            continue;
        double remote = 1.0 / (m->gbps[v->from][v->to] * 1e9);
        double local = 1.0 / (m->gbps[v->to][v->to] * 1e9);
        if (remote > local)
            s += (double)v->bytes * (remote - local);
    }
    return s;
}

bool mgpu_link_move_pays(const struct mgpu_link_model *m, const struct mgpu_link_move *moves,
                         size_t n, int launches)
{
    return launches * mgpu_link_read_saving(m, moves, n) > mgpu_link_copy_seconds(m, moves, n);
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

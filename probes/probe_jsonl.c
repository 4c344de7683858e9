/* Owns MGPU_PROBE_OUT: the probes' results as JSON Lines, one object per
 * line, for scripts. "type" says what a line is: run, clock, kernel,
 * launch, array (its entries that differ from the initial value, as
 * [index, value] pairs), ring (counts), record (a ring record's 64-bit
 * words) and slice (a launch's first block start and last block end on a
 * GPU, decoded from launch-latency's or block-time's maps). */
#include "probes/probe_tables.h"

#include "base/json_string.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static void put_map(FILE *f, const struct mgpu_probe_results *r, const struct ptx_probe_map *map,
                    int g)
{
    uint64_t words;
    const uint64_t *data = mgpu_probe_results_map(r, map->name, g, &words);
    if (data == NULL)
        return;
    if (map->kind == PTX_PROBE_RING) {
        uint64_t kept = mgpu_probe_ring_records(map, data);
        uint64_t per = ptx_probe_record_words(map);
        fprintf(f, "{\"type\":\"ring\",\"map\":");
        mgpu_json_string(f, map->name);
        fprintf(f, ",\"gpu\":%d,\"pushed\":%llu,\"dropped\":%llu,\"record_words\":%llu}\n", g,
                (unsigned long long)data[0], (unsigned long long)data[1],
                (unsigned long long)per);
        for (uint64_t i = 0; i < kept; i++) {
            fprintf(f, "{\"type\":\"record\",\"map\":");
            mgpu_json_string(f, map->name);
            fprintf(f, ",\"gpu\":%d,\"index\":%llu,\"words\":[", g, (unsigned long long)i);
            const uint64_t *rec = data + PTX_PROBE_RING_HEADER_WORDS + i * per;
            for (uint64_t w = 0; w < per; w++)
                fprintf(f, "%s%llu", w ? "," : "", (unsigned long long)rec[w]);
            fprintf(f, "]}\n");
        }
        return;
    }
    fprintf(f, "{\"type\":\"array\",\"map\":");
    mgpu_json_string(f, map->name);
    fprintf(f, ",\"gpu\":%d,\"length\":%llu,\"initial\":%llu,\"entries\":[", g,
            (unsigned long long)words, (unsigned long long)map->initial);
    bool first = true;
    for (uint64_t e = 0; e < words; e++)
        if (data[e] != map->initial) {
            fprintf(f, "%s[%llu,%llu]", first ? "" : ",", (unsigned long long)e,
                    (unsigned long long)data[e]);
            first = false;
        }
    fprintf(f, "]}\n");
}

int mgpu_probe_jsonl_write(const struct mgpu_probe_results *r, const char *path)
{
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        fprintf(stderr, "mgpu: error: cannot write MGPU_PROBE_OUT=%s: %s\n", path,
                strerror(errno));
        return -1;
    }
    fprintf(f, "{\"type\":\"run\",\"gpus\":%d,\"launches\":%llu,\"files\":[", r->ngpus,
            (unsigned long long)r->launches);
    for (size_t i = 0; i < r->set->nfiles; i++) {
        if (i)
            fputc(',', f);
        mgpu_json_string(f, r->set->files[i].name);
    }
    fprintf(f, "]}\n");
    for (int g = 0; g < r->ngpus; g++)
        if (r->maps[g] != NULL)
            fprintf(f,
                    "{\"type\":\"clock\",\"gpu\":%d,\"device\":%d,\"error_ns\":%lld,"
                    "\"timer_step_ns\":%llu,\"cycles_per_ns\":%.4f}\n",
                    g, r->gpu_devices ? r->gpu_devices[g] : g, (long long)r->clock_error_ns[g],
                    (unsigned long long)r->timer_step_ns[g], r->cycles_per_ns[g]);
    for (unsigned k = 0; k < r->nkernels; k++) {
        fprintf(f, "{\"type\":\"kernel\",\"id\":%u,\"name\":", k);
        mgpu_json_string(f, r->kernels[k].name);
        fprintf(f, ",\"pretty\":");
        mgpu_json_string(f, r->kernels[k].pretty ? r->kernels[k].pretty : r->kernels[k].name);
        fprintf(f, ",\"probes\":[");
        bool first = true;
        for (size_t p = 0; p < r->set->nprobes && p < 64; p++)
            if (r->kernels[k].probes >> p & 1) {
                fprintf(f, "%s", first ? "" : ",");
                mgpu_json_string(f, r->set->probes[p].function);
                first = false;
            }
        fprintf(f, "],\"block_threads\":[%u,%u]}\n", r->kernels[k].block_threads_min,
                r->kernels[k].block_threads_max);
    }
    for (uint64_t s = 1; s <= r->launches_kept; s++)
        if (r->launch_kernel[s] >= 0)
            fprintf(f, "{\"type\":\"launch\",\"sequence\":%llu,\"kernel\":%d,\"host_ns\":%llu}\n",
                    (unsigned long long)s, r->launch_kernel[s],
                    (unsigned long long)r->launch_host_ns[s]);
    for (size_t i = 0; i < r->set->nmaps; i++)
        for (int g = 0; g < r->ngpus; g++)
            put_map(f, r, &r->set->maps[i], g);
    static const char *const tools[][3] = {{"launch-latency", "ll_first", "ll_last"},
                                           {"block-time", "bt_first", "bt_last"}};
    for (size_t t = 0; t < 2; t++) {
        size_t capacity = mgpu_probe_slice_capacity(r, tools[t][1]);
        struct mgpu_probe_slice *slices = malloc((capacity + 1) * sizeof *slices);
        for (int g = 0; g < r->ngpus && slices && capacity; g++) {
            size_t n = mgpu_probe_slices(r, tools[t][1], tools[t][2], g, slices);
            for (size_t i = 0; i < n; i++) {
                uint64_t s = slices[i].sequence;
                fprintf(f,
                        "{\"type\":\"slice\",\"tool\":\"%s\",\"gpu\":%d,\"sequence\":%llu,"
                        "\"kernel\":%d,\"first_ns\":%llu,\"last_ns\":%llu}\n",
                        tools[t][0], g, (unsigned long long)s,
                        mgpu_probe_launch_kernel(r, s),
                        (unsigned long long)slices[i].first_ns,
                        (unsigned long long)slices[i].last_ns);
            }
        }
        free(slices);
    }
    if (fclose(f) != 0) {
        fprintf(stderr, "mgpu: error: writing MGPU_PROBE_OUT=%s: %s\n", path, strerror(errno));
        return -1;
    }
    return 0;
}

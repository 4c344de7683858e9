/* Owns the text form of NVML's answers (nvml_answers.h), written and read
 * back by mgpu-run's machine cache:
 *
 *   mgpu-nvml-answers 1
 *   count 2
 *   mig -1                     (the first GPU in MIG mode, -1 none)
 *   gpus 1 1                   (the GPUs were read; NVML answered every pair)
 *   gpu 0000:18:00.0 150754820096 NVIDIA H200     (bus id, memory, name)
 *   gpu 0000:2a:00.0 150754820096 NVIDIA H200
 *   peer 01                    (one row per GPU, one digit per GPU)
 *   peer 10
 *   nvlink 01 / nvlink 10 / atomics 01 / atomics 10   (one line each)
 *   end
 *
 * "gpus 0" instead (only the count was asked) is followed by "end". The
 * reader checks every field and refuses anything else. */
#include "partition/nvml_answers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAGIC "mgpu-nvml-answers 1"

static int put(char *out, size_t outlen, size_t *used, const char *text)
{
    size_t n = strlen(text);
    if (*used + n + 1 > outlen)
        return -1;
    memcpy(out + *used, text, n + 1);
    *used += n;
    return 0;
}

static int put_matrix(char *out, size_t outlen, size_t *used, const char *word,
                      const bool (*m)[MGPU_TOPOLOGY_MAX_GPUS], int count)
{
    for (int i = 0; i < count; i++) {
        char row[16 + MGPU_TOPOLOGY_MAX_GPUS];
        int n = snprintf(row, sizeof row, "%s ", word);
        for (int j = 0; j < count; j++)
            row[n++] = m[i][j] ? '1' : '0';
        row[n++] = '\n';
        row[n] = '\0';
        if (put(out, outlen, used, row) != 0)
            return -1;
    }
    return 0;
}

int mgpu_nvml_answers_format(const struct mgpu_nvml_answers *a, char *out, size_t outlen)
{
    size_t used = 0;
    char line[160];
    snprintf(line, sizeof line, MAGIC "\ncount %d\nmig %d\n", a->count, a->mig_gpu);
    if (put(out, outlen, &used, line) != 0)
        return -1;
    if (!a->has_gpus)
        return put(out, outlen, &used, "gpus 0\nend\n");
    snprintf(line, sizeof line, "gpus 1 %d\n", a->pairs_known ? 1 : 0);
    if (put(out, outlen, &used, line) != 0)
        return -1;
    for (int i = 0; i < a->count; i++) {
        char name[sizeof a->gpus[i].name];
        snprintf(name, sizeof name, "%s", a->gpus[i].name);
        for (char *c = name; *c; c++)
            if ((unsigned char)*c < 0x20 || *c == 0x7f)
                *c = '?'; /* one line, as the reader takes it */
        snprintf(line, sizeof line, "gpu %s %llu %s\n", a->gpus[i].bus_id, a->gpus[i].memory_bytes,
                 name);
        if (put(out, outlen, &used, line) != 0)
            return -1;
    }
    if (put_matrix(out, outlen, &used, "peer", (const bool(*)[MGPU_TOPOLOGY_MAX_GPUS])a->peer,
                   a->count) != 0 ||
        put_matrix(out, outlen, &used, "nvlink", (const bool(*)[MGPU_TOPOLOGY_MAX_GPUS])a->nvlink,
                   a->count) != 0 ||
        put_matrix(out, outlen, &used, "atomics", (const bool(*)[MGPU_TOPOLOGY_MAX_GPUS])a->atomics,
                   a->count) != 0)
        return -1;
    return put(out, outlen, &used, "end\n");
}

/* A cursor over the text, one line at a time. */
struct reader {
    const char *p, *end;
    char line[256];
};

/* The next line into r->line, without its newline; false at the end or
 * where a line is too long or holds a NUL. */
static bool next_line(struct reader *r)
{
    if (r->p >= r->end)
        return false;
    const char *nl = memchr(r->p, '\n', (size_t)(r->end - r->p));
    if (nl == NULL)
        return false; /* every line ends in a newline */
    size_t n = (size_t)(nl - r->p);
    if (n >= sizeof r->line || memchr(r->p, '\0', n) != NULL)
        return false;
    memcpy(r->line, r->p, n);
    r->line[n] = '\0';
    r->p = nl + 1;
    return true;
}

/* "WORD N" with N a decimal integer in [lo, hi]. */
static bool word_int(const char *line, const char *word, long lo, long hi, long *value)
{
    size_t n = strlen(word);
    if (strncmp(line, word, n) != 0 || line[n] != ' ')
        return false;
    const char *digits = line + n + 1, *d = digits + (*digits == '-');
    size_t nd = strlen(d);
    if (nd == 0 || nd > 12 || strspn(d, "0123456789") != nd)
        return false;
    *value = strtol(digits, NULL, 10);
    return *value >= lo && *value <= hi;
}

static bool read_gpu(const char *line, struct mgpu_nvml_answer_gpu *g)
{
    if (strncmp(line, "gpu ", 4) != 0)
        return false;
    const char *bus = line + 4, *space = strchr(bus, ' ');
    if (space == NULL || (size_t)(space - bus) >= MGPU_BUS_ID_LEN)
        return false;
    char text[MGPU_BUS_ID_LEN];
    memcpy(text, bus, (size_t)(space - bus));
    text[space - bus] = '\0';
    if (mgpu_bus_id_normalise(text, g->bus_id) != 0 || strcmp(text, g->bus_id) != 0)
        return false;
    const char *memory = space + 1, *after = strchr(memory, ' ');
    size_t digits = after != NULL ? (size_t)(after - memory) : 0;
    if (digits == 0 || digits > 20 || strspn(memory, "0123456789") != digits)
        return false;
    g->memory_bytes = strtoull(memory, NULL, 10);
    const char *name = after + 1;
    if (strlen(name) >= sizeof g->name)
        return false;
    for (const char *c = name; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f)
            return false;
    strcpy(g->name, name);
    return true;
}

static bool read_row(const char *line, const char *word, int count, bool row[])
{
    size_t n = strlen(word);
    if (strncmp(line, word, n) != 0 || line[n] != ' ')
        return false;
    const char *bits = line + n + 1;
    if (strlen(bits) != (size_t)count || strspn(bits, "01") != (size_t)count)
        return false;
    for (int j = 0; j < count; j++)
        row[j] = bits[j] == '1';
    return true;
}

static bool read_matrix(struct reader *r, const char *word, int count,
                        bool (*m)[MGPU_TOPOLOGY_MAX_GPUS])
{
    for (int i = 0; i < count; i++)
        if (!next_line(r) || !read_row(r->line, word, count, m[i]) || m[i][i])
            return false;
    return true;
}

static int refuse(char *why, size_t whylen, const char *what)
{
    snprintf(why, whylen, "not mgpu's NVML answers: %s", what);
    return -1;
}

int mgpu_nvml_answers_parse(const char *text, size_t len, struct mgpu_nvml_answers *a, char *why,
                            size_t whylen)
{
    memset(a, 0, sizeof *a);
    a->mig_gpu = -1;
    struct reader r = {.p = text, .end = text + len};
    long count, mig;
    if (!next_line(&r) || strcmp(r.line, MAGIC) != 0)
        return refuse(why, whylen, "no '" MAGIC "' line first");
    if (!next_line(&r) || !word_int(r.line, "count", 1, MGPU_TOPOLOGY_MAX_GPUS, &count))
        return refuse(why, whylen, "no count of 1 to 64 GPUs");
    if (!next_line(&r) || !word_int(r.line, "mig", -1, count - 1, &mig))
        return refuse(why, whylen, "no MIG line naming -1 or a GPU");
    a->count = (int)count;
    a->mig_gpu = (int)mig;
    if (!next_line(&r))
        return refuse(why, whylen, "no gpus line");
    if (strcmp(r.line, "gpus 0") == 0) {
        if (!next_line(&r) || strcmp(r.line, "end") != 0 || r.p != r.end)
            return refuse(why, whylen, "no 'end' after 'gpus 0'");
        return 0;
    }
    if (strcmp(r.line, "gpus 1 0") != 0 && strcmp(r.line, "gpus 1 1") != 0)
        return refuse(why, whylen, "a gpus line that is none of 'gpus 0', 'gpus 1 0', 'gpus 1 1'");
    a->has_gpus = true;
    a->pairs_known = r.line[7] == '1';
    for (int i = 0; i < a->count; i++) {
        if (!next_line(&r) || !read_gpu(r.line, &a->gpus[i]))
            return refuse(why, whylen, "a gpu line out of place");
        if (i > 0 && strcmp(a->gpus[i - 1].bus_id, a->gpus[i].bus_id) >= 0)
            return refuse(why, whylen, "GPUs not in bus order");
    }
    if (!read_matrix(&r, "peer", a->count, a->peer) ||
        !read_matrix(&r, "nvlink", a->count, a->nvlink) ||
        !read_matrix(&r, "atomics", a->count, a->atomics))
        return refuse(why, whylen, "a peer, nvlink or atomics row out of place");
    if (!next_line(&r) || strcmp(r.line, "end") != 0 || r.p != r.end)
        return refuse(why, whylen, "no 'end' last");
    return 0;
}

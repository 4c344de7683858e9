/* NVML's answers in their text form (partition/nvml_answers_text.c): what
 * is written reads back the same, for a count alone, for GPUs joined by
 * NVLink and for a machine whose pairs differ; the reader refuses every
 * damaged form with one line, and reads nothing past the length it is
 * given. */
#include "partition/nvml_answers.h"
#include "tests/unit/check.h"

#include <stdlib.h>
#include <string.h>

static void a_machine(struct mgpu_nvml_answers *a, int count, bool all_nvlink)
{
    memset(a, 0, sizeof *a);
    a->count = count;
    a->mig_gpu = -1;
    a->has_gpus = true;
    a->pairs_known = true;
    for (int i = 0; i < count; i++) {
        snprintf(a->gpus[i].bus_id, sizeof a->gpus[i].bus_id, "0000:%02x:00.0", 0x18 + 3 * i);
        snprintf(a->gpus[i].name, sizeof a->gpus[i].name, "NVIDIA H200 %s", i % 2 ? "SXM" : "NVL");
        a->gpus[i].memory_bytes = 150754820096ull + (unsigned long long)i;
        for (int j = 0; j < count; j++) {
            a->peer[i][j] = i != j && (all_nvlink || (i ^ j) != 3);
            a->nvlink[i][j] = i != j && (all_nvlink || i / 2 == j / 2);
            a->atomics[i][j] = a->nvlink[i][j];
        }
    }
}

static bool same(const struct mgpu_nvml_answers *a, const struct mgpu_nvml_answers *b)
{
    if (a->count != b->count || a->mig_gpu != b->mig_gpu || a->has_gpus != b->has_gpus)
        return false;
    if (!a->has_gpus)
        return true;
    if (a->pairs_known != b->pairs_known)
        return false;
    for (int i = 0; i < a->count; i++) {
        if (strcmp(a->gpus[i].bus_id, b->gpus[i].bus_id) != 0 ||
            strcmp(a->gpus[i].name, b->gpus[i].name) != 0 ||
            a->gpus[i].memory_bytes != b->gpus[i].memory_bytes)
            return false;
        for (int j = 0; j < a->count; j++)
            if (a->peer[i][j] != b->peer[i][j] || a->nvlink[i][j] != b->nvlink[i][j] ||
                a->atomics[i][j] != b->atomics[i][j])
                return false;
    }
    return true;
}

/* Written, then read back from a buffer of exactly its length (no NUL). */
static bool round_trip(const struct mgpu_nvml_answers *a)
{
    char text[32768], why[200];
    if (mgpu_nvml_answers_format(a, text, sizeof text) != 0)
        return false;
    size_t len = strlen(text);
    char *exact = malloc(len);
    memcpy(exact, text, len);
    struct mgpu_nvml_answers back;
    int r = mgpu_nvml_answers_parse(exact, len, &back, why, sizeof why);
    free(exact);
    if (r != 0)
        fprintf(stderr, "refused: %s\n", why);
    return r == 0 && same(a, &back);
}

/* The text of a, with the first `from` replaced by `to`, must be refused
 * with a one-line reason. */
static bool refused(const struct mgpu_nvml_answers *a, const char *from, const char *to)
{
    char text[32768], damaged[32768], why[200] = "";
    mgpu_nvml_answers_format(a, text, sizeof text);
    char *at = strstr(text, from);
    if (at == NULL)
        return false;
    snprintf(damaged, sizeof damaged, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
    struct mgpu_nvml_answers back;
    return mgpu_nvml_answers_parse(damaged, strlen(damaged), &back, why, sizeof why) == -1 &&
           why[0] != '\0' && strchr(why, '\n') == NULL;
}

int main(void)
{
    struct mgpu_nvml_answers a;

    /* A count alone, as a --gpus list asks. */
    memset(&a, 0, sizeof a);
    a.count = 8;
    a.mig_gpu = -1;
    CHECK(round_trip(&a));
    a.mig_gpu = 5;
    CHECK(round_trip(&a));
    char text[32768];
    CHECK(mgpu_nvml_answers_format(&a, text, sizeof text) == 0);
    CHECK_STR(text, "mgpu-nvml-answers 1\ncount 8\nmig 5\ngpus 0\nend\n");

    /* Four GPUs, NVLink between every pair; two pairs of pairs; the most
     * GPUs; one GPU; a pair NVML did not answer for. */
    a_machine(&a, 4, true);
    CHECK(round_trip(&a));
    a_machine(&a, 4, false);
    CHECK(round_trip(&a));
    a_machine(&a, MGPU_TOPOLOGY_MAX_GPUS, false);
    snprintf(a.gpus[63].bus_id, sizeof a.gpus[63].bus_id, "ffff:ff:1f.7");
    CHECK(round_trip(&a));
    a_machine(&a, 1, true);
    a.gpus[0].name[0] = '\0';
    a.gpus[0].memory_bytes = 0;
    CHECK(round_trip(&a));
    a_machine(&a, 2, false);
    a.pairs_known = false;
    CHECK(round_trip(&a));

    /* A name with a newline is written on one line. */
    a_machine(&a, 2, true);
    strcpy(a.gpus[1].name, "two\nlines");
    CHECK(mgpu_nvml_answers_format(&a, text, sizeof text) == 0);
    CHECK_CONTAINS(text, "gpu 0000:1b:00.0 150754820097 two?lines\n");
    struct mgpu_nvml_answers back;
    char why[200];
    CHECK(mgpu_nvml_answers_parse(text, strlen(text), &back, why, sizeof why) == 0);

    /* Too small a buffer is said, not cut. */
    a_machine(&a, 4, true);
    CHECK(mgpu_nvml_answers_format(&a, text, 100) == -1);

    /* Every damage refused. */
    a_machine(&a, 4, false);
    CHECK(refused(&a, "mgpu-nvml-answers 1", "mgpu-nvml-answers 2"));
    CHECK(refused(&a, "count 4", "count 0"));
    CHECK(refused(&a, "count 4", "count 65"));
    CHECK(refused(&a, "count 4", "count four"));
    CHECK(refused(&a, "count 4", "count 3")); /* a gpu line too many */
    CHECK(refused(&a, "count 4", "count 5")); /* one too few */
    CHECK(refused(&a, "mig -1", "mig 4"));
    CHECK(refused(&a, "mig -1", "mig -2"));
    CHECK(refused(&a, "mig -1", "mig"));
    CHECK(refused(&a, "gpus 1 1", "gpus 2"));
    CHECK(refused(&a, "gpus 1 1", "gpus 1 2"));
    CHECK(refused(&a, "gpu 0000:18:00.0", "gpu 0000:18:00"));
    CHECK(refused(&a, "gpu 0000:18:00.0", "gpu 0000:18:00.0x"));
    CHECK(refused(&a, "gpu 0000:18:00.0", "gpu 0000:3B:00.0")); /* not normalised */
    CHECK(refused(&a, "gpu 0000:1b:00.0", "gpu 0000:17:00.0")); /* out of bus order */
    CHECK(refused(&a, "150754820096", "-150754820096"));
    CHECK(refused(&a, "150754820096", "150754820096150754820096"));
    CHECK(refused(&a, " NVIDIA H200 NVL\n", "\n")); /* no name field */
    CHECK(refused(&a, "H200 NVL", "H200\tNVL"));
    CHECK(refused(&a, "peer 0110", "peer 011"));
    CHECK(refused(&a, "peer 0110", "peer 01100"));
    CHECK(refused(&a, "peer 0110", "peer 1110")); /* a GPU its own peer */
    CHECK(refused(&a, "peer 0110", "peer 0120"));
    CHECK(refused(&a, "nvlink 0100", "nvlinks 0100"));
    CHECK(refused(&a, "atomics 0100\n", ""));
    CHECK(refused(&a, "end\n", "end"));        /* no last newline */
    CHECK(refused(&a, "end\n", "end\nend\n")); /* something after */
    CHECK(refused(&a, "end\n", ""));

    /* Nothing read past the length given: the same text cut anywhere is
     * refused (only the whole is valid). */
    CHECK(mgpu_nvml_answers_format(&a, text, sizeof text) == 0);
    size_t len = strlen(text);
    int accepted = 0;
    for (size_t cut = 0; cut < len; cut++) {
        char *exact = malloc(cut + 1);
        memcpy(exact, text, cut);
        if (mgpu_nvml_answers_parse(exact, cut, &back, why, sizeof why) == 0)
            accepted++;
        free(exact);
    }
    CHECK(accepted == 0);
    CHECK_DONE();
}

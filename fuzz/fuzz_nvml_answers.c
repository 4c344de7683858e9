/* libFuzzer harness for the reader of NVML's kept answers
 * (partition/nvml_answers_text.c), which mgpu-run reads from its cache
 * directory on every run: any bytes give answers or a one-line refusal,
 * nothing is read past the input, and accepted answers written again read
 * back the same. */
#include "fuzz/fuzz_input.h"
#include "partition/nvml_answers.h"

static char written[1 << 16];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* An exact copy: a read past the input is a heap overflow. */
    char *exact = malloc(size ? size : 1);
    if (exact == NULL)
        abort();
    memcpy(exact, data, size);
    static struct mgpu_nvml_answers first, again;
    char why[256] = "";
    int r = mgpu_nvml_answers_parse(exact, size, &first, why, sizeof why);
    free(exact);
    if (r != 0) {
        fuzz_require(why[0] != '\0' && strchr(why, '\n') == NULL, "a refusal is one line");
        return 0;
    }
    fuzz_require(first.count >= 1 && first.count <= MGPU_TOPOLOGY_MAX_GPUS,
                 "the count is in range");
    fuzz_require(mgpu_nvml_answers_format(&first, written, sizeof written) == 0,
                 "accepted answers can be written");
    fuzz_require(mgpu_nvml_answers_parse(written, strlen(written), &again, why, sizeof why) == 0,
                 "written answers read back");
    fuzz_require(memcmp(&first, &again, sizeof first) == 0, "written answers read back the same");
    return 0;
}

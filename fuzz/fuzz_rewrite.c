/* libFuzzer harness for the rewrite passes (ptx/ptx_rewrite.c and the
 * ptx_pass_*.c it runs, with the kernel analysis): any text is rewritten or
 * refused with a one-line reason, and rewritten text parses again. That
 * rewritten valid PTX still assembles is checked with ptxas on the seed
 * corpus (fuzz/check-rewrites-assemble.sh), not here: ptxas per input
 * would make each run take tens of milliseconds. */
#include "fuzz_input.h"
#include "ptx/ptx_rewrite.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size);
    struct mgpu_ptx_rewrite out;
    char err[256] = "";
    if (mgpu_ptx_rewrite(text, size, MGPU_PASS_ALL | MGPU_PASS_ANALYZE, &out, err, sizeof err) != 0) {
        fuzz_require(err[0] != '\0' && strchr(err, '\n') == NULL, "a refusal is one line");
        free(text);
        return 0;
    }
    fuzz_require(out.ptx != NULL && out.ptx[out.size] == '\0', "the rewritten text ends in a NUL");
    struct mgpu_ptx_rewrite again;
    if (mgpu_ptx_rewrite(out.ptx, out.size, 0, &again, err, sizeof err) == 0)
        mgpu_ptx_rewrite_free(&again);
    mgpu_ptx_rewrite_free(&out);
    free(text);
    return 0;
}

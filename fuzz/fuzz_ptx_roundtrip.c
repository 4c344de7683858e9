/* libFuzzer harness for the PTX parser and printer (ptx/ptx_parse.c,
 * ptx_print.c): any text parses (what the parser does not understand is
 * kept verbatim), and what it prints parses again to a module that prints
 * the same, so print(parse(x)) is a fixed point. (A NUL inside a statement
 * the parser keeps verbatim is printed as it was, so the length is the
 * printer's, not strlen's.) */
#include "fuzz_input.h"
#include "ptx/ptx_module.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size);
    struct ptx_module first, second;
    if (ptx_parse(text, size, &first) != 0) {
        free(text);
        return 0; /* out of memory, reported as such */
    }
    size_t first_len = 0, second_len = 0;
    char *printed = ptx_print(&first, &first_len);
    fuzz_require(printed != NULL, "a parsed module prints");
    fuzz_require(ptx_parse(printed, first_len, &second) == 0, "printed text parses again");
    char *again = ptx_print(&second, &second_len);
    fuzz_require(again != NULL, "the module parsed from printed text prints");
    fuzz_require(second_len == first_len && memcmp(again, printed, first_len) == 0,
                 "print(parse(print(parse(x)))) == print(parse(x))");
    free(again);
    ptx_module_free(&second);
    free(printed);
    ptx_module_free(&first);
    free(text);
    return 0;
}

/* What the PTX harnesses share: the input as the runtime hands PTX to the
 * parser (a copy with a NUL after it, as image.h's objects end), and an
 * abort that libFuzzer reports as a finding when a promise is broken. */
#ifndef MGPU_FUZZ_INPUT_H
#define MGPU_FUZZ_INPUT_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline char *fuzz_text(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (text == NULL)
        abort();
    if (size > 0)
        memcpy(text, data, size);
    text[size] = '\0';
    return text;
}

static inline void fuzz_require(int ok, const char *promise)
{
    if (!ok) {
        fprintf(stderr, "broken: %s\n", promise);
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif

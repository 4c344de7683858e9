/* A C string written as a JSON string: the trace and the probes' JSON Lines
 * both name kernels, whose demangled names may hold quotes. */
#ifndef MGPU_JSON_STRING_H
#define MGPU_JSON_STRING_H

#include <stdio.h>

static inline void mgpu_json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

#endif

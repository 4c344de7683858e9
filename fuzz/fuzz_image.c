/* libFuzzer harness for the image reader (ptx/image.c, fatbin.c,
 * elf_file.c): any bytes, read as a program, library, fatbin, cubin or PTX
 * file. The reader must answer with objects or a one-line error, never
 * read outside the input or its own buffers; a PTX object it returns must
 * parse. */
#include "ptx/image.h"
#include "ptx/ptx_module.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct mgpu_image image;
    char err[256];
    if (mgpu_image_read(data, size, &image, err, sizeof err) != 0) {
        if (err[0] == '\0' || memchr(err, '\n', strlen(err)) != NULL)
            abort(); /* an error is one line of text */
        return 0;
    }
    for (size_t i = 0; i < image.count; i++) {
        const struct mgpu_code_object *o = &image.objects[i];
        if (o->code == NULL || o->code[o->size] != '\0')
            abort(); /* decompressed code ends in a NUL, as image.h promises */
        if (o->kind == MGPU_CODE_PTX) {
            struct ptx_module module;
            if (ptx_parse(o->code, o->size, &module) == 0)
                ptx_module_free(&module);
        }
    }
    mgpu_image_free(&image);
    return 0;
}

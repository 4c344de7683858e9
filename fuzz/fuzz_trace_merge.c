/* libFuzzer harness for mgpu-info --merge-traces (src/info/trace_merge.c),
 * which reads whatever files the user names: any bytes as two ranks'
 * trace files (the input cut in two at its first NUL, each half a file)
 * give a merged file or a one-line error. */
#include "fuzz/fuzz_input.h"
#include "src/info/trace_merge.h"

#include <sys/mman.h>
#include <unistd.h>

/* A file holding n bytes of data, named by its /proc path. */
static int as_file(const uint8_t *data, size_t n, char *path, size_t pathlen)
{
    int fd = memfd_create("trace", 0);
    if (fd < 0)
        abort();
    if (n > 0 && write(fd, data, n) != (ssize_t)n)
        abort();
    snprintf(path, pathlen, "/proc/self/fd/%d", fd);
    return fd;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nul = memchr(data, '\0', size);
    size_t first = nul != NULL ? (size_t)(nul - data) : size;
    size_t second = nul != NULL ? size - first - 1 : 0;
    char a[64], b[64], out[64];
    int fa = as_file(data, first, a, sizeof a);
    int fb = as_file(nul != NULL ? nul + 1 : data, second, b, sizeof b);
    int fo = memfd_create("merged", 0);
    if (fo < 0)
        abort();
    snprintf(out, sizeof out, "/proc/self/fd/%d", fo);
    const char *inputs[2] = {a, b};
    char err[512] = "";
    if (mgpu_trace_merge(out, inputs, 2, err, sizeof err) != 0)
        fuzz_require(err[0] != '\0' && strchr(err, '\n') == NULL, "an error is one line");
    close(fa);
    close(fb);
    close(fo);
    return 0;
}

/* Device memory shared between two processes with the CUDA IPC calls, as
 * a CUDA-aware MPI or a program of its own does: the parent allocates a
 * large buffer (spread over the GPUs under mgpu) and a small one (a slot
 * of mgpu's sub-allocator), fills them, takes an IPC handle of each and
 * runs itself again as the child with the handles (hex) on its command
 * line. The child opens both, checks every byte, writes a new pattern,
 * checks that a handle of a process that is gone is refused (not mapped),
 * and closes them; the parent then checks the child's pattern in its own
 * memory. --no-ended leaves out the ended process's handle (the driver's
 * own handles of an ended process are undefined). For the fake GPU (tests/fake-ipc.sh) and a real
 * one (tests/gpu-ipc.sh). Prints "ipc_client: shared both ways" and exits 0, or one line naming
 * what failed and exits 1. */
#include <cuda.h>
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define LARGE_BYTES (12u << 20)
#define SMALL_BYTES 4096u

static bool check(const char *what, CUresult r)
{
    if (r == CUDA_SUCCESS)
        return true;
    const char *name = NULL;
    cuGetErrorName(r, &name);
    printf("error: %s returned %s\n", what, name ? name : "an unknown error");
    return false;
}

static unsigned pattern(unsigned i, unsigned salt)
{
    return i * 2654435761u + salt;
}

static bool verify(const char *who, const unsigned *p, size_t count, unsigned salt)
{
    for (size_t i = 0; i < count; i++)
        if (p[i] != pattern((unsigned)i, salt)) {
            printf("wrong: %s: word %zu is %u, not %u\n", who, i, p[i], pattern((unsigned)i, salt));
            return false;
        }
    return true;
}

static void to_hex(const CUipcMemHandle *h, char *out)
{
    for (size_t i = 0; i < sizeof h->reserved; i++)
        sprintf(out + 2 * i, "%02x", (unsigned char)h->reserved[i]);
}

static bool from_hex(const char *text, CUipcMemHandle *h)
{
    if (strlen(text) != 2 * sizeof h->reserved)
        return false;
    for (size_t i = 0; i < sizeof h->reserved; i++) {
        unsigned v;
        if (sscanf(text + 2 * i, "%2x", &v) != 1)
            return false;
        h->reserved[i] = (char)v;
    }
    return true;
}

static bool start_context(void)
{
    CUdevice dev;
    CUcontext ctx;
    return check("cuInit", cuInit(0)) && check("cuDeviceGet", cuDeviceGet(&dev, 0)) &&
           check("cuDevicePrimaryCtxRetain", cuDevicePrimaryCtxRetain(&ctx, dev)) &&
           check("cuCtxSetCurrent", cuCtxSetCurrent(ctx));
}

/* The child: both buffers through their handles, checked, rewritten. */
static int child(const char *large_hex, const char *small_hex, const char *gone_hex)
{
    CUipcMemHandle handles[3];
    if (!from_hex(large_hex, &handles[0]) || !from_hex(small_hex, &handles[1]) ||
        (strcmp(gone_hex, "-") != 0 && !from_hex(gone_hex, &handles[2]))) {
        printf("error: bad handle text\n");
        return 1;
    }
    if (!start_context())
        return 1;
    static const size_t bytes[2] = {LARGE_BYTES, SMALL_BYTES};
    unsigned *host = malloc(LARGE_BYTES);
    for (int b = 0; b < 2; b++) {
        CUdeviceptr p = 0;
        if (!check("cuIpcOpenMemHandle",
                   cuIpcOpenMemHandle(&p, handles[b], CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS)) ||
            !check("cuMemcpyDtoH", cuMemcpyDtoH(host, p, bytes[b])) ||
            !verify(b == 0 ? "child, large buffer" : "child, small buffer", host,
                    bytes[b] / sizeof *host, 7u + (unsigned)b))
            return 1;
        for (size_t i = 0; i < bytes[b] / sizeof *host; i++)
            host[i] = pattern((unsigned)i, 100u + (unsigned)b);
        if (!check("cuMemcpyHtoD", cuMemcpyHtoD(p, host, bytes[b])) ||
            !check("cuCtxSynchronize", cuCtxSynchronize()) ||
            !check("cuIpcCloseMemHandle", cuIpcCloseMemHandle(p)))
            return 1;
    }
    /* A handle whose process has ended: refused, nothing mapped ("-": not
     * checked, for the driver's own handles, whose fate the driver leaves
     * undefined). */
    if (strcmp(gone_hex, "-") == 0) {
        free(host);
        printf("child: both buffers read and rewritten\n");
        return 0;
    }
    CUdeviceptr gone = 0;
    CUresult r = cuIpcOpenMemHandle(&gone, handles[2], CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
    if (r == CUDA_SUCCESS) {
        printf("wrong: a handle of a process that has ended was opened\n");
        return 1;
    }
    free(host);
    printf("child: both buffers read and rewritten\n");
    return 0;
}

/* Runs `self` with `args` and waits for it; true when it exits 0. */
static bool run_child(const char *self, char *const args[])
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        execv(self, args);
        _exit(127);
    }
    int status = 0;
    return pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
           WEXITSTATUS(status) == 0;
}

/* A handle of a process that ends at once: its own small buffer's. */
static bool handle_of_ended_process(const char *self, char *hex)
{
    int fds[2];
    if (pipe(fds) != 0)
        return false;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        dup2(fds[1], 1);
        execl(self, self, "exporter", (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    ssize_t n = read(fds[0], hex, 2 * sizeof(CUipcMemHandle));
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    hex[n > 0 ? n : 0] = '\0';
    return n == (ssize_t)(2 * sizeof(CUipcMemHandle)) && WIFEXITED(status) &&
           WEXITSTATUS(status) == 0;
}

static int exporter(void)
{
    CUdeviceptr p;
    CUipcMemHandle h;
    char hex[2 * sizeof h + 1];
    if (!start_context() || !check("cuMemAlloc", cuMemAlloc(&p, SMALL_BYTES)) ||
        !check("cuIpcGetMemHandle", cuIpcGetMemHandle(&h, p)))
        return 1;
    to_hex(&h, hex);
    fputs(hex, stdout);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 5 && strcmp(argv[1], "child") == 0)
        return child(argv[2], argv[3], argv[4]);
    if (argc == 2 && strcmp(argv[1], "exporter") == 0)
        return exporter();
    char self[4096];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0)
        return 1;
    self[len] = '\0';

    char gone[2 * sizeof(CUipcMemHandle) + 1] = "-";
    bool check_gone = !(argc == 2 && strcmp(argv[1], "--no-ended") == 0);
    if (check_gone && !handle_of_ended_process(self, gone)) {
        printf("error: the exporting process failed\n");
        return 1;
    }
    if (!start_context())
        return 1;
    CUdeviceptr large, small;
    unsigned *host = malloc(LARGE_BYTES);
    if (!check("cuMemAlloc", cuMemAlloc(&large, LARGE_BYTES)) ||
        !check("cuMemAlloc", cuMemAlloc(&small, SMALL_BYTES)))
        return 1;
    for (size_t i = 0; i < LARGE_BYTES / sizeof *host; i++)
        host[i] = pattern((unsigned)i, 7u);
    if (!check("cuMemcpyHtoD", cuMemcpyHtoD(large, host, LARGE_BYTES)))
        return 1;
    for (size_t i = 0; i < SMALL_BYTES / sizeof *host; i++)
        host[i] = pattern((unsigned)i, 8u);
    if (!check("cuMemcpyHtoD", cuMemcpyHtoD(small, host, SMALL_BYTES)))
        return 1;
    CUipcMemHandle hl, hs;
    char large_hex[2 * sizeof hl + 1], small_hex[2 * sizeof hs + 1];
    if (!check("cuIpcGetMemHandle", cuIpcGetMemHandle(&hl, large)) ||
        !check("cuIpcGetMemHandle", cuIpcGetMemHandle(&hs, small)))
        return 1;
    to_hex(&hl, large_hex);
    to_hex(&hs, small_hex);
    /* Under mgpu: a buffer of its pool that another process may map stays
     * where it is (MGPU_MEMORY=driver gives the driver's allocations, which
     * mgpu never moves). */
    int (*migrate)(const void *, size_t, int) =
        (int (*)(const void *, size_t, int))dlsym(RTLD_DEFAULT, "mgpu_memory_migrate");
    const char *memory = getenv("MGPU_MEMORY");
    if (migrate != NULL && (memory == NULL || strcmp(memory, "driver") != 0) &&
        migrate((const void *)large, LARGE_BYTES, 1) != CUDA_ERROR_NOT_PERMITTED) {
        printf("wrong: mgpu_memory_migrate moved a buffer shared with another process\n");
        return 1;
    }
    char *args[] = {self, "child", large_hex, small_hex, gone, NULL};
    if (!run_child(self, args)) {
        printf("error: the child failed\n");
        return 1;
    }
    if (!check("cuMemcpyDtoH", cuMemcpyDtoH(host, large, LARGE_BYTES)) ||
        !verify("parent, large buffer", host, LARGE_BYTES / sizeof *host, 100u) ||
        !check("cuMemcpyDtoH", cuMemcpyDtoH(host, small, SMALL_BYTES)) ||
        !verify("parent, small buffer", host, SMALL_BYTES / sizeof *host, 101u))
        return 1;
    cuMemFree(large);
    cuMemFree(small);
    free(host);
    printf("ipc_client: shared both ways\n");
    return 0;
}

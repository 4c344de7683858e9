/* Owns sharing pool memory with other processes (see pool_ipc.h): the
 * handle's layout, the exporter's socket and the thread that serves it,
 * and the importer's mappings.
 *
 * The socket is in the abstract namespace (nothing to clean up), named
 * after the exporter's pid and a random word drawn at its first export,
 * both in the handle, so that a handle that outlives its process reaches
 * no other. It answers only processes of the same user (SO_PEERCRED).
 * One request per connection: the handle's pool id and address; the
 * answer: the layout and the pieces' file descriptors (SCM_RIGHTS). */
#include "memory/pool_ipc.h"

#include "base/detached_thread.h"
#include "partition/gpu_contexts.h"
#include "base/log.h"
#include "memory/memory_pool.h"
#include "base/real_driver.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define HANDLE_MAGIC "mgpuIPC1"
#define MAX_PIECES 4096
#define FDS_PER_MESSAGE 32

/* mgpu's handle, inside the driver's 64-byte CUipcMemHandle. */
struct pool_handle {
    char magic[8];
    int32_t pid;
    uint32_t reserved;
    uint64_t nonce;
    uint64_t id;    /* the allocation's pool id */
    uint64_t start; /* its address in the exporting process */
    uint64_t bytes;
};
_Static_assert(sizeof(struct pool_handle) <= sizeof(CUipcMemHandle), "a handle fits");

struct request {
    char magic[8];
    uint64_t id, start;
};

struct reply {
    int32_t result; /* a CUresult */
    uint32_t npieces;
    uint64_t map_base, map_bytes, start;
};

struct piece {
    uint64_t offset, bytes;
};

/* --- the socket's name and the file descriptors' passage -------------------- */

static socklen_t socket_address(struct sockaddr_un *a, int32_t pid, uint64_t nonce)
{
    memset(a, 0, sizeof *a);
    a->sun_family = AF_UNIX;
    int n = snprintf(a->sun_path + 1, sizeof a->sun_path - 1, "mgpu-ipc-%d-%016llx", (int)pid,
                     (unsigned long long)nonce);
    return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

static bool write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n > 0) {
        ssize_t w = send(fd, c, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return false;
        c += w;
        n -= (size_t)w;
    }
    return true;
}

static bool read_all(int fd, void *p, size_t n)
{
    char *c = p;
    while (n > 0) {
        ssize_t r = recv(fd, c, n, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return false;
        c += r;
        n -= (size_t)r;
    }
    return true;
}

static bool send_fds(int sock, const int *fds, int count)
{
    char byte = 0;
    struct iovec iov = {&byte, 1};
    union {
        struct cmsghdr header;
        char space[CMSG_SPACE(sizeof(int) * FDS_PER_MESSAGE)];
    } control;
    memset(&control, 0, sizeof control);
    struct msghdr m;
    memset(&m, 0, sizeof m);
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    m.msg_control = control.space;
    m.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)count);
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)count);
    memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)count);
    ssize_t sent;
    do
        sent = sendmsg(sock, &m, MSG_NOSIGNAL);
    while (sent < 0 && errno == EINTR);
    return sent == 1;
}

/* Receives `count` descriptors into fds; false (those received closed)
 * when fewer come. */
static bool receive_fds(int sock, int *fds, int count)
{
    char byte;
    struct iovec iov = {&byte, 1};
    union {
        struct cmsghdr header;
        char space[CMSG_SPACE(sizeof(int) * FDS_PER_MESSAGE)];
    } control;
    struct msghdr m;
    memset(&m, 0, sizeof m);
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    m.msg_control = control.space;
    m.msg_controllen = sizeof control.space;
    ssize_t got;
    do
        got = recvmsg(sock, &m, MSG_CMSG_CLOEXEC);
    while (got < 0 && errno == EINTR);
    struct cmsghdr *c = got == 1 ? CMSG_FIRSTHDR(&m) : NULL;
    int received = 0;
    if (c != NULL && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
        received = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
    if (received > 0)
        memcpy(fds, CMSG_DATA(c), sizeof(int) * (size_t)(received < count ? received : count));
    for (int i = count; i < received; i++) {
        int extra;
        memcpy(&extra, CMSG_DATA(c) + sizeof(int) * (size_t)i, sizeof extra);
        close(extra);
    }
    if (received < count) {
        for (int i = 0; i < received; i++)
            close(fds[i]);
        return false;
    }
    return true;
}

/* --- the exporter ------------------------------------------------------------ */

static pthread_once_t server_once = PTHREAD_ONCE_INIT;
static int server_socket = -1;
static uint64_t server_nonce;

/* One request on `conn`: the allocation's layout and descriptors. */
static void serve(int conn)
{
    struct ucred peer;
    socklen_t len = sizeof peer;
    struct request req;
    if (getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &peer, &len) != 0 || peer.uid != getuid() ||
        !read_all(conn, &req, sizeof req) || memcmp(req.magic, HANDLE_MAGIC, 8) != 0)
        return;
    static struct mgpu_pool_piece pieces[MAX_PIECES];
    static struct piece layout[MAX_PIECES];
    static int fds[MAX_PIECES];
    struct mgpu_pool_shared shared;
    struct reply reply = {CUDA_ERROR_INVALID_HANDLE, 0, 0, 0, 0};
    size_t n = mgpu_pool_share((CUdeviceptr)req.start, &shared, pieces, MAX_PIECES);
    if (n == 0 || shared.id != req.id || shared.start != req.start)
        n = 0; /* freed since, and the address given to another allocation */
    size_t exported = 0;
    reply.result = n > 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
    while (reply.result == CUDA_SUCCESS && exported < n) {
        int fd = -1;
        reply.result = mgpu_drv.cuMemExportToShareableHandle(
            &fd, pieces[exported].handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
        if (reply.result != CUDA_SUCCESS)
            break;
        fds[exported] = fd;
        layout[exported] = (struct piece){pieces[exported].offset, pieces[exported].bytes};
        exported++;
    }
    if (reply.result != CUDA_SUCCESS)
        n = 0;
    reply.npieces = (uint32_t)n;
    reply.map_base = shared.map_base;
    reply.map_bytes = shared.map_bytes;
    reply.start = shared.start;
    bool ok =
        write_all(conn, &reply, sizeof reply) && write_all(conn, layout, n * sizeof layout[0]);
    for (size_t i = 0; ok && i < n; i += FDS_PER_MESSAGE)
        ok = send_fds(conn, fds + i, (int)(n - i < FDS_PER_MESSAGE ? n - i : FDS_PER_MESSAGE));
    for (size_t i = 0; i < exported; i++)
        close(fds[i]);
}

static void *server_main(void *arg)
{
    (void)arg;
    for (;;) {
        int conn = accept4(server_socket, NULL, NULL, SOCK_CLOEXEC);
        if (conn < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            return NULL;
        }
        serve(conn);
        close(conn);
    }
}

static void start_server(void)
{
    int urandom = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (urandom < 0 || read(urandom, &server_nonce, sizeof server_nonce) != sizeof server_nonce)
        server_nonce = (uint64_t)getpid() * 0x9e3779b97f4a7c15ull ^ (uint64_t)time(NULL);
    if (urandom >= 0)
        close(urandom);
    struct sockaddr_un a;
    socklen_t len = socket_address(&a, getpid(), server_nonce);
    int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0 || bind(s, (struct sockaddr *)&a, len) != 0 || listen(s, 16) != 0) {
        mgpu_warn("pool memory cannot be shared with other processes: no socket (%s)",
                  strerror(errno));
        if (s >= 0)
            close(s);
        return;
    }
    server_socket = s;
    if (!mgpu_thread_start_detached(server_main, NULL)) {
        mgpu_warn("pool memory cannot be shared with other processes: no thread to serve it");
        close(s);
        server_socket = -1;
    }
}

CUresult mgpu_pool_ipc_export(CUipcMemHandle *handle, CUdeviceptr pointer)
{
    if (handle == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (mgpu_drv.cuMemExportToShareableHandle == NULL)
        return CUDA_ERROR_NOT_SUPPORTED;
    struct mgpu_pool_shared shared;
    /* Marks it shared (never moved again) and says that it can be. */
    size_t n = mgpu_pool_share(pointer, &shared, NULL, MAX_PIECES);
    if (n == 0)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_once(&server_once, start_server);
    if (server_socket < 0)
        return CUDA_ERROR_NOT_SUPPORTED;
    struct pool_handle h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, HANDLE_MAGIC, 8);
    h.pid = (int32_t)getpid();
    h.nonce = server_nonce;
    h.id = shared.id;
    h.start = shared.start;
    h.bytes = shared.bytes;
    memset(handle, 0, sizeof *handle);
    memcpy(handle, &h, sizeof h);
    mgpu_debug("IPC handle for the %llu-byte pool buffer at 0x%llx", (unsigned long long)h.bytes,
               (unsigned long long)h.start);
    return CUDA_SUCCESS;
}

bool mgpu_pool_ipc_is_ours(const CUipcMemHandle *handle)
{
    return handle != NULL && memcmp(handle->reserved, HANDLE_MAGIC, 8) == 0;
}

/* --- the importer --------------------------------------------------------------- */

struct import {
    CUdeviceptr base, pointer;
    size_t bytes;
    size_t count;
    CUmemGenericAllocationHandle *handles;
    uint64_t *offsets, *sizes;
};

static struct import *imports;
static size_t nimports, imports_capacity;
static pthread_mutex_t imports_lock = PTHREAD_MUTEX_INITIALIZER;

static void unmap_import(const struct import *m)
{
    for (size_t i = 0; i < m->count; i++) {
        mgpu_drv.cuMemUnmap(m->base + m->offsets[i], m->sizes[i]);
        mgpu_drv.cuMemRelease(m->handles[i]);
    }
    mgpu_drv.cuMemAddressFree(m->base, m->bytes);
    free(m->handles);
    free(m->offsets);
    free(m->sizes);
}

/* Read and write access for the devices of the run, or for the current
 * context's device outside a run. */
static CUresult grant(CUdeviceptr base, size_t bytes)
{
    CUmemAccessDesc desc[MGPU_MAX_GPUS];
    int count = 0;
    const struct mgpu_gpu_entries *e = mgpu_run_gpus();
    for (int g = 0; e != NULL && g < e->count; g++) {
        CUdevice dev;
        if (mgpu_drv.cuDeviceGet(&dev, e->device[g]) != CUDA_SUCCESS)
            return CUDA_ERROR_INVALID_DEVICE;
        bool seen = false;
        for (int i = 0; i < count; i++)
            seen |= desc[i].location.id == dev;
        if (!seen)
            desc[count++] = (CUmemAccessDesc){{CU_MEM_LOCATION_TYPE_DEVICE, dev},
                                              CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    }
    if (count == 0) {
        CUdevice dev;
        CUresult r = mgpu_drv.cuCtxGetDevice(&dev);
        if (r != CUDA_SUCCESS)
            return r;
        desc[count++] = (CUmemAccessDesc){{CU_MEM_LOCATION_TYPE_DEVICE, dev},
                                          CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    }
    return mgpu_drv.cuMemSetAccess(base, bytes, desc, (size_t)count);
}

/* The pieces from `sock` mapped at a new range; *m filled. */
static CUresult map_pieces(int sock, const struct reply *reply, struct import *m)
{
    size_t n = reply->npieces;
    m->bytes = reply->map_bytes;
    m->handles = calloc(n, sizeof *m->handles);
    m->offsets = calloc(n, sizeof *m->offsets);
    m->sizes = calloc(n, sizeof *m->sizes);
    struct piece *layout = calloc(n, sizeof *layout);
    int *fds = calloc(n, sizeof *fds);
    CUresult r = CUDA_ERROR_OUT_OF_MEMORY;
    size_t received = 0;
    if (m->handles == NULL || m->offsets == NULL || m->sizes == NULL || layout == NULL ||
        fds == NULL)
        goto out;
    r = CUDA_ERROR_INVALID_HANDLE;
    if (!read_all(sock, layout, n * sizeof *layout))
        goto out;
    for (; received < n; received += FDS_PER_MESSAGE) {
        int batch = (int)(n - received < FDS_PER_MESSAGE ? n - received : FDS_PER_MESSAGE);
        if (!receive_fds(sock, fds + received, batch))
            goto out;
    }
    r = mgpu_drv.cuMemAddressReserve(&m->base, m->bytes, 0, 0, 0);
    for (size_t i = 0; r == CUDA_SUCCESS && i < n; i++) {
        r = mgpu_drv.cuMemImportFromShareableHandle(&m->handles[i], (void *)(intptr_t)fds[i],
                                                    CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
        if (r != CUDA_SUCCESS)
            break;
        r = mgpu_drv.cuMemMap(m->base + layout[i].offset, layout[i].bytes, 0, m->handles[i], 0);
        if (r != CUDA_SUCCESS) {
            mgpu_drv.cuMemRelease(m->handles[i]);
            break;
        }
        m->offsets[i] = layout[i].offset;
        m->sizes[i] = layout[i].bytes;
        m->count++;
    }
    if (r == CUDA_SUCCESS)
        r = grant(m->base, m->bytes);
    if (r != CUDA_SUCCESS && m->base != 0) {
        unmap_import(m);
        m->handles = NULL;
        m->offsets = m->sizes = NULL;
    }
out:
    for (size_t i = 0; i < (received < n ? received : n); i++)
        close(fds[i]);
    free(layout);
    free(fds);
    if (r != CUDA_SUCCESS) {
        free(m->handles);
        free(m->offsets);
        free(m->sizes);
    }
    return r;
}

static bool remember(const struct import *m)
{
    pthread_mutex_lock(&imports_lock);
    if (nimports == imports_capacity) {
        size_t capacity = imports_capacity ? 2 * imports_capacity : 8;
        struct import *grown = realloc(imports, capacity * sizeof *grown);
        if (grown == NULL) {
            pthread_mutex_unlock(&imports_lock);
            return false;
        }
        imports = grown;
        imports_capacity = capacity;
    }
    imports[nimports++] = *m;
    pthread_mutex_unlock(&imports_lock);
    return true;
}

CUresult mgpu_pool_ipc_import(CUdeviceptr *pointer, const CUipcMemHandle *handle)
{
    if (pointer == NULL || !mgpu_pool_ipc_is_ours(handle))
        return CUDA_ERROR_INVALID_VALUE;
    if (mgpu_drv.cuMemImportFromShareableHandle == NULL)
        return CUDA_ERROR_NOT_SUPPORTED;
    struct pool_handle h;
    memcpy(&h, handle, sizeof h);
    if (h.pid == (int32_t)getpid())
        return CUDA_ERROR_INVALID_CONTEXT; /* the driver refuses a process's own handle too */
    struct sockaddr_un a;
    socklen_t len = socket_address(&a, h.pid, h.nonce);
    int sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (sock < 0)
        return CUDA_ERROR_OPERATING_SYSTEM;
    struct request req;
    memcpy(req.magic, HANDLE_MAGIC, 8);
    req.id = h.id;
    req.start = h.start;
    struct reply reply;
    CUresult r = CUDA_ERROR_INVALID_HANDLE; /* the exporter is gone, or freed the buffer */
    struct import m;
    memset(&m, 0, sizeof m);
    if (connect(sock, (struct sockaddr *)&a, len) == 0 && write_all(sock, &req, sizeof req) &&
        read_all(sock, &reply, sizeof reply)) {
        r = (CUresult)reply.result;
        if (r == CUDA_SUCCESS && (reply.npieces == 0 || reply.npieces > MAX_PIECES))
            r = CUDA_ERROR_INVALID_HANDLE;
        if (r == CUDA_SUCCESS)
            r = map_pieces(sock, &reply, &m);
    }
    close(sock);
    if (r != CUDA_SUCCESS)
        return r;
    m.pointer = m.base + (reply.start - reply.map_base);
    if (!remember(&m)) {
        unmap_import(&m);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *pointer = m.pointer;
    mgpu_debug("IPC: the %llu-byte buffer of process %d mapped at 0x%llx",
               (unsigned long long)h.bytes, (int)h.pid, (unsigned long long)m.pointer);
    return CUDA_SUCCESS;
}

bool mgpu_pool_ipc_close(CUdeviceptr pointer, CUresult *result)
{
    pthread_mutex_lock(&imports_lock);
    for (size_t i = 0; i < nimports; i++) {
        if (imports[i].pointer != pointer)
            continue;
        struct import m = imports[i];
        imports[i] = imports[--nimports];
        pthread_mutex_unlock(&imports_lock);
        unmap_import(&m);
        *result = CUDA_SUCCESS;
        return true;
    }
    pthread_mutex_unlock(&imports_lock);
    return false;
}
